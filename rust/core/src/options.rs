//! Option validation: the one place an option's value is checked against its
//! range, for every caller (the Python bindings, the CLI, Rust users).
//!
//! Each constructor returns the options struct or an
//! [`EntryError::Options`] that names the option; nothing is clamped.

use crate::chunks::ReassemblyOptions;
use crate::compaction::{CompactOptions, Order};
use crate::decode::MAX_UNCOMPRESSED_SIZE_CAP;
use crate::error::{EntryError, Result};
use crate::format::compression::Codec;
use crate::format::wire::Utf8Errors;
use crate::processor::api::DecodeOptions;
use crate::processor::kafka::codec::KafkaCodec;
use crate::stamp::Timestamps;

fn invalid(text: String) -> EntryError {
    EntryError::Options(text)
}

/// `value` when it is at most [`MAX_UNCOMPRESSED_SIZE_CAP`].
pub fn size_limit(name: &str, value: usize) -> Result<usize> {
    if value > MAX_UNCOMPRESSED_SIZE_CAP {
        return Err(invalid(format!(
            "{name} {value} exceeds the supported maximum {MAX_UNCOMPRESSED_SIZE_CAP}"
        )));
    }
    Ok(value)
}

/// Decode options, with `max_uncompressed_size` checked and the defaults for
/// the rest (UTF-8 replaced, no output budget); see [`decode_options_with`].
pub fn decode_options(
    verify_checksum: bool,
    keep_markers: bool,
    max_uncompressed_size: usize,
) -> Result<DecodeOptions> {
    decode_options_with(
        verify_checksum,
        keep_markers,
        max_uncompressed_size,
        "replace",
        None,
    )
}

/// Decode options: `utf8_errors` is `replace` or `error`;
/// `max_output_bytes` (the decompressed bytes one decode call may produce)
/// is at least 1 or `None` (no budget).
pub fn decode_options_with(
    verify_checksum: bool,
    keep_markers: bool,
    max_uncompressed_size: usize,
    utf8_errors: &str,
    max_output_bytes: Option<usize>,
) -> Result<DecodeOptions> {
    if max_output_bytes == Some(0) {
        return Err(invalid(
            "max_output_bytes must be at least 1 (None means no budget)".into(),
        ));
    }
    Ok(DecodeOptions {
        verify_checksum,
        keep_markers,
        max_uncompressed_size: size_limit("max_uncompressed_size", max_uncompressed_size)?,
        utf8_errors: utf8_errors_mode(utf8_errors)?,
        max_output_bytes,
    })
}

/// `replace` or `error`.
pub fn utf8_errors_mode(name: &str) -> Result<Utf8Errors> {
    match name.to_ascii_lowercase().as_str() {
        "replace" => Ok(Utf8Errors::Replace),
        "error" => Ok(Utf8Errors::Error),
        _ => Err(invalid(format!(
            "unknown utf8_errors {name:?}; expected \"replace\" or \"error\""
        ))),
    }
}

/// A compaction order by name: `publish` or `event_time`.
pub fn order(name: &str) -> Result<Order> {
    match name.to_ascii_lowercase().replace('-', "_").as_str() {
        "publish" | "publishing" | "publish_order" => Ok(Order::Publish),
        "event_time" | "event_time_order" => Ok(Order::EventTime),
        _ => Err(invalid(format!(
            "unknown compaction order {name:?}; expected \"publish\" or \"event_time\""
        ))),
    }
}

/// Compaction options, with the order parsed and the size limit checked.
pub fn compact_options(
    order_name: &str,
    retain_null_key: bool,
    verify_checksum: bool,
    max_uncompressed_size: usize,
) -> Result<CompactOptions> {
    Ok(CompactOptions {
        order: order(order_name)?,
        retain_null_key,
        verify_checksum,
        max_uncompressed_size: size_limit("max_uncompressed_size", max_uncompressed_size)?,
    })
}

/// Reassembly options: `max_pending` ≥ 1 or `None` (unlimited),
/// `expire_after_ms` ≥ 0 or `None` (never), `max_message_size` within the cap.
pub fn reassembly_options(
    max_pending: Option<usize>,
    expire_after_ms: Option<i64>,
    max_message_size: usize,
) -> Result<ReassemblyOptions> {
    if max_pending == Some(0) {
        return Err(invalid(
            "max_pending must be at least 1 (None means unlimited)".into(),
        ));
    }
    if expire_after_ms.is_some_and(|e| e < 0) {
        return Err(invalid(
            "expire_after_ms must not be negative (None means never)".into(),
        ));
    }
    Ok(ReassemblyOptions {
        max_pending,
        expire_after_ms,
        max_message_size: size_limit("max_message_size", max_message_size)?,
    })
}

/// A Pulsar compression codec by name.
pub fn codec(name: &str) -> Result<Codec> {
    Codec::ALL
        .into_iter()
        .find(|c| c.name().eq_ignore_ascii_case(name))
        .ok_or_else(|| {
            invalid(format!(
                "unknown compression {name:?}; expected none, lz4, zlib, zstd or snappy"
            ))
        })
}

/// A Kafka compression codec by name.
pub fn kafka_codec(name: &str) -> Result<KafkaCodec> {
    KafkaCodec::parse(name).ok_or_else(|| {
        invalid(format!(
            "unknown Kafka compression {name:?}; expected none, gzip, snappy, lz4 or zstd"
        ))
    })
}

/// A timestamp that must not be negative (milliseconds).
pub fn non_negative_ms(name: &str, value: i64) -> Result<u64> {
    u64::try_from(value).map_err(|_| invalid(format!("{name} must be >= 0, got {value}")))
}

/// One stamping time for every entry (ms, not negative).
pub fn fixed_timestamps(ms: i64) -> Result<Timestamps> {
    Ok(Timestamps::Fixed(non_negative_ms("timestamps", ms)?))
}

/// One stamping time per entry, in table order (ms, none negative).
pub fn entry_timestamps(ms: &[i64]) -> Result<Timestamps> {
    let each = ms.iter().map(|&t| non_negative_ms("timestamps", t));
    Ok(Timestamps::PerEntry(each.collect::<Result<_>>()?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorKind;

    #[test]
    fn size_limit_rejects_above_the_cap_and_keeps_the_rest() {
        assert_eq!(
            size_limit("x", MAX_UNCOMPRESSED_SIZE_CAP),
            Ok(MAX_UNCOMPRESSED_SIZE_CAP)
        );
        let e = size_limit("max_message_size", MAX_UNCOMPRESSED_SIZE_CAP + 1).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Options);
        assert!(
            e.to_string()
                .contains("max_message_size 1073741825 exceeds"),
            "{e}"
        );
        let e = decode_options(true, false, usize::MAX).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Options);
        assert_eq!(
            decode_options(false, true, 10)
                .unwrap()
                .max_uncompressed_size,
            10
        );
    }

    #[test]
    fn orders_and_codecs_by_name() {
        assert_eq!(order("Event-Time").unwrap(), Order::EventTime);
        assert_eq!(order("publish").unwrap(), Order::Publish);
        assert_eq!(order("random").unwrap_err().kind(), ErrorKind::Options);
        let o = compact_options("event_time", true, false, 5).unwrap();
        assert!(o.retain_null_key && !o.verify_checksum && o.order == Order::EventTime);
        assert_eq!(codec("LZ4").unwrap(), Codec::Lz4);
        assert_eq!(codec("brotli").unwrap_err().kind(), ErrorKind::Options);
        assert_eq!(kafka_codec("gzip").unwrap().name(), "gzip");
        assert_eq!(kafka_codec("zlib").unwrap_err().kind(), ErrorKind::Options);
    }

    #[test]
    fn reassembly_bounds() {
        assert_eq!(
            reassembly_options(None, None, 1).unwrap(),
            ReassemblyOptions {
                max_pending: None,
                expire_after_ms: None,
                max_message_size: 1
            }
        );
        for bad in [
            reassembly_options(Some(0), None, 1),
            reassembly_options(None, Some(-1), 1),
            reassembly_options(None, None, MAX_UNCOMPRESSED_SIZE_CAP + 1),
        ] {
            assert_eq!(bad.unwrap_err().kind(), ErrorKind::Options);
        }
        assert_eq!(non_negative_ms("t", 5), Ok(5));
        assert_eq!(fixed_timestamps(7), Ok(Timestamps::Fixed(7)));
        assert_eq!(
            entry_timestamps(&[1, 2]),
            Ok(Timestamps::PerEntry(vec![1, 2]))
        );
        for bad in [fixed_timestamps(-1), entry_timestamps(&[1, -2])] {
            let e = bad.unwrap_err();
            assert_eq!(e.kind(), ErrorKind::Options);
            assert!(e.to_string().contains("timestamps must be >= 0"), "{e}");
        }
        assert_eq!(
            non_negative_ms("t", -1).unwrap_err().kind(),
            ErrorKind::Options
        );
    }
}
