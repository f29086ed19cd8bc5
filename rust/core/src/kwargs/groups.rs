//! The option groups: each built and checked in one place for every
//! function that takes it.

use super::{Kwargs, Result};
use crate::chunks::ReassemblyOptions;
use crate::compaction::CompactOptions;
use crate::format::broker::{Interceptors, Stamper};
use crate::format::encode::EncodeOptions;
use crate::options;
use crate::processor::api::DecodeOptions;
use crate::processor::kafka::encode::KafkaBatchOptions;
use crate::stamp::Timestamps;
use crate::value::input::entry_properties;
use crate::value::Value;

impl Kwargs<'_> {
    /// Compaction options: `order` (default `publish`) when `with_order`,
    /// `retain_null_key` (default false) when `with_retain`, and always
    /// `verify_checksum` (true) and `max_uncompressed_size`.
    pub fn compact(&mut self, with_order: bool, with_retain: bool) -> Result<CompactOptions> {
        let order = if with_order {
            self.text("order", "publish")?
        } else {
            "publish"
        };
        let retain = with_retain && self.flag("retain_null_key", false)?;
        let verify = self.flag("verify_checksum", true)?;
        let max_size = self.max_size("max_uncompressed_size")?;
        Ok(CompactOptions::try_new(order.parse()?, retain, verify, max_size)?)
    }

    /// Reassembly options: `max_pending` (100), `expire_after_ms` (60 000),
    /// `max_message_size`.
    pub fn reassembly(&mut self) -> Result<ReassemblyOptions> {
        let max_pending = self.opt_int("max_pending", Some(100))?;
        let expire_after_ms = self.opt_int("expire_after_ms", Some(60_000))?;
        let max_message_size = self.max_size("max_message_size")?;
        Ok(ReassemblyOptions::try_new(max_pending, expire_after_ms, max_message_size)?)
    }

    /// Decode options: `verify_checksum` (true), `keep_markers` (false),
    /// `max_uncompressed_size`, `utf8_errors` (`replace`), `max_output_bytes`.
    pub fn decode(&mut self) -> Result<DecodeOptions> {
        let verify = self.flag("verify_checksum", true)?;
        let keep_markers = self.flag("keep_markers", false)?;
        let max_size = self.max_size("max_uncompressed_size")?;
        let utf8 = self.text("utf8_errors", "replace")?;
        let budget = self.opt_int("max_output_bytes", None)?;
        Ok(DecodeOptions::try_new(verify, keep_markers, max_size, utf8.parse()?, budget)?)
    }

    /// Encode options (`batch` as given): `compression` (`none`),
    /// `producer_name` (`pulsar-entries`), `sequence_id` (0), `publish_time`
    /// (`now_ms`), `broker_timestamp`, `broker_index`, `checksum` (true),
    /// `properties` (a dict of str to str).
    pub fn encode(&mut self, batch: Option<bool>, now_ms: u64) -> Result<EncodeOptions> {
        Ok(EncodeOptions {
            batch,
            compression: options::codec(self.text("compression", "none")?)?,
            producer_name: self.text("producer_name", "pulsar-entries")?.to_owned(),
            sequence_id: self.int("sequence_id", 0)?,
            publish_time: self.opt_int("publish_time", None)?.unwrap_or(now_ms),
            broker_timestamp: self.opt_int("broker_timestamp", None)?,
            broker_index: self.opt_int("broker_index", None)?,
            checksum: self.flag("checksum", true)?,
            properties: entry_properties(self.value("properties"))?,
        })
    }

    /// Kafka RecordBatch v2 options: `base_offset` (0), `compression`
    /// (`none`), `base_timestamp` (ms or a time; `now_ms`),
    /// `log_append_time`, `transactional` (false), `producer_id`,
    /// `producer_epoch`, `base_sequence`, `partition_leader_epoch` (-1).
    pub fn kafka_batch(&mut self, now_ms: i64) -> Result<KafkaBatchOptions> {
        Ok(KafkaBatchOptions {
            base_offset: self.int("base_offset", 0)?,
            compression: options::kafka_codec(self.text("compression", "none")?)?,
            base_timestamp: self.millis("base_timestamp")?.unwrap_or(now_ms),
            log_append_time: self.flag("log_append_time", false)?,
            transactional: self.flag("transactional", false)?,
            control: false,
            producer_id: self.int("producer_id", -1)?,
            producer_epoch: self.int("producer_epoch", -1)?,
            base_sequence: self.int("base_sequence", -1)?,
            partition_leader_epoch: self.int("partition_leader_epoch", -1)?,
        })
    }

    /// `aborted_transactions`: the `(most, least)` ids of the transactions to
    /// drop (`None` or absent: none).
    pub fn aborted_transactions<C: FromIterator<(u64, u64)>>(&mut self) -> Result<C> {
        Ok(self.pairs("aborted_transactions")?)
    }

    /// Stamping options: `start_index` (-1, the interceptor's initial
    /// counter), `timestamps` (ms: one for every entry, a list of one per
    /// entry, or `None` for the clock), `index` and `timestamp` (which
    /// interceptors run; true).
    pub fn stamp(&mut self) -> Result<(Stamper, Timestamps)> {
        let start_index = self.int("start_index", -1)?;
        let times = match self.value("timestamps") {
            Value::None => Timestamps::Clock,
            v => {
                let per_entry = || {
                    v.items()?
                        .iter()
                        .map(Value::int)
                        .collect::<Option<Vec<_>>>()
                };
                let bad = || self.bad("timestamps", "an int, a list of ints or None", v);
                match v.int() {
                    Some(ms) => options::fixed_timestamps(ms)?,
                    None => options::entry_timestamps(&per_entry().ok_or_else(bad)?)?,
                }
            }
        };
        let (index, timestamp) = (self.flag("index", true)?, self.flag("timestamp", true)?);
        let stamper = Stamper::new(start_index, Interceptors { timestamp, index })?;
        Ok((stamper, times))
    }
}
