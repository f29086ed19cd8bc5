//! One fuzz input = a topic's worth of stored entries, each `[u16 BE length]
//! [entry bytes]`, in order (chunked messages spread over several of them).
//!
//! Lean: one long-lived decoder turns the entries into message rows; a fresh
//! `Reassembler` (its state is per stream) reassembles them. Checks: never a
//! panic; push and finish never fail on decoder output; every output batch has
//! the reassembler's schema; each `status` is one of the documented values.
#![no_main]

use std::cell::RefCell;

use arrow_array::{RecordBatch, StringArray};
use libfuzzer_sys::fuzz_target;
use pulsar_entries_core::chunks::{Reassembler, ReassemblyOptions};
use pulsar_entries_core::{message_schema, DecodeOptions, Decoder, EntryId};

const LIMIT: usize = 1 << 20;

thread_local! {
    static DECODER: RefCell<Decoder> = RefCell::new(Decoder::new(DecodeOptions {
        max_uncompressed_size: LIMIT,
        ..DecodeOptions::default()
    }));
}

fuzz_target!(|input: &[u8]| {
    let batches = DECODER.with(|d| {
        let d = &mut *d.borrow_mut();
        let mut rest = input;
        let mut entry_id = 0;
        while rest.len() >= 2 {
            let n = (u16::from_be_bytes([rest[0], rest[1]]) as usize).min(rest.len() - 2);
            d.decode_entry(
                EntryId {
                    ledger_id: 9,
                    entry_id,
                    partition: (entry_id % 2) as i32,
                },
                Some(&rest[2..2 + n]),
            );
            rest = &rest[2 + n..];
            entry_id += 1;
        }
        d.finish()
    });
    let opts = ReassemblyOptions {
        max_pending: Some(4),
        expire_after_ms: Some(1000),
        max_message_size: LIMIT,
    };
    let mut r = Reassembler::new(message_schema(), opts).expect("the message schema is accepted");
    let mut out: Vec<RecordBatch> = Vec::new();
    for b in &batches {
        out.extend(r.push(b).expect("push accepts decoder output"));
    }
    out.extend(r.finish().expect("finish"));
    let schema = r.schema();
    for b in &out {
        assert_eq!(b.schema().fields(), schema.fields());
        if let Some(status) = b
            .column_by_name("status")
            .and_then(|c| c.as_any().downcast_ref::<StringArray>().cloned())
        {
            for s in status.iter().flatten() {
                assert!(
                    ["complete", "incomplete", "expired", "evicted", "duplicate"].contains(&s),
                    "unknown status {s}"
                );
            }
        }
    }
});
