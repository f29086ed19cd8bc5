//! Unit tests of the distributed strategic compaction stages.

use std::sync::Arc;

use arrow_array::{ArrayRef, RecordBatch};

use super::fold::*;
use super::partition::*;
use super::rows::*;
use crate::compaction::strategic::StrategicCompactor;
use crate::compaction::strategy::{FirstWins, LatestWins};
use crate::compaction::{CompactOptions, Order, Position};
use arrow_array::{BinaryArray, Int64Array};

#[test]
fn row_positions_round_trip() {
    let ps = vec![Position::new(1, 2, -1), Position::new(-1, i64::MAX, -1)];
    assert_eq!(unpack_positions(&pack_positions(&ps)).unwrap(), ps);
    assert!(unpack_positions(&[0; 15]).is_err());
}

#[test]
fn event_time_order_is_refused() {
    let opts = CompactOptions {
        order: Order::EventTime,
        ..Default::default()
    };
    assert!(PartitionPass::new(opts).is_err());
    assert!(StrategicFold::new(opts, LatestWins).is_err());
    // The in-process compactor refuses it too.
    assert!(StrategicCompactor::new(opts, FirstWins).is_err());
}

#[test]
fn null_data_is_a_whole_plan() {
    let batch = RecordBatch::try_from_iter(vec![
        ("ledger_id", Arc::new(Int64Array::from(vec![1])) as ArrayRef),
        ("entry_id", Arc::new(Int64Array::from(vec![0])) as ArrayRef),
        (
            "data",
            Arc::new(BinaryArray::from(vec![None::<&[u8]>])) as ArrayRef,
        ),
    ])
    .unwrap();
    let mut pass = PartitionPass::new(CompactOptions::default()).unwrap();
    let rows = pass.push(&batch).unwrap();
    let cols = RowColumns::new(&rows).unwrap();
    assert_eq!(rows.num_rows(), 1);
    assert_eq!(cols.kind(0), KIND_PLAN);
    assert_eq!(cols.note(0), Some("entry data is null"));
}
