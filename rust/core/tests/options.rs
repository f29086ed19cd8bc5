//! The options types: defaults in one place, checked by `try_new`, built by `with_*`.

use pulsar_entries_core::chunks::ReassemblyOptions;
use pulsar_entries_core::compaction::{CompactOptions, Order};
use pulsar_entries_core::decode::MAX_UNCOMPRESSED_SIZE_CAP;
use pulsar_entries_core::{DecodeOptions, ErrorKind, Utf8Errors, DEFAULT_MAX_UNCOMPRESSED_SIZE};

#[test]
fn decode_options() {
    let d = DecodeOptions::default();
    assert_eq!(d, DecodeOptions::DEFAULT);
    assert!(d.verify_checksum && !d.keep_markers && d.max_output_bytes.is_none());
    assert_eq!(d.max_uncompressed_size, DEFAULT_MAX_UNCOMPRESSED_SIZE);
    let built = d
        .with_keep_markers(true)
        .with_utf8_errors(Utf8Errors::Error);
    let tried =
        DecodeOptions::try_new(true, true, d.max_uncompressed_size, Utf8Errors::Error, None);
    assert_eq!(tried.unwrap(), built);
    let too_big = d
        .with_max_uncompressed_size(MAX_UNCOMPRESSED_SIZE_CAP + 1)
        .checked();
    let e = too_big.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Options);
    assert!(
        e.to_string()
            .contains("max_uncompressed_size 1073741825 exceeds"),
        "{e}"
    );
    let e = d.with_max_output_bytes(Some(0)).checked().unwrap_err();
    assert!(
        e.to_string()
            .contains("max_output_bytes must be at least 1"),
        "{e}"
    );
    assert_eq!("ERROR".parse::<Utf8Errors>().unwrap(), Utf8Errors::Error);
    let e = "ignore".parse::<Utf8Errors>().unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Options);
}

#[test]
fn reassembly_options() {
    let d = ReassemblyOptions::default();
    assert_eq!(d, ReassemblyOptions::DEFAULT);
    assert_eq!(
        (d.max_pending, d.expire_after_ms),
        (Some(100), Some(60_000))
    );
    let unlimited = ReassemblyOptions::try_new(None, None, 1).unwrap();
    assert_eq!(
        unlimited,
        d.with_max_pending(None)
            .with_expire_after_ms(None)
            .with_max_message_size(1)
    );
    for (bad, text) in [
        (
            d.with_max_pending(Some(0)),
            "max_pending must be at least 1",
        ),
        (
            d.with_expire_after_ms(Some(-1)),
            "expire_after_ms must not be negative",
        ),
        (
            d.with_max_message_size(MAX_UNCOMPRESSED_SIZE_CAP + 1),
            "max_message_size 1073741825 exceeds",
        ),
    ] {
        let e = bad.checked().unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Options);
        assert!(e.to_string().contains(text), "{e}");
    }
}

#[test]
fn compact_options() {
    let d = CompactOptions::default();
    assert_eq!(d, CompactOptions::DEFAULT);
    assert!(d.order == Order::Publish && !d.retain_null_key && d.verify_checksum);
    let o = CompactOptions::try_new("Event-Time".parse().unwrap(), true, false, 5).unwrap();
    let built = d.with_order(Order::EventTime).with_retain_null_key(true);
    assert_eq!(
        o,
        built
            .with_verify_checksum(false)
            .with_max_uncompressed_size(5)
    );
    assert_eq!(
        "random".parse::<Order>().unwrap_err().kind(),
        ErrorKind::Options
    );
    let e = d
        .with_max_uncompressed_size(usize::MAX)
        .checked()
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Options);
}
