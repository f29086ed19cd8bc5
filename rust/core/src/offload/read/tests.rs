//! Unit tests of the offload object readers.

use super::*;
use crate::offload::block::{push_padding, BlockKind, BLOCK_HEADER_SIZE};
use arrow_array::cast::AsArray;
use arrow_array::types::Int64Type;
use arrow_array::Array;

/// `(ledger, entry, data, error)` rows of a read.
type Row = (i64, i64, Option<Vec<u8>>, Option<String>);

fn rows(batches: &[RecordBatch]) -> Vec<Row> {
    let mut out = Vec::new();
    for b in batches {
        let l = b.column(0).as_primitive::<Int64Type>();
        let e = b.column(1).as_primitive::<Int64Type>();
        let d = b.column(2).as_binary::<i32>();
        let x = b.column(3).as_string::<i32>();
        for i in 0..b.num_rows() {
            out.push((
                l.value(i),
                e.value(i),
                (!d.is_null(i)).then(|| d.value(i).to_vec()),
                (!x.is_null(i)).then(|| x.value(i).to_string()),
            ));
        }
    }
    out
}

/// One ledger block with the given entries and total size.
fn block(first: i64, entries: &[&[u8]], size: usize) -> Vec<u8> {
    let mut b = BlockHeader::new(BlockKind::Ledger, size as i64, first, 0)
        .to_bytes()
        .to_vec();
    for (i, e) in entries.iter().enumerate() {
        b.extend_from_slice(&(e.len() as i32).to_be_bytes());
        b.extend_from_slice(&(first + i as i64).to_be_bytes());
        b.extend_from_slice(e);
    }
    let pad = size - b.len();
    push_padding(&mut b, pad);
    b
}

fn ok(ledger: i64, entry: i64, data: &[u8]) -> Row {
    (ledger, entry, Some(data.to_vec()), None)
}

fn read(data: &[u8]) -> Vec<Row> {
    rows(&read_object(
        data,
        0,
        None,
        &ReadOptions {
            ledger_id: Some(5),
            ranges: None,
        },
    ))
}

#[test]
fn reads_blocks_entries_and_padding() {
    let mut obj = block(0, &[b"a", b"bc", b""], 200);
    obj.extend(block(3, &[b"def"], 150));
    assert_eq!(
        read(&obj),
        [
            ok(5, 0, b"a"),
            ok(5, 1, b"bc"),
            ok(5, 2, b""),
            ok(5, 3, b"def")
        ]
    );
}

#[test]
fn exactly_full_block_and_short_padding_are_fine() {
    // 128 + 12 + 4 = 144: no padding at all; then 1..3 padding bytes.
    for pad in 0..4 {
        let obj = block(0, &[b"abcd"], 144 + pad);
        assert_eq!(read(&obj), [ok(5, 0, b"abcd")], "pad {pad}");
    }
}

#[test]
fn entry_running_past_the_block_is_an_error_row_and_the_next_block_still_reads() {
    let mut obj = block(0, &[b"hello", b"world"], 200);
    // Second entry's length now claims 1000 bytes.
    let second = BLOCK_HEADER_SIZE + ENTRY_HEADER_SIZE + 5;
    obj[second..second + 4].copy_from_slice(&1000i32.to_be_bytes());
    obj.extend(block(2, &[b"next"], 160));
    let r = read(&obj);
    assert_eq!(r[0], ok(5, 0, b"hello"));
    assert_eq!(r[1].1, 1);
    assert_eq!(r[1].2, None);
    assert_eq!(
            r[1].3.as_deref().unwrap(),
            "entry 1 at data-object offset 145: length 1000 runs past the end of the block at data-object offset 0 (43 bytes left); the rest of the block is unreadable"
        );
    assert_eq!(r[2], ok(5, 2, b"next"));
    assert_eq!(r.len(), 3);
}

#[test]
fn wrong_entry_id_keeps_the_bytes_with_an_error() {
    let mut obj = block(10, &[b"x", b"y"], 200);
    let second_id = BLOCK_HEADER_SIZE + ENTRY_HEADER_SIZE + 1 + 4;
    obj[second_id..second_id + 8].copy_from_slice(&99i64.to_be_bytes());
    let r = read(&obj);
    assert_eq!(r[0], ok(5, 10, b"x"));
    assert_eq!((r[1].1, r[1].2.as_deref()), (99, Some(&b"y"[..])));
    assert!(r[1].3.as_deref().unwrap().contains("has id 99, but its position (entry 1 of the block at data-object offset 0, which starts at entry 10) makes it 11"));
}

#[test]
fn damaged_header_resyncs_on_the_next_magic_without_an_index() {
    let mut obj = block(0, &[b"lost"], 160);
    obj.extend(block(1, &[b"kept"], 160));
    obj[0] ^= 0xFF;
    let r = read(&obj);
    assert_eq!(r.len(), 2);
    assert!(r[0]
        .3
        .as_deref()
        .unwrap()
        .starts_with("bad block header magic at data-object offset 0: 0x04dbabcb"));
    assert!(r[0]
        .3
        .as_deref()
        .unwrap()
        .ends_with("skipped 160 bytes to the next block at data-object offset 160"));
    assert_eq!(r[1], ok(5, 1, b"kept"));
}

#[test]
fn truncation_anywhere_never_panics_and_reports() {
    let mut obj = block(0, &[b"abc", b"defgh"], 180);
    obj.extend(block(2, &[b"ij"], 150));
    for cut in 0..obj.len() {
        let r = read(&obj[..cut]);
        // Every row is either a clean entry or says what failed.
        for row in &r {
            assert!(row.3.is_some() || row.2.is_some(), "cut {cut}: {row:?}");
        }
        // A cut at a block boundary looks like a shorter object without the index
        // (the index-based tests cover that case).
        if cut > 0 && cut < obj.len() && cut != 180 {
            assert!(
                r.iter().any(|row| row.3.is_some()),
                "cut {cut} unreported: {r:?}"
            );
        }
    }
}

#[test]
fn corrupt_padding_is_reported() {
    let mut obj = block(0, &[b"abc"], 200);
    obj[190] = 0x00;
    let r = read(&obj);
    assert_eq!(r[0], ok(5, 0, b"abc"));
    assert!(r[1]
        .3
        .as_deref()
        .unwrap()
        .contains("are not FE DC DE AD padding, first difference at data-object offset 190"));
}

#[test]
fn ranges_filter_and_report_missing_runs() {
    let mut obj = block(0, &[b"a", b"b", b"c"], 200);
    obj.extend(block(5, &[b"f"], 150));
    let r = rows(&read_object(
        &obj,
        0,
        None,
        &ReadOptions {
            ledger_id: Some(5),
            ranges: Some(vec![EntryRange {
                ledger_id: 5,
                first_entry_id: 1,
                last_entry_id: 7,
            }]),
        },
    ));
    assert_eq!(r[0], ok(5, 1, b"b"));
    assert_eq!(r[1], ok(5, 2, b"c"));
    assert_eq!(r[2], ok(5, 5, b"f"));
    assert_eq!(r[3].1, 3);
    assert!(r[3]
        .3
        .as_deref()
        .unwrap()
        .starts_with("entries 3..=4 (2 entries) of ledger 5 are missing"));
    assert_eq!(r[4].1, 6);
    assert!(r[4]
        .3
        .as_deref()
        .unwrap()
        .starts_with("entries 6..=7 (2 entries)"));
    assert_eq!(r.len(), 5);
}

#[test]
fn huge_ranges_report_in_one_row() {
    let r = rows(&read_object(
        &[],
        0,
        None,
        &ReadOptions {
            ledger_id: Some(1),
            ranges: Some(vec![EntryRange {
                ledger_id: 1,
                first_entry_id: 0,
                last_entry_id: i64::MAX,
            }]),
        },
    ));
    assert_eq!(r.len(), 1);
    assert!(r[0]
        .3
        .as_deref()
        .unwrap()
        .contains("(9223372036854775808 entries)"));
}
