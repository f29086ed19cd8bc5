//! Option validation: the one place an option's value is checked against its
//! range, for every caller (the Python bindings, the CLI, Rust users).
//!
//! Each constructor returns the options struct or an
//! [`EntryError::Options`] that names the option; nothing is clamped.

use crate::error::{EntryError, Result};
use crate::format::compression::Codec;
use crate::processor::kafka::codec::KafkaCodec;
use crate::stamp::Timestamps;

fn invalid(text: String) -> EntryError {
    EntryError::Options(text)
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
    fn codecs_by_name() {
        assert_eq!(codec("LZ4").unwrap(), Codec::Lz4);
        assert_eq!(codec("brotli").unwrap_err().kind(), ErrorKind::Options);
        assert_eq!(kafka_codec("gzip").unwrap().name(), "gzip");
        assert_eq!(kafka_codec("zlib").unwrap_err().kind(), ErrorKind::Options);
    }

    #[test]
    fn timestamps_not_negative() {
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
