//! Keyword arguments as a binding hands them over: one [`Value`] dict (a
//! Python `**options`, say), and the positional arguments named after the
//! function's parameters ([`Kwargs::bind`]), read by name with the defaults of
//! the function's signature; each option group is built and checked in one
//! place for every function that takes it (`groups`).
//!
//! A value of the wrong type, an unknown keyword and a missing required one
//! are [`InputError::Type`] (a binding raises its `TypeError`, with Python's
//! wording for the last two); a value out of range is the option check's
//! [`EntryError::Options`](crate::error::EntryError::Options).

use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;

mod groups;

use crate::bookkeeper::BookKeeperError;
use crate::error::EntryError;
use crate::format::compression::DEFAULT_MAX_UNCOMPRESSED_SIZE;
use crate::value::input::{opt, InputError};
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
    /// The positional parameters ([`Kwargs::bind`]).
    params: &'v [&'v str],
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
        Ok(Kwargs {
            function,
            params: &[],
            given,
        })
    }

    /// A call's arguments: `args` named after `params` (its positional
    /// parameters, in order), then `keywords` (a dict, or `None`).
    pub fn bind(
        function: &'static str,
        params: &'v [&'v str],
        args: &'v [Value<'v>],
        keywords: &'v Value<'v>,
    ) -> Result<Self, InputError> {
        if args.len() > params.len() {
            let (n, got) = (params.len(), args.len());
            let text = format!("{function}() takes {n} positional arguments but {got} were given");
            return Err(InputError::Type(text));
        }
        let mut kw = Kwargs::new(function, keywords)?;
        kw.params = params;
        for (name, v) in params.iter().zip(args) {
            if kw.given.iter().any(|(k, _)| k == name) {
                let text = format!("{function}() got multiple values for argument '{name}'");
                return Err(InputError::Type(text));
            }
            kw.given.push((name, v));
        }
        Ok(kw)
    }

    /// The function the arguments are for.
    pub fn function(&self) -> &'static str {
        self.function
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
        Ok(self.get(name, "a bool", Value::bool)?.unwrap_or(default))
    }

    /// A bool or `None` (also when absent).
    pub fn opt_flag(&mut self, name: &str) -> Result<Option<bool>, InputError> {
        let f = |v: &Value<'_>| opt(v, Value::bool);
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

    /// Python's wording for a missing argument, positional or keyword-only.
    fn missing(&self, name: &str) -> InputError {
        let (f, positional) = (self.function, self.params.contains(&name));
        let kind = if positional { "positional" } else { "keyword" };
        InputError::Type(format!(
            "{f}() missing 1 required {kind} argument: '{name}'"
        ))
    }

    /// Any value that must be given.
    pub fn required_value(&mut self, name: &str) -> Result<&'v Value<'v>, InputError> {
        self.take(name).ok_or_else(|| self.missing(name))
    }

    /// Bytes that must be given.
    pub fn required_bytes(&mut self, name: &str) -> Result<&'v [u8], InputError> {
        match self.take(name) {
            None => Err(self.missing(name)),
            Some(Value::Bytes(b)) => Ok(b),
            Some(v) => Err(self.bad(name, "bytes", v)),
        }
    }

    /// Bytes, or `None` (also when absent).
    pub fn opt_bytes(&mut self, name: &str) -> Result<Option<&'v [u8]>, InputError> {
        match self.take(name) {
            None | Some(Value::None) => Ok(None),
            Some(Value::Bytes(b)) => Ok(Some(b)),
            Some(v) => Err(self.bad(name, "bytes or None", v)),
        }
    }

    /// An Arrow table that must be given: its schema and batches.
    pub fn required_table(
        &mut self,
        name: &str,
    ) -> Result<(&'v SchemaRef, &'v [RecordBatch]), InputError> {
        match self.take(name) {
            None => Err(self.missing(name)),
            Some(Value::Table(schema, batches)) => Ok((schema, batches)),
            Some(v) => Err(self.bad(name, "an Arrow table, record batch or stream", v)),
        }
    }

    /// A bool that must be given.
    pub fn required_flag(&mut self, name: &str) -> Result<bool, InputError> {
        self.get(name, "a bool", Value::bool)?
            .ok_or_else(|| self.missing(name))
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
    pub(crate) fn max_size(&mut self, name: &str) -> Result<usize, InputError> {
        self.int(name, DEFAULT_MAX_UNCOMPRESSED_SIZE)
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
    use crate::stamp::Timestamps;

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
    fn stamp_takes_one_time_a_list_or_the_clock() {
        let mut kw = Kwargs::new("stamp", &Value::None).unwrap();
        assert!(matches!(kw.stamp().unwrap().1, Timestamps::Clock));
        let v = dict(vec![
            ("timestamps", 5i64.into()),
            ("start_index", 3i64.into()),
        ]);
        let mut kw = Kwargs::new("stamp", &v).unwrap();
        assert!(matches!(kw.stamp().unwrap().1, Timestamps::Fixed(5)));
        let list = Value::List(vec![1i64.into(), 2i64.into()]);
        let v = dict(vec![("timestamps", list)]);
        let (_, times) = Kwargs::new("stamp", &v).unwrap().stamp().unwrap();
        assert!(matches!(times, Timestamps::PerEntry(ref t) if t == &[1, 2]));
        let v = dict(vec![("timestamps", "soon".into())]);
        let text = type_error(Kwargs::new("stamp", &v).unwrap().stamp());
        assert_eq!(
            text,
            "stamp() argument 'timestamps' must be an int, a list of ints or None, not str"
        );
        let v = dict(vec![("start_index", (-2i64).into())]);
        let refused = Kwargs::new("stamp", &v).unwrap().stamp();
        assert!(matches!(
            refused,
            Err(ArgsError::Entry(EntryError::Options(_)))
        ));
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
    }

    #[test]
    fn times_and_required_values() {
        let v = dict(vec![
            ("base_timestamp", Value::Time(1_234)),
            ("ctime", 5i64.into()),
        ]);
        let mut kw = Kwargs::new("f", &v).unwrap();
        assert_eq!(kw.kafka_batch(0).unwrap().base_timestamp, 1_234);
        let err = kw
            .required_text("managed_ledger_name")
            .unwrap_err()
            .to_string();
        assert_eq!(
            err,
            "f() missing 1 required keyword argument: 'managed_ledger_name'"
        );
        let not_dict = Value::Int(1);
        assert!(Kwargs::new("f", &not_dict).is_err());
    }
}
