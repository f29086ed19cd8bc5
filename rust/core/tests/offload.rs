//! Offload objects end to end: writer → reader round trips (property tests),
//! block-range reads as a Spark split does them, and damage of every kind
//! reported without losing track of any entry.

use arrow_array::cast::AsArray;
use arrow_array::types::Int64Type;
use arrow_array::{Array, RecordBatch};
use proptest::prelude::*;
use pulsar_entries_core::offload::{
    read_ledger, read_object, write_ledger, write_streaming, EntryRange, LedgerMetadataSpec,
    OffloadIndex, ReadOptions, StreamingLedger,
};

#[derive(Debug, Clone, PartialEq)]
struct Row {
    ledger: i64,
    entry: i64,
    data: Option<Vec<u8>>,
    error: Option<String>,
}

fn rows(batches: &[RecordBatch]) -> Vec<Row> {
    let mut out = Vec::new();
    for b in batches {
        let l = b.column(0).as_primitive::<Int64Type>();
        let e = b.column(1).as_primitive::<Int64Type>();
        let d = b.column(2).as_binary::<i32>();
        let x = b.column(3).as_string::<i32>();
        for i in 0..b.num_rows() {
            out.push(Row {
                ledger: l.value(i),
                entry: e.value(i),
                data: (!d.is_null(i)).then(|| d.value(i).to_vec()),
                error: (!x.is_null(i)).then(|| x.value(i).to_string()),
            });
        }
    }
    out
}

fn meta() -> LedgerMetadataSpec {
    LedgerMetadataSpec::for_managed_ledger("public/default/persistent/t", 1_700_000_000_000)
}

fn entries(sizes: &[usize], seed: u8) -> Vec<Vec<u8>> {
    sizes
        .iter()
        .enumerate()
        .map(|(i, &n)| {
            (0..n)
                .map(|j| (i as u8).wrapping_mul(31) ^ (j as u8) ^ seed)
                .collect()
        })
        .collect()
}

fn write(ledger: i64, data: &[Vec<u8>], block: usize) -> (Vec<u8>, Vec<u8>) {
    let refs: Vec<&[u8]> = data.iter().map(Vec::as_slice).collect();
    let mut out = Vec::new();
    let w = write_ledger(&mut out, ledger, &refs, block, &meta()).unwrap();
    assert_eq!(out.len() as u64, w.data_length);
    (out, w.index)
}

fn opts(ledger: i64) -> ReadOptions {
    ReadOptions {
        ledger_id: Some(ledger),
        ranges: None,
    }
}

fn clean(ledger: i64, data: &[Vec<u8>]) -> Vec<Row> {
    data.iter()
        .enumerate()
        .map(|(i, d)| Row {
            ledger,
            entry: i as i64,
            data: Some(d.clone()),
            error: None,
        })
        .collect()
}

/// Every entry id is either a row of its own or inside a reported missing run.
fn accounted(rows: &[Row], ledger: i64, n: i64) {
    for id in 0..n {
        let own = rows.iter().any(|r| r.ledger == ledger && r.entry == id);
        let in_run = rows.iter().any(|r| {
            let Some(e) = &r.error else { return false };
            let Some(rest) = e.strip_prefix("entries ") else {
                return false;
            };
            let range = rest.split(' ').next().unwrap();
            let (a, b) = range.split_once("..=").unwrap();
            let (a, b): (i64, i64) = (a.parse().unwrap(), b.parse().unwrap());
            r.ledger == ledger && (a..=b).contains(&id)
        });
        assert!(own || in_run, "entry {id} unaccounted for in {rows:#?}");
    }
}

#[test]
fn truncation_at_a_block_boundary_is_caught_by_the_index() {
    let data = entries(&[100; 20], 1);
    let (obj, index) = write(7, &data, 600);
    let r = rows(&read_ledger(&obj[..1200], Some(&index), &opts(7)));
    assert_eq!(&r[..8], &clean(7, &data)[..8]);
    assert_eq!(r.len(), 9);
    assert_eq!(r[8].entry, 8);
    assert_eq!(
        r[8].error.as_deref().unwrap(),
        "entries 8..=19 (12 entries) of ledger 7 are missing from the data object: the index places them in the blocks read, none holds them"
    );
}

#[test]
fn damaged_header_resyncs_through_the_index() {
    let data = entries(&[100; 20], 2);
    let (mut obj, index) = write(7, &data, 600);
    obj[600..604].copy_from_slice(&[0, 0, 0, 0]); // second block's magic
    let r = rows(&read_ledger(&obj, Some(&index), &opts(7)));
    assert!(r[4]
        .error
        .as_deref()
        .unwrap()
        .starts_with("bad block header magic at data-object offset 600: 0x00000000"));
    assert!(r[4]
        .error
        .as_deref()
        .unwrap()
        .ends_with("skipped 600 bytes to the next block at data-object offset 1200"));
    let ok: Vec<_> = r.iter().filter(|r| r.error.is_none()).cloned().collect();
    let mut want = clean(7, &data);
    want.drain(4..8);
    assert_eq!(ok, want);
    let last = r.last().unwrap();
    assert_eq!(last.entry, 4);
    assert!(last
        .error
        .as_deref()
        .unwrap()
        .starts_with("entries 4..=7 (4 entries) of ledger 7 are missing"));
}

#[test]
fn index_disagreeing_with_a_header_is_reported() {
    let data = entries(&[100; 8], 3);
    let (mut obj, index) = write(7, &data, 600);
    obj[600 + 20..600 + 28].copy_from_slice(&5i64.to_be_bytes()); // header first entry 4 -> 5
    let r = rows(&read_ledger(&obj, Some(&index), &opts(7)));
    let errors: Vec<_> = r.iter().filter_map(|r| r.error.as_deref()).collect();
    assert!(errors
        .contains(&"block at data-object offset 600: header says first entry 5, index says 4"));
    // The entries keep their stored ids, flagged: position says 5.., stored says 4..
    assert!(errors
        .iter()
        .any(|e| e.contains("has id 4, but its position (entry 0 of the block at data-object offset 600, which starts at entry 5) makes it 5")));
}

#[test]
fn unreadable_index_falls_back_to_the_headers() {
    let data = entries(&[10, 20, 30], 4);
    let (obj, mut index) = write(3, &data, 1 << 20);
    index[0] = 0;
    let r = rows(&read_ledger(&obj, Some(&index), &opts(3)));
    assert!(r[0]
        .error
        .as_deref()
        .unwrap()
        .starts_with("index object unreadable (bad index magic at index-object offset 0"));
    assert_eq!(&r[1..], clean(3, &data).as_slice());
}

#[test]
fn block_listing_splits_the_object() {
    let data = entries(&(0..50).map(|i| (i * 37) % 300).collect::<Vec<_>>(), 5);
    let (obj, index) = write(11, &data, 1000);
    let idx = OffloadIndex::parse(&index).unwrap();
    let blocks = idx.blocks(Some(11));
    assert!(blocks.len() > 5);
    assert_eq!(
        blocks.iter().map(|b| b.length).sum::<u64>(),
        obj.len() as u64
    );
    // Read block pairs on their own, as separate splits.
    let mut all = Vec::new();
    for pair in blocks.chunks(2) {
        let start = pair[0].offset as usize;
        let end = (pair.last().unwrap().offset + pair.last().unwrap().length) as usize;
        let ranges: Vec<EntryRange> = pair
            .iter()
            .map(|b| EntryRange {
                ledger_id: 11,
                first_entry_id: b.first_entry_id,
                last_entry_id: b.last_entry_id.unwrap(),
            })
            .collect();
        let split = rows(&read_object(
            &obj[start..end],
            start as u64,
            Some(&idx),
            &ReadOptions {
                ledger_id: Some(11),
                ranges: Some(ranges),
            },
        ));
        // The same with ranges derived from the index for the slice.
        let derived = rows(&read_object(
            &obj[start..end],
            start as u64,
            Some(&idx),
            &opts(11),
        ));
        assert_eq!(split, derived);
        all.extend(split);
    }
    assert_eq!(all, clean(11, &data));
}

#[test]
fn pulsars_empty_block_after_an_oversized_entry_is_reported() {
    // What Pulsar's offloader writes when entry 2 does not fit a 1000-byte block:
    // block 0 (entries 0, 1), then an empty block for entry 2 that the index lists but the
    // data object length leaves out, and nothing after it.
    let data = entries(&[100, 100, 2000, 5], 6);
    let (good, _) = write(1, &data[..2], 1000);
    let mut obj = good.clone();
    let size = good.len();
    // Block sized by calculateBlockSize for the remaining entries, capped at 1000: empty.
    let mut empty = pulsar_entries_core::offload::BlockHeader::new(
        pulsar_entries_core::offload::BlockKind::Ledger,
        1000,
        2,
        0,
    )
    .to_bytes()
    .to_vec();
    pulsar_entries_core::offload::block::push_padding(&mut empty, 1000 - 128);
    obj.extend(&empty);
    // Its index: two entries, data object length = first block only, lastEntryId 3.
    let refs: Vec<&[u8]> = data.iter().map(Vec::as_slice).collect();
    let mut idx = OffloadIndex::parse(&write(1, &data[..2], 1000).1).unwrap();
    idx.ledgers[0]
        .entries
        .push(pulsar_entries_core::offload::index::IndexEntry {
            first_entry_id: 2,
            part_id: 2,
            offset: size as i64,
        });
    if let pulsar_entries_core::offload::LedgerMeta::BookKeeper(m) = &mut idx.ledgers[0].metadata {
        m.last_entry_id = Some(3);
        m.length = refs.iter().map(|e| e.len() as i64).sum();
    }
    let r = rows(&read_ledger(&obj, Some(&idx.to_bytes()), &opts(1)));
    assert_eq!(&r[..2], clean(1, &data[..2]).as_slice());
    assert_eq!(r.len(), 3, "{r:#?}");
    assert_eq!(r[2].entry, 2);
    assert!(r[2]
        .error
        .as_deref()
        .unwrap()
        .starts_with("entries 2..=3 (2 entries) of ledger 1 are missing"));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn ledger_round_trip(
        sizes in prop::collection::vec(0usize..1500, 1..60),
        extra in 0usize..3000,
        seed in any::<u8>(),
    ) {
        let block = sizes.iter().max().unwrap() + 140 + extra;
        let data = entries(&sizes, seed);
        let (obj, index) = write(99, &data, block);
        let got = rows(&read_ledger(&obj, Some(&index), &opts(99)));
        prop_assert_eq!(&got, &clean(99, &data));
        // And without the index, from the headers alone.
        let got = rows(&read_ledger(&obj, None, &opts(99)));
        prop_assert_eq!(&got, &clean(99, &data));
        // Every block read alone gives exactly its entries.
        let idx = OffloadIndex::parse(&index).unwrap();
        let mut all = Vec::new();
        for b in idx.blocks(Some(99)) {
            let slice = &obj[b.offset as usize..(b.offset + b.length) as usize];
            all.extend(rows(&read_object(slice, b.offset, Some(&idx), &opts(99))));
        }
        prop_assert_eq!(&all, &clean(99, &data));
    }

    #[test]
    fn streaming_round_trip(
        ledgers in prop::collection::vec((0i64..1000, prop::collection::vec(0usize..800, 1..30)), 1..4),
        min_block in 0usize..4000,
        seed in any::<u8>(),
    ) {
        let mut ids = std::collections::BTreeSet::new();
        let ledgers: Vec<_> = ledgers.into_iter().filter(|(id, _)| ids.insert(*id)).collect();
        let data: Vec<(i64, i64, Vec<Vec<u8>>)> = ledgers
            .iter()
            .map(|(id, sizes)| (*id * 1000 + 3, *id, entries(sizes, seed)))
            .collect();
        let input: Vec<StreamingLedger> = data
            .iter()
            .map(|(l, first, e)| StreamingLedger {
                ledger_id: *l,
                first_entry_id: *first,
                entries: e.iter().map(Vec::as_slice).collect(),
            })
            .collect();
        let mut obj = Vec::new();
        let w = write_streaming(&mut obj, &input, min_block, 1).unwrap();
        let want: Vec<Row> = data
            .iter()
            .flat_map(|(l, first, e)| {
                e.iter().enumerate().map(move |(i, d)| Row {
                    ledger: *l,
                    entry: first + i as i64,
                    data: Some(d.clone()),
                    error: None,
                })
            })
            .collect();
        let no_ledger = ReadOptions::default();
        prop_assert_eq!(&rows(&read_ledger(&obj, Some(&w.index), &no_ledger)), &want);
        prop_assert_eq!(&rows(&read_ledger(&obj, None, &no_ledger)), &want);
    }

    #[test]
    fn damage_never_panics_and_every_entry_is_accounted_for(
        sizes in prop::collection::vec(0usize..300, 1..25),
        flips in prop::collection::vec((any::<prop::sample::Index>(), 1u8..=255), 1..6),
        cut in any::<prop::sample::Index>(),
        truncate in any::<bool>(),
    ) {
        let data = entries(&sizes, 9);
        let (mut obj, index) = write(5, &data, 800);
        for (at, x) in flips {
            let i = at.index(obj.len());
            obj[i] ^= x;
        }
        if truncate {
            obj.truncate(cut.index(obj.len()));
        }
        let got = rows(&read_ledger(&obj, Some(&index), &opts(5)));
        accounted(&got, 5, data.len() as i64);
        let _ = rows(&read_ledger(&obj, None, &opts(5)));
    }
}
