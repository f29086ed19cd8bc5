//! Unit tests of MessageMetadata and SingleMessageMetadata views.

use super::*;
use crate::proto;
use prost::Message;

fn unhex(s: &str) -> Vec<u8> {
    hex::decode(s).unwrap()
}

#[test]
fn parses_spec_e3_header() {
    let md = unhex("0a0d746573742d70726f647563657210001880d095ffbc3132026b315802880100c00101");
    let v = MessageMetadataView::parse(&md, 0).unwrap();
    assert_eq!(v.producer_name, "test-producer");
    assert_eq!(v.publish_time, 1_700_000_000_000);
    assert_eq!(v.partition_key, Some("k1"));
    assert_eq!(v.partition_key_b64_encoded, Some(false));
    assert_eq!(v.num_messages_in_batch, Some(2));
    assert_eq!(v.highest_sequence_id, Some(1));
    assert!(v.is_batch());
    assert_eq!(v.uncompressed_size, None);
}

#[test]
fn batch_of_one_is_a_batch() {
    let raw = unhex("0a0170100018015801");
    let v = MessageMetadataView::parse(&raw, 0).unwrap();
    assert!(v.is_batch());
    assert_eq!(v.num_messages(), 1);
}

#[test]
fn compacted_batch_indexes_unpacked_and_packed() {
    let raw = unhex("0a0170100018015804f80100f80102");
    let v = MessageMetadataView::parse(&raw, 0).unwrap();
    assert_eq!(v.compacted_batch_indexes().collect::<Vec<_>>(), vec![0, 2]);
    assert_eq!(v.last_compacted_batch_index, Some(2));
    // Packed form: tag fa 01, length 2, values 0 and 2.
    let raw = unhex("0a0170100018015804fa01020002");
    let v = MessageMetadataView::parse(&raw, 0).unwrap();
    assert_eq!(v.compacted_batch_indexes().collect::<Vec<_>>(), vec![0, 2]);
    assert_eq!(v.compacted_batch_indexes_count(), 2);
}

#[test]
fn missing_required_fields_are_errors() {
    // Only producer_name and sequence_id: no publish_time.
    let err = MessageMetadataView::parse(&unhex("0a01701000"), 10).unwrap_err();
    assert_eq!(
        err.to_string(),
        "MessageMetadata at entry offset 10 is missing required field `publish_time`"
    );
    let err = SingleMessageMetadataView::parse(&unhex("12026b31"), 4).unwrap_err();
    assert!(err.to_string().contains("payload_size"), "{err}");
}

#[test]
fn view_agrees_with_prost_on_every_field() {
    let md = proto::MessageMetadata {
        producer_name: "p".into(),
        sequence_id: 3,
        publish_time: 4,
        properties: vec![
            proto::KeyValue {
                key: "a".into(),
                value: "1".into(),
            },
            proto::KeyValue {
                key: "b".into(),
                value: "2".into(),
            },
        ],
        replicated_from: Some("r".into()),
        partition_key: Some("k".into()),
        replicate_to: vec!["c1".into(), "c2".into()],
        compression: Some(3),
        uncompressed_size: Some(77),
        num_messages_in_batch: Some(5),
        event_time: Some(6),
        encryption_keys: vec![proto::EncryptionKeys {
            key: "ek".into(),
            value: vec![1, 2],
            metadata: vec![proto::KeyValue {
                key: "m".into(),
                value: "n".into(),
            }],
        }],
        encryption_algo: Some("algo".into()),
        encryption_param: Some(vec![9; 12]),
        schema_version: Some(vec![0, 1]),
        partition_key_b64_encoded: Some(false),
        ordering_key: Some(b"ok".to_vec()),
        deliver_at_time: Some(-5),
        marker_type: Some(21),
        txnid_least_bits: Some(7),
        txnid_most_bits: Some(8),
        highest_sequence_id: Some(9),
        null_value: Some(true),
        uuid: Some("u".into()),
        num_chunks_from_msg: Some(2),
        total_chunk_msg_size: Some(100),
        chunk_id: Some(1),
        null_partition_key: Some(false),
        compacted_batch_indexes: vec![1, 3, -1],
        schema_id: Some(vec![4]),
    };
    let raw = md.encode_to_vec();
    let v = MessageMetadataView::parse(&raw, 0).unwrap();
    assert_eq!(v.producer_name, "p");
    assert_eq!((v.sequence_id, v.publish_time), (3, 4));
    assert_eq!(
        v.properties.iter().collect::<Vec<_>>(),
        vec![("a", "1"), ("b", "2")]
    );
    assert_eq!(v.replicated_from, Some("r"));
    assert_eq!(v.partition_key, Some("k"));
    assert_eq!(v.replicate_to().collect::<Vec<_>>(), vec!["c1", "c2"]);
    assert_eq!(v.compression, Some(3));
    assert_eq!(v.uncompressed_size, Some(77));
    assert_eq!(v.num_messages_in_batch, Some(5));
    assert_eq!(v.event_time, Some(6));
    let keys: Vec<_> = v.encryption_keys().collect();
    assert_eq!(keys.len(), 1);
    assert_eq!((keys[0].key, keys[0].value), ("ek", &[1u8, 2][..]));
    assert_eq!(
        keys[0].metadata.iter().collect::<Vec<_>>(),
        vec![("m", "n")]
    );
    assert_eq!(v.encryption_algo, Some("algo"));
    assert_eq!(v.encryption_param, Some(&[9u8; 12][..]));
    assert_eq!(v.schema_version, Some(&[0u8, 1][..]));
    assert_eq!(v.partition_key_b64_encoded, Some(false));
    assert_eq!(v.ordering_key, Some(&b"ok"[..]));
    assert_eq!(v.deliver_at_time, Some(-5));
    assert_eq!(v.marker_type, Some(21));
    assert_eq!((v.txnid_least_bits, v.txnid_most_bits), (Some(7), Some(8)));
    assert_eq!(v.highest_sequence_id, Some(9));
    assert_eq!(v.null_value, Some(true));
    assert_eq!(v.uuid, Some("u"));
    assert_eq!(
        (v.num_chunks_from_msg, v.total_chunk_msg_size, v.chunk_id),
        (Some(2), Some(100), Some(1))
    );
    assert_eq!(v.null_partition_key, Some(false));
    assert_eq!(
        v.compacted_batch_indexes().collect::<Vec<_>>(),
        vec![1, 3, -1]
    );
    assert_eq!(v.last_compacted_batch_index, Some(-1));
    assert_eq!(v.schema_id, Some(&[4u8][..]));
    assert!(v.is_encrypted() && v.is_chunk() && v.is_batch());
}

#[test]
fn key_values_read_the_same_on_the_fast_path_and_the_general_one() {
    let kv = |k: &str, v: &str| {
        proto::KeyValue {
            key: k.into(),
            value: v.into(),
        }
        .encode_to_vec()
    };
    let long = "x".repeat(200);
    for buf in [
        kv("type", "event"),
        kv("", ""),
        kv(&long, "v"),
        kv("k", &long),
        kv("ключ", "значение"),
        unhex("1201760a016b"),     // value before key
        unhex("0a016b1201761801"), // an extra field
    ] {
        let general = {
            let mut r = Reader::new(&buf, 0, Space::Entry, "KeyValue");
            let (mut k, mut v) = ("", "");
            while let Some((f, val, at)) = r.next_field().unwrap() {
                match f {
                    1 => k = r.expect_str(val, at, "key").unwrap(),
                    2 => v = r.expect_str(val, at, "value").unwrap(),
                    _ => {}
                }
            }
            (k, v)
        };
        let (k, v, replaced) = parse_key_value(&buf, 0, Space::Entry, None).unwrap();
        assert!(!replaced);
        assert_eq!((k, v), general);
        assert_eq!(validated_key_value(&buf), general);
    }
    assert!(plain_key_value(&kv("type", "event")).is_some());
    assert!(plain_key_value(&kv(&long, "v")).is_none());
    // Invalid UTF-8 in the fast shape is still an error, located by field.
    let err = parse_key_value(&unhex("0a01ff120176"), 0, Space::Entry, None).unwrap_err();
    assert!(err.to_string().contains("`key` is not UTF-8"), "{err}");
    // Missing value.
    assert!(parse_key_value(&unhex("0a016b"), 0, Space::Entry, None).is_err());
}

#[test]
fn unknown_fields_are_skipped() {
    let mut raw = unhex("0a0170100018015801");
    raw.extend_from_slice(&[0x98, 0x02, 0x05]); // field 35 varint
    assert!(MessageMetadataView::parse(&raw, 0).is_ok());
}
