//! One fuzz input = `[u32 BE index length][index object][data object]`.
//!
//! Lean: reads the data object once with the index and once without, then
//! (when the index parses) each indexed block from its own offset. Checks the
//! reader's contract: never a panic, whatever the bytes (absurd lengths and
//! counts included); every row is either a clean entry (data, no error) or
//! carries an error.
#![no_main]

use arrow_array::{Array, BinaryArray, RecordBatch, StringArray};
use libfuzzer_sys::fuzz_target;
use pulsar_entries_core::offload::{read_ledger, read_object, OffloadIndex, ReadOptions};

fn check(batches: &[RecordBatch]) {
    for b in batches {
        let data = b.column(2).as_any().downcast_ref::<BinaryArray>().unwrap();
        let error = b.column(3).as_any().downcast_ref::<StringArray>().unwrap();
        for i in 0..b.num_rows() {
            assert!(
                !error.is_null(i) || !data.is_null(i),
                "row {i} has neither data nor an error"
            );
        }
    }
}

fuzz_target!(|input: &[u8]| {
    if input.len() < 4 {
        return;
    }
    let n = (u32::from_be_bytes(input[..4].try_into().unwrap()) as usize).min(input.len() - 4);
    let (index, data) = input[4..].split_at(n);
    let opts = ReadOptions {
        ledger_id: Some(7),
        ranges: None,
    };
    check(&read_ledger(data, Some(index), &opts));
    check(&read_ledger(data, None, &opts));
    if let Ok(idx) = OffloadIndex::parse(index) {
        for b in idx.blocks(Some(7)).into_iter().take(16) {
            let start = (b.offset as usize).min(data.len());
            let end = start.saturating_add(b.length as usize).min(data.len());
            check(&read_object(&data[start..end], b.offset, Some(&idx), &opts));
        }
    }
});
