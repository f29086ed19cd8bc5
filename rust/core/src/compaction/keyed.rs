//! Keyed messages with values, in topic order, for a table view: the Arrow
//! side of [`super::messages::MessageReader`].

use std::sync::Arc;

use arrow_array::builder::{BinaryBuilder, Int32Builder, Int64Builder, StringBuilder};
use arrow_array::{ArrayRef, RecordBatch};
use arrow_schema::{DataType, Field, Schema, SchemaRef};

use super::messages::{MessageReader, Outcome};
use super::CompactOptions;
use crate::decode::entries::EntryRows;
use crate::error::Result;

/// The columns of [`keyed_messages`].
pub fn keyed_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("partition", DataType::Int32, false),
        Field::new("ledger_id", DataType::Int64, false),
        Field::new("entry_id", DataType::Int64, false),
        Field::new("batch_index", DataType::Int32, false),
        Field::new("key", DataType::Utf8, true),
        Field::new("value", DataType::Binary, true),
        Field::new("publish_time", DataType::Int64, true),
        Field::new("event_time", DataType::Int64, true),
        Field::new("error", DataType::Utf8, true),
    ]))
}

#[derive(Default)]
struct Columns {
    partition: Int32Builder,
    ledger: Int64Builder,
    entry: Int64Builder,
    index: Int32Builder,
    key: StringBuilder,
    value: BinaryBuilder,
    publish: Int64Builder,
    event: Int64Builder,
    error: StringBuilder,
}

impl Columns {
    /// A row for an entry that gives no message, with `error` saying why.
    fn failed(&mut self, id: crate::processor::api::EntryId, error: &str) {
        self.push(
            id.partition,
            id.ledger_id,
            id.entry_id,
            -1,
            None,
            None,
            None,
        );
        self.error.append_value(error);
    }

    #[allow(clippy::too_many_arguments)]
    fn push(
        &mut self,
        partition: i32,
        ledger: i64,
        entry: i64,
        index: i32,
        key: Option<&str>,
        value: Option<&[u8]>,
        times: Option<(u64, Option<u64>)>,
    ) {
        self.partition.append_value(partition);
        self.ledger.append_value(ledger);
        self.entry.append_value(entry);
        self.index.append_value(index);
        self.key.append_option(key);
        self.value.append_option(value);
        self.publish.append_option(times.map(|t| t.0 as i64));
        self.event
            .append_option(times.and_then(|t| t.1).map(|t| t as i64));
    }

    fn finish(mut self) -> RecordBatch {
        let columns: Vec<ArrayRef> = vec![
            Arc::new(self.partition.finish()),
            Arc::new(self.ledger.finish()),
            Arc::new(self.entry.finish()),
            Arc::new(self.index.finish()),
            Arc::new(self.key.finish()),
            Arc::new(self.value.finish()),
            Arc::new(self.publish.finish()),
            Arc::new(self.event.finish()),
            Arc::new(self.error.finish()),
        ];
        RecordBatch::try_new(keyed_schema(), columns).expect("keyed schema")
    }
}

/// Keyed messages with values in topic order, chunked messages reassembled
/// (reported at their last chunk) across batches. Key-less messages are left
/// out; an unreadable, encrypted or null entry gives one row with `error` set.
/// One output batch per input batch.
pub fn keyed_messages(batches: &[RecordBatch], opts: CompactOptions) -> Result<Vec<RecordBatch>> {
    let mut reader = MessageReader::new(opts);
    let mut out = Vec::with_capacity(batches.len());
    for b in batches {
        let rows = EntryRows::new(b)?;
        let mut cols = Columns::default();
        for i in 0..rows.len() {
            let id = rows.id(i);
            let Some(data) = rows.data(i) else {
                cols.failed(id, "entry data is null");
                continue;
            };
            let ek = (id.partition, id.ledger_id, id.entry_id);
            let outcome = reader.read_entry(ek, data, &mut |m| {
                if let Some(k) = m.key {
                    let p = m.position;
                    let times = Some((m.publish_time, m.event_time));
                    let (l, e, bi) = (p.ledger_id, p.entry_id, p.batch_index);
                    cols.push(id.partition, l, e, bi, Some(k), m.value, times);
                    cols.error.append_option(m.error);
                }
                Ok(())
            })?;
            match outcome {
                Outcome::Read | Outcome::Marker | Outcome::Aborted => {}
                Outcome::Encrypted => cols.failed(id, "encrypted entry: its values cannot be read"),
                Outcome::Unreadable(e) => cols.failed(id, &e.to_string()),
            }
        }
        out.push(cols.finish());
    }
    Ok(out)
}
