//! One fuzz input = a KoP `entry.format=kafka` payload: a Kafka MemoryRecords
//! buffer (v2 record batches back to back), as the Kafka processor reads it.
//!
//! Lean: the batch split, the records-section decompression (bounded to
//! 1 MiB) and the record parse, with the decompression buffer reused across inputs.
//! Checks: never a panic; every batch lies inside the payload, in order; a
//! decompressed section never exceeds the limit; parsed records borrow from
//! that section and a successful parse yields exactly `records_count` records.
#![no_main]

use std::cell::RefCell;

use libfuzzer_sys::fuzz_target;
use pulsar_entries_core::processor::kafka::codec::{decompress, KafkaCodec};
use pulsar_entries_core::processor::kafka::records::{
    control_type, parse_records, split_batches, LOG_OVERHEAD,
};

const LIMIT: usize = 1 << 20;

thread_local! {
    static OUT: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

fuzz_target!(|payload: &[u8]| {
    // Bit 0 of the last byte picks CRC verification, so both paths run
    // without a second split of the same bytes.
    let verify = payload.last().is_some_and(|b| b & 1 == 1);
    let Ok(batches) = split_batches(payload, verify) else {
        return;
    };
    let mut end = 0;
    OUT.with(|out| {
        let out = &mut *out.borrow_mut();
        for b in &batches {
            assert!(b.position >= end, "batches overlap");
            let start = b.records.as_ptr() as usize - payload.as_ptr() as usize;
            assert!(start + b.records.len() <= payload.len());
            end = start + b.records.len();
            assert!(end >= b.position + LOG_OVERHEAD);
            let Some(codec) = KafkaCodec::from_attributes(b.attributes) else {
                continue;
            };
            if decompress(codec, b.records, LIMIT, out).is_err() {
                continue;
            }
            assert!(out.len() <= LIMIT);
            let mut records = Vec::new();
            if parse_records(out, b.records_count, &mut records).is_ok() {
                assert_eq!(records.len(), b.records_count as usize);
                let (lo, hi) = (out.as_ptr() as usize, out.as_ptr() as usize + out.len());
                for r in &records {
                    for part in [r.key, r.value].into_iter().flatten() {
                        let p = part.as_ptr() as usize;
                        assert!(p >= lo && p + part.len() <= hi);
                    }
                    if b.is_control() {
                        let _ = control_type(r.key);
                    }
                }
            }
        }
    });
});
