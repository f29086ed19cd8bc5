//! Keyword arguments as a binding hands them over: one [`Value`] dict (a
//! Python `**options`, say), read by name with the defaults of the function's
//! signature, each option group built and checked in one place for every
//! function that takes it.
//!
//! A value of the wrong type, an unknown keyword and a missing required one
//! are [`InputError::Type`] (a binding raises its `TypeError`, with Python's
//! wording for the last two); a value out of range is the option check's
//! [`EntryError::Options`](crate::error::EntryError::Options).

use crate::bookkeeper::{BookKeeperError, ClientOptions};
use crate::chunks::ReassemblyOptions;
use crate::compaction::CompactOptions;
use crate::error::EntryError;
use crate::format::compression::DEFAULT_MAX_UNCOMPRESSED_SIZE;
use crate::format::encode::EncodeOptions;
use crate::offload::LedgerMetadataSpec;
use crate::options;
use crate::processor::api::DecodeOptions;
use crate::processor::kafka::encode::KafkaBatchOptions;
use crate::value::input::{entry_properties, opt, InputError};
use crate::value::{Dict, Value};

/// Why keyword arguments were refused: the value ([`InputError`]), or the
/// option check of the core ([`EntryError`]) or of the BookKeeper client.
#[derive(Debug, thiserror::Error)]
pub enum ArgsError {
    #[error(transparent)]
    Input(#[from] InputError),
    #[error(transparent)]
    Entry(#[from] EntryError),
    #[error(transparent)]
    BookKeeper(#[from] BookKeeperError),
}

type Result<T, E = ArgsError> = std::result::Result<T, E>;

/// The keyword arguments of one call of `function`, each taken at most once;
/// [`Kwargs::done`] refuses any left over.
pub struct Kwargs<'v> {
    function: &'static str,
    given: Vec<(&'v str, &'v Value<'v>)>,
}

impl<'v> Kwargs<'v> {
    /// The keywords of a dict (`None`: no keywords).
    pub fn new(function: &'static str, v: &'v Value<'v>) -> Result<Self, InputError> {
        let given = match v {
            Value::None => Vec::new(),
            Value::Dict(Dict(items)) => items.iter().map(|(k, v)| (k.as_ref(), v)).collect(),
            v => {
                let got = v.type_name();
                let text = format!("{function}() keyword arguments must be a dict, not {got}");
                return Err(InputError::Type(text));
            }
        };
        Ok(Kwargs { function, given })
    }

    /// The value of `name`, if given.
    fn take(&mut self, name: &str) -> Option<&'v Value<'v>> {
        let at = self.given.iter().position(|(k, _)| *k == name)?;
        Some(self.given.remove(at).1)
    }

    /// `function() argument 'name' must be <expected>, not <got>`: Python's wording.
    fn refused(&self, name: &str, expected: &str, got: &dyn std::fmt::Display) -> String {
        let f = self.function;
        format!("{f}() argument '{name}' must be {expected}, not {got}")
    }

    /// A value of the wrong type (a binding's `TypeError`).
    fn bad(&self, name: &str, expected: &str, v: &Value<'_>) -> InputError {
        InputError::Type(self.refused(name, expected, &v.type_name()))
    }

    /// `name`'s value through `f` (`None` when absent), or the wrong-type error.
    fn get<T>(
        &mut self,
        name: &str,
        expected: &str,
        f: impl FnOnce(&Value<'v>) -> Option<T>,
    ) -> Result<Option<T>, InputError> {
        match self.take(name) {
            None => Ok(None),
            Some(v) => f(v).map(Some).ok_or_else(|| self.bad(name, expected, v)),
        }
    }

    /// [`get`](Self::get) for an `f` that takes ints: an int it refuses is out
    /// of the option's range, named by its value (`must be a non-negative int,
    /// not -1`); anything else it refuses is of the wrong type.
    fn get_int<T>(
        &mut self,
        name: &str,
        expected: &str,
        f: impl FnOnce(&Value<'v>) -> Option<T>,
    ) -> Result<Option<T>, InputError> {
        let Some(v) = self.take(name) else {
            return Ok(None);
        };
        f(v).map(Some).ok_or_else(|| match v {
            Value::Int(i) => InputError::Range(self.refused(name, expected, i)),
            Value::UInt(u) => InputError::Range(self.refused(name, expected, u)),
            v => self.bad(name, expected, v),
        })
    }

    /// A bool (Python's `True`/`False` only), else `default`.
    pub fn flag(&mut self, name: &str, default: bool) -> Result<bool, InputError> {
        let f = |v: &Value<'_>| matches!(v, Value::Bool(_)).then(|| v == &Value::Bool(true));
        Ok(self.get(name, "a bool", f)?.unwrap_or(default))
    }

    /// A bool or `None` (also when absent).
    pub fn opt_flag(&mut self, name: &str) -> Result<Option<bool>, InputError> {
        let bool = |v: &Value<'_>| matches!(v, Value::Bool(_)).then(|| v == &Value::Bool(true));
        let f = |v: &Value<'_>| opt(v, bool);
        Ok(self.get(name, "a bool or None", f)?.flatten())
    }

    /// An integer that fits `T`, else `default`.
    pub fn int<T: TryFrom<i64> + TryFrom<u64>>(
        &mut self,
        name: &str,
        default: T,
    ) -> Result<T, InputError> {
        Ok(self
            .get_int(name, int_in::<T>(), Value::int)?
            .unwrap_or(default))
    }

    /// An integer, `None`, or `default` when absent.
    pub fn opt_int<T: TryFrom<i64> + TryFrom<u64>>(
        &mut self,
        name: &str,
        default: Option<T>,
    ) -> Result<Option<T>, InputError> {
        let expected = format!("{} or None", int_in::<T>());
        let f = |v: &Value<'_>| opt(v, Value::int);
        Ok(self.get_int(name, &expected, f)?.unwrap_or(default))
    }

    /// An integer that must be given (a keyword-only argument without default).
    pub fn required<T: TryFrom<i64> + TryFrom<u64>>(
        &mut self,
        name: &str,
    ) -> Result<T, InputError> {
        let got = self.get_int(name, int_in::<T>(), Value::int)?;
        got.ok_or_else(|| self.missing(name))
    }

    fn missing(&self, name: &str) -> InputError {
        let f = self.function;
        InputError::Type(format!(
            "{f}() missing 1 required keyword argument: '{name}'"
        ))
    }

    /// A str, else `default`.
    pub fn text(&mut self, name: &str, default: &'v str) -> Result<&'v str, InputError> {
        match self.take(name) {
            None => Ok(default),
            Some(Value::Str(s)) => Ok(s.as_ref()),
            Some(v) => Err(self.bad(name, "str", v)),
        }
    }

    /// A str that must be given.
    pub fn required_text(&mut self, name: &str) -> Result<&'v str, InputError> {
        match self.take(name) {
            None => Err(self.missing(name)),
            Some(Value::Str(s)) => Ok(s.as_ref()),
            Some(v) => Err(self.bad(name, "str", v)),
        }
    }

    /// Milliseconds (an int, or a point in time), `None` when absent or `None`.
    pub fn millis(&mut self, name: &str) -> Result<Option<i64>, InputError> {
        let f = |v: &Value<'_>| opt(v, Value::millis);
        let expected = "an int (milliseconds), a datetime or None";
        Ok(self.get_int(name, expected, f)?.flatten())
    }

    /// A list of str, `None` when absent or `None`.
    pub fn strings(&mut self, name: &str) -> Result<Option<Vec<String>>, InputError> {
        let each = |v: &Value<'_>| v.items()?.iter().map(Value::text).collect();
        let f = |v: &Value<'_>| opt(v, each);
        Ok(self.get(name, "a list of str or None", f)?.flatten())
    }

    /// A list of `(int, int)` pairs (`None` or absent: empty), collected.
    pub fn pairs<C: FromIterator<(u64, u64)>>(&mut self, name: &str) -> Result<C, InputError> {
        let pair = |v: &Value<'_>| match v.items()? {
            [a, b] => Some((a.int()?, b.int()?)),
            _ => None,
        };
        let each = |v: &Value<'_>| v.items()?.iter().map(pair).collect::<Option<Vec<_>>>();
        let f = |v: &Value<'_>| opt(v, each);
        let expected = "a list of (int, int) pairs or None";
        let pairs = self.get(name, expected, f)?.flatten().unwrap_or_default();
        Ok(pairs.into_iter().collect())
    }

    /// The raw value of `name` (`None` when absent).
    pub fn value(&mut self, name: &str) -> &'v Value<'v> {
        self.take(name).unwrap_or(&Value::None)
    }

    /// `out`, unless a keyword was given that the function does not take.
    pub fn done<T>(self, out: T) -> Result<T, InputError> {
        match self.given.first() {
            None => Ok(out),
            Some((name, _)) => Err(InputError::Type(format!(
                "{}() got an unexpected keyword argument '{name}'",
                self.function
            ))),
        }
    }

    /// `max_uncompressed_size` (default [`DEFAULT_MAX_UNCOMPRESSED_SIZE`]).
    fn max_size(&mut self, name: &str) -> Result<usize, InputError> {
        self.int(name, DEFAULT_MAX_UNCOMPRESSED_SIZE)
    }

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
        Ok(options::compact_options(order, retain, verify, max_size)?)
    }

    /// Reassembly options: `max_pending` (100), `expire_after_ms` (60 000),
    /// `max_message_size`.
    pub fn reassembly(&mut self) -> Result<ReassemblyOptions> {
        let max_pending = self.opt_int("max_pending", Some(100))?;
        let expire_after_ms = self.opt_int("expire_after_ms", Some(60_000))?;
        let max_message_size = self.max_size("max_message_size")?;
        Ok(options::reassembly_options(
            max_pending,
            expire_after_ms,
            max_message_size,
        )?)
    }

    /// Decode options: `verify_checksum` (true), `keep_markers` (false),
    /// `max_uncompressed_size`, `utf8_errors` (`replace`), `max_output_bytes`.
    pub fn decode(&mut self) -> Result<DecodeOptions> {
        let verify = self.flag("verify_checksum", true)?;
        let keep_markers = self.flag("keep_markers", false)?;
        let max_size = self.max_size("max_uncompressed_size")?;
        let utf8 = self.text("utf8_errors", "replace")?;
        let budget = self.opt_int("max_output_bytes", None)?;
        Ok(options::decode_options_with(
            verify,
            keep_markers,
            max_size,
            utf8,
            budget,
        )?)
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

    /// BookKeeper client options: `timeout_ms` (30 000), `connect_timeout_ms`
    /// (5 000), `pipeline_depth` (64), `max_frame_bytes` (5 308 416).
    pub fn bookie_client(&mut self) -> Result<ClientOptions> {
        let timeout = self.int("timeout_ms", 30_000)?;
        let connect = self.int("connect_timeout_ms", 5_000)?;
        let depth = self.int("pipeline_depth", 64)?;
        let max_frame = self.int("max_frame_bytes", 5_308_416)?;
        Ok(ClientOptions::checked(timeout, connect, depth, max_frame)?)
    }

    /// An offloaded ledger's metadata: `ctime` and `managed_ledger_name`
    /// (required), `ensemble`, `write_quorum`, `ack_quorum` (the defaults).
    pub fn ledger_spec(&mut self) -> Result<LedgerMetadataSpec> {
        let ctime = self.required("ctime")?;
        let managed_ledger = self.required_text("managed_ledger_name")?;
        let ensemble = self.strings("ensemble")?;
        let (write, ack) = (
            self.opt_int("write_quorum", None)?,
            self.opt_int("ack_quorum", None)?,
        );
        let spec = LedgerMetadataSpec::for_managed_ledger(managed_ledger, ctime);
        Ok(spec.with_ensemble(ensemble, write, ack))
    }
}

/// "an int" with the range of `T` when it is not i64's.
fn int_in<T: TryFrom<i64>>() -> &'static str {
    match (T::try_from(-1).is_ok(), T::try_from(i64::MAX).is_ok()) {
        (false, _) => "a non-negative int",
        (true, false) => "an int in range",
        (true, true) => "an int",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compaction::Order;

    fn dict(items: Vec<(&'static str, Value<'static>)>) -> Value<'static> {
        let mut d = Dict::default();
        items.into_iter().for_each(|(k, v)| {
            d.set(k, v);
        });
        Value::Dict(d)
    }

    fn type_error<T: std::fmt::Debug>(r: Result<T>) -> String {
        match r {
            Err(ArgsError::Input(InputError::Type(text))) => text,
            other => panic!("expected a type error, got {other:?}"),
        }
    }

    #[test]
    fn defaults_when_nothing_is_given() {
        let none = Value::None;
        let mut kw = Kwargs::new("f", &none).unwrap();
        let opts = kw.compact(true, true).unwrap();
        assert_eq!(opts.order, Order::Publish);
        assert!(!opts.retain_null_key && opts.verify_checksum);
        assert_eq!(opts.max_uncompressed_size, DEFAULT_MAX_UNCOMPRESSED_SIZE);
        let r = kw.reassembly().unwrap();
        assert_eq!(
            (r.max_pending, r.expire_after_ms),
            (Some(100), Some(60_000))
        );
        let d = kw.decode().unwrap();
        assert_eq!(d.max_uncompressed_size, DEFAULT_MAX_UNCOMPRESSED_SIZE);
        let e = kw.encode(None, 7).unwrap();
        assert_eq!((e.publish_time, e.sequence_id, e.checksum), (7, 0, true));
        assert_eq!(e.producer_name, "pulsar-entries");
        let k = kw.kafka_batch(9).unwrap();
        assert_eq!(
            (k.base_timestamp, k.producer_id, k.producer_epoch),
            (9, -1, -1)
        );
        kw.done(()).unwrap();
    }

    #[test]
    fn given_values_are_read_and_checked() {
        let v = dict(vec![
            ("order", "event_time".into()),
            ("retain_null_key", true.into()),
            ("max_pending", Value::None),
            ("expire_after_ms", 5i64.into()),
            (
                "aborted_transactions",
                Value::List(vec![Value::Tuple(vec![1i64.into(), 2i64.into()])]),
            ),
        ]);
        let mut kw = Kwargs::new("f", &v).unwrap();
        let opts = kw.compact(true, true).unwrap();
        assert_eq!((opts.order, opts.retain_null_key), (Order::EventTime, true));
        let r = kw.reassembly().unwrap();
        assert_eq!((r.max_pending, r.expire_after_ms), (None, Some(5)));
        let aborted: Vec<_> = kw.pairs("aborted_transactions").unwrap();
        assert_eq!(aborted, vec![(1, 2)]);
        kw.done(()).unwrap();
    }

    #[test]
    fn a_key_the_function_does_not_take_is_refused() {
        let v = dict(vec![("order", "publish".into())]);
        let mut kw = Kwargs::new("rebuild_entries", &v).unwrap();
        kw.compact(false, true).unwrap();
        let err = kw.done(()).unwrap_err().to_string();
        assert_eq!(
            err,
            "rebuild_entries() got an unexpected keyword argument 'order'"
        );
    }

    #[test]
    fn wrong_types_name_the_argument() {
        let v = dict(vec![("verify_checksum", 1i64.into())]);
        let text = type_error(Kwargs::new("decode", &v).unwrap().decode());
        assert_eq!(
            text,
            "decode() argument 'verify_checksum' must be a bool, not int"
        );
        let v = dict(vec![("sequence_id", "7".into())]);
        let text = type_error(Kwargs::new("encode_entry", &v).unwrap().encode(None, 0));
        assert_eq!(
            text,
            "encode_entry() argument 'sequence_id' must be a non-negative int, not str"
        );
        let v = dict(vec![(
            "aborted_transactions",
            Value::List(vec![1i64.into()]),
        )]);
        let text = Kwargs::new("c", &v)
            .unwrap()
            .pairs::<Vec<_>>("aborted_transactions")
            .unwrap_err();
        assert!(
            text.to_string().contains("a list of (int, int) pairs"),
            "{text}"
        );
    }

    #[test]
    fn ints_out_of_range_are_range_errors_naming_the_value() {
        let range_error = |r: Result<_>| match r {
            Err(ArgsError::Input(e @ InputError::Range(_))) => {
                assert_eq!(e.kind(), crate::error::ErrorKind::Options);
                e.to_string()
            }
            other => panic!("expected a range error, got {other:?}"),
        };
        let v = dict(vec![("sequence_id", (-1i64).into())]);
        assert_eq!(
            range_error(
                Kwargs::new("encode_entry", &v)
                    .unwrap()
                    .encode(None, 0)
                    .map(drop)
            ),
            "encode_entry() argument 'sequence_id' must be a non-negative int, not -1"
        );
        let v = dict(vec![("producer_epoch", 70_000i64.into())]);
        assert_eq!(
            range_error(Kwargs::new("k", &v).unwrap().kafka_batch(0).map(drop)),
            "k() argument 'producer_epoch' must be an int in range, not 70000"
        );
        let v = dict(vec![("max_uncompressed_size", (-5i64).into())]);
        assert!(range_error(Kwargs::new("d", &v).unwrap().decode().map(drop)).ends_with("not -5"));
        let v = dict(vec![("producer_epoch", Value::UInt(u64::MAX))]);
        assert!(
            range_error(Kwargs::new("k", &v).unwrap().kafka_batch(0).map(drop))
                .ends_with("not 18446744073709551615")
        );
    }

    #[test]
    fn range_checks_are_the_option_checks() {
        let v = dict(vec![("max_pending", 0i64.into())]);
        let err = Kwargs::new("f", &v).unwrap().reassembly().unwrap_err();
        assert!(
            matches!(err, ArgsError::Entry(EntryError::Options(_))),
            "{err:?}"
        );
        let v = dict(vec![("compression", "gzip".into())]);
        let err = Kwargs::new("f", &v).unwrap().encode(None, 0).unwrap_err();
        assert!(err.to_string().contains("unknown compression"), "{err}");
        let v = dict(vec![("pipeline_depth", 0i64.into())]);
        let err = Kwargs::new("f", &v).unwrap().bookie_client().unwrap_err();
        assert!(matches!(err, ArgsError::BookKeeper(_)), "{err:?}");
    }

    #[test]
    fn times_and_required_values() {
        let v = dict(vec![
            ("base_timestamp", Value::Time(1_234)),
            ("ctime", 5i64.into()),
        ]);
        let mut kw = Kwargs::new("f", &v).unwrap();
        assert_eq!(kw.kafka_batch(0).unwrap().base_timestamp, 1_234);
        let err = kw.ledger_spec().unwrap_err().to_string();
        assert_eq!(
            err,
            "f() missing 1 required keyword argument: 'managed_ledger_name'"
        );
        let not_dict = Value::Int(1);
        assert!(Kwargs::new("f", &not_dict).is_err());
    }
}
