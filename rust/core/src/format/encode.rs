//! Entry encoder producing the bytes Pulsar's Java producer stores
//! (spec entry-format.md §11): presence-preserving metadata in ascending field
//! order, Java's batch header rules, CRC32C framing, optional broker prefix.

use base64::Engine as _;
use prost::Message as _;

use crate::error::{EntryError, Result};
use crate::format::compression::{compress, Codec};
use crate::format::crc::crc32c;
use crate::format::frame::{
    split_broker_entry_metadata, MAGIC_BROKER_ENTRY_METADATA, MAGIC_CHECKSUM,
};
use crate::proto;

/// A message key: text, or binary bytes (written base64 with the b64 flag).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Key {
    Text(String),
    Binary(Vec<u8>),
}

impl Key {
    /// The `partition_key` text and `partition_key_b64_encoded` flag Java writes.
    fn wire(&self) -> (String, bool) {
        match self {
            Key::Text(s) => (s.clone(), false),
            Key::Binary(b) => (base64::engine::general_purpose::STANDARD.encode(b), true),
        }
    }
}

/// One message to encode. `value: None` is a null value.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MessageInput {
    pub value: Option<Vec<u8>>,
    pub key: Option<Key>,
    pub properties: Vec<(String, String)>,
    pub event_time: Option<u64>,
    pub sequence_id: Option<u64>,
    pub ordering_key: Option<Vec<u8>>,
}

#[derive(Debug, Clone)]
pub struct EncodeOptions {
    /// `None`: a batch when there is more than one message.
    pub batch: Option<bool>,
    pub compression: Codec,
    pub producer_name: String,
    /// Sequence id of the first message (later ones count up from it unless
    /// a message sets its own).
    pub sequence_id: u64,
    pub publish_time: u64,
    pub broker_timestamp: Option<u64>,
    pub broker_index: Option<u64>,
    pub checksum: bool,
    /// Entry-level properties in MessageMetadata (e.g. `entry.format`).
    pub properties: Vec<(String, String)>,
}

impl Default for EncodeOptions {
    fn default() -> Self {
        EncodeOptions {
            batch: None,
            compression: Codec::None,
            producer_name: EncodeOptions::DEFAULT_PRODUCER_NAME.into(),
            sequence_id: 0,
            publish_time: 0,
            broker_timestamp: None,
            broker_index: None,
            checksum: true,
            properties: vec![],
        }
    }
}

/// Builders from the defaults: `EncodeOptions::default().with_compression(Codec::Lz4)`.
impl EncodeOptions {
    /// The producer name written when none is given.
    pub const DEFAULT_PRODUCER_NAME: &'static str = "pulsar-entries";

    #[must_use]
    pub fn with_batch(mut self, v: Option<bool>) -> Self {
        self.batch = v;
        self
    }

    #[must_use]
    pub fn with_compression(mut self, v: Codec) -> Self {
        self.compression = v;
        self
    }

    #[must_use]
    pub fn with_producer_name(mut self, v: String) -> Self {
        self.producer_name = v;
        self
    }

    #[must_use]
    pub fn with_sequence_id(mut self, v: u64) -> Self {
        self.sequence_id = v;
        self
    }

    #[must_use]
    pub fn with_publish_time(mut self, v: u64) -> Self {
        self.publish_time = v;
        self
    }

    #[must_use]
    pub fn with_broker_timestamp(mut self, v: Option<u64>) -> Self {
        self.broker_timestamp = v;
        self
    }

    #[must_use]
    pub fn with_broker_index(mut self, v: Option<u64>) -> Self {
        self.broker_index = v;
        self
    }

    #[must_use]
    pub fn with_checksum(mut self, v: bool) -> Self {
        self.checksum = v;
        self
    }

    #[must_use]
    pub fn with_properties(mut self, v: Vec<(String, String)>) -> Self {
        self.properties = v;
        self
    }
}

fn key_values(pairs: &[(String, String)]) -> Vec<proto::KeyValue> {
    pairs
        .iter()
        .map(|(k, v)| proto::KeyValue {
            key: k.clone(),
            value: v.clone(),
        })
        .collect()
}

/// Encodes messages into one stored entry.
pub fn encode_entry(messages: &[MessageInput], opts: &EncodeOptions) -> Result<Vec<u8>> {
    if messages.is_empty() {
        return Err(EntryError::Encode(
            "an entry needs at least one message".into(),
        ));
    }
    let batch = opts.batch.unwrap_or(messages.len() > 1);
    if !batch && messages.len() > 1 {
        return Err(EntryError::Encode(format!(
            "batch=False takes exactly one message, got {}",
            messages.len()
        )));
    }
    let sequence_of =
        |i: usize, m: &MessageInput| m.sequence_id.unwrap_or(opts.sequence_id + i as u64);
    let mut md = proto::MessageMetadata {
        producer_name: opts.producer_name.clone(),
        sequence_id: sequence_of(0, &messages[0]),
        publish_time: opts.publish_time,
        ..Default::default()
    };
    let first = &messages[0];
    if let Some(key) = &first.key {
        let (text, b64) = key.wire();
        md.partition_key = Some(text);
        md.partition_key_b64_encoded = Some(b64);
    }
    md.ordering_key = first.ordering_key.clone();
    let raw_payload = if batch {
        let mut buf = Vec::new();
        for (i, m) in messages.iter().enumerate() {
            let value = m.value.as_deref().unwrap_or_default();
            let mut smm = proto::SingleMessageMetadata {
                properties: key_values(&m.properties),
                payload_size: i32::try_from(value.len())
                    .map_err(|_| EntryError::Encode(format!("message {i} is larger than 2 GiB")))?,
                event_time: m.event_time,
                ordering_key: m.ordering_key.clone(),
                sequence_id: Some(sequence_of(i, m)),
                null_value: m.value.is_none().then_some(true),
                ..Default::default()
            };
            if let Some(key) = &m.key {
                let (text, b64) = key.wire();
                smm.partition_key = Some(text);
                smm.partition_key_b64_encoded = Some(b64);
            }
            buf.extend_from_slice(&(smm.encoded_len() as u32).to_be_bytes());
            smm.encode(&mut buf).expect("Vec grows");
            buf.extend_from_slice(value);
        }
        md.properties = key_values(&opts.properties);
        md.num_messages_in_batch = Some(messages.len() as i32);
        md.highest_sequence_id = Some(sequence_of(
            messages.len() - 1,
            &messages[messages.len() - 1],
        ));
        buf
    } else {
        md = single_metadata(first, opts, md.sequence_id);
        first.value.clone().unwrap_or_default()
    };
    // Java writes uncompressed_size on single messages always, on batches only
    // when compressed.
    let payload = compress_into(&mut md, &raw_payload, opts, !batch)?;
    Ok(frame_entry(
        &md,
        &payload,
        opts.checksum,
        broker_entry_metadata(opts, 0).as_ref(),
    ))
}

/// Sets `compression` / `uncompressed_size` and compresses the whole payload.
fn compress_into(
    md: &mut proto::MessageMetadata,
    raw_payload: &[u8],
    opts: &EncodeOptions,
    always_size: bool,
) -> Result<Vec<u8>> {
    let uncompressed_size = u32::try_from(raw_payload.len())
        .map_err(|_| EntryError::Encode("payload is larger than 4 GiB".into()))?;
    if opts.compression != Codec::None {
        md.compression = Some(opts.compression.to_proto());
    }
    if always_size || opts.compression != Codec::None {
        md.uncompressed_size = Some(uncompressed_size);
    }
    compress(opts.compression, raw_payload)
}

/// The broker prefix for the `n`-th entry written with `opts`: each entry
/// holding one message advances the broker's index by one.
fn broker_entry_metadata(opts: &EncodeOptions, n: u64) -> Option<proto::BrokerEntryMetadata> {
    (opts.broker_timestamp.is_some() || opts.broker_index.is_some()).then(|| {
        proto::BrokerEntryMetadata {
            broker_timestamp: opts.broker_timestamp,
            index: opts.broker_index.map(|i| i + n),
        }
    })
}

/// Encodes one message as Pulsar's Java producer stores it with chunking
/// enabled (spec chunks-processors-offload.md §1.1–§1.2): the whole payload is
/// compressed once, the compressed bytes are cut into `chunk_size`-byte
/// slices, and every slice becomes its own entry carrying the full metadata
/// plus `uuid = "<producer_name>-<sequence_id>"`, `num_chunks_from_msg`,
/// `total_chunk_msg_size` (the compressed length) and `chunk_id`.
///
/// A payload that fits in one chunk is an ordinary non-batched entry without
/// chunk fields, as Java writes it. With `broker_index` set, chunk `k` gets
/// index `broker_index + k` (one message per entry, as the broker counts).
pub fn encode_chunked(
    message: &MessageInput,
    opts: &EncodeOptions,
    chunk_size: usize,
) -> Result<Vec<Vec<u8>>> {
    if chunk_size == 0 {
        return Err(EntryError::Encode("chunk_size must be at least 1".into()));
    }
    if opts.batch == Some(true) {
        return Err(EntryError::Encode(
            "chunked messages are never batched (Java rejects batching with chunking)".into(),
        ));
    }
    let sequence_id = message.sequence_id.unwrap_or(opts.sequence_id);
    let mut md = single_metadata(message, opts, sequence_id);
    let raw_payload = message.value.as_deref().unwrap_or_default();
    let payload = compress_into(&mut md, raw_payload, opts, true)?;
    let chunks = payload.len().max(1).div_ceil(chunk_size);
    if chunks == 1 {
        return Ok(vec![frame_entry(
            &md,
            &payload,
            opts.checksum,
            broker_entry_metadata(opts, 0).as_ref(),
        )]);
    }
    let total = i32::try_from(payload.len()).map_err(|_| {
        EntryError::Encode(format!(
            "compressed payload of {} bytes exceeds total_chunk_msg_size's int32 range",
            payload.len()
        ))
    })?;
    let num_chunks = i32::try_from(chunks)
        .map_err(|_| EntryError::Encode(format!("{chunks} chunks exceed the int32 range")))?;
    md.uuid = Some(format!("{}-{}", opts.producer_name, sequence_id));
    md.num_chunks_from_msg = Some(num_chunks);
    md.total_chunk_msg_size = Some(total);
    Ok(payload
        .chunks(chunk_size)
        .enumerate()
        .map(|(k, slice)| {
            md.chunk_id = Some(k as i32);
            frame_entry(
                &md,
                slice,
                opts.checksum,
                broker_entry_metadata(opts, k as u64).as_ref(),
            )
        })
        .collect())
}

/// MessageMetadata of a non-batched message (payload fields not yet set).
fn single_metadata(
    m: &MessageInput,
    opts: &EncodeOptions,
    sequence_id: u64,
) -> proto::MessageMetadata {
    let mut md = proto::MessageMetadata {
        producer_name: opts.producer_name.clone(),
        sequence_id,
        publish_time: opts.publish_time,
        ..Default::default()
    };
    if let Some(key) = &m.key {
        let (text, b64) = key.wire();
        md.partition_key = Some(text);
        md.partition_key_b64_encoded = Some(b64);
    }
    md.ordering_key = m.ordering_key.clone();
    let mut props = m.properties.clone();
    props.extend(opts.properties.iter().cloned());
    md.properties = key_values(&props);
    md.event_time = m.event_time;
    md.null_value = m.value.is_none().then_some(true);
    md
}

/// Frames serialized metadata and a (compressed) payload into entry bytes.
pub fn frame_entry(
    md: &proto::MessageMetadata,
    payload: &[u8],
    checksum: bool,
    bem: Option<&proto::BrokerEntryMetadata>,
) -> Vec<u8> {
    let md_len = md.encoded_len();
    let mut out = Vec::with_capacity(32 + md_len + payload.len());
    if let Some(bem) = bem {
        out.extend_from_slice(&MAGIC_BROKER_ENTRY_METADATA);
        out.extend_from_slice(&(bem.encoded_len() as u32).to_be_bytes());
        bem.encode(&mut out).expect("Vec grows");
    }
    let crc_at = out.len() + 2;
    if checksum {
        out.extend_from_slice(&MAGIC_CHECKSUM);
        out.extend_from_slice(&[0; 4]);
    }
    let covered_from = out.len();
    out.extend_from_slice(&(md_len as u32).to_be_bytes());
    md.encode(&mut out).expect("Vec grows");
    out.extend_from_slice(payload);
    if checksum {
        let crc = crc32c(&out[covered_from..]);
        out[crc_at..crc_at + 4].copy_from_slice(&crc.to_be_bytes());
    }
    out
}

/// Adds or replaces the `0e 02` broker-entry-metadata prefix. The checksum
/// section lies after it and is left untouched.
pub fn set_broker_entry_metadata(
    entry: &[u8],
    bem: &proto::BrokerEntryMetadata,
) -> Result<Vec<u8>> {
    let (_, rest) = split_broker_entry_metadata(entry)?;
    let mut out = Vec::with_capacity(entry.len() - rest + 16);
    out.extend_from_slice(&MAGIC_BROKER_ENTRY_METADATA);
    out.extend_from_slice(&(bem.encoded_len() as u32).to_be_bytes());
    bem.encode(&mut out).expect("Vec grows");
    out.extend_from_slice(&entry[rest..]);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builders_start_from_the_defaults() {
        let o = EncodeOptions::default()
            .with_compression(Codec::Lz4)
            .with_sequence_id(7);
        assert_eq!((o.compression, o.sequence_id), (Codec::Lz4, 7));
        assert_eq!(o.producer_name, EncodeOptions::DEFAULT_PRODUCER_NAME);
        assert!(o.checksum && o.batch.is_none());
    }

    fn text(s: &str) -> Option<Key> {
        Some(Key::Text(s.into()))
    }

    #[test]
    fn spec_e1_e2_e3_are_encoder_exact() {
        let opts = EncodeOptions {
            producer_name: "test-producer".into(),
            sequence_id: 7,
            publish_time: 1_700_000_000_000,
            ..Default::default()
        };
        let hello = MessageInput {
            value: Some(b"hello".to_vec()),
            ..Default::default()
        };
        let e1 = encode_entry(std::slice::from_ref(&hello), &opts).unwrap();
        assert_eq!(
            hex::encode(&e1),
            "0e01cdeba9a50000001a0a0d746573742d70726f647563657210071880d095ffbc31480568656c6c6f"
        );
        let e1_plain = encode_entry(
            std::slice::from_ref(&hello),
            &EncodeOptions {
                checksum: false,
                ..opts.clone()
            },
        )
        .unwrap();
        assert_eq!(
            hex::encode(e1_plain),
            "0000001a0a0d746573742d70726f647563657210071880d095ffbc31480568656c6c6f"
        );
        let e2 = encode_entry(
            std::slice::from_ref(&hello),
            &EncodeOptions {
                broker_timestamp: Some(1_700_000_000_123),
                broker_index: Some(0),
                ..opts.clone()
            },
        )
        .unwrap();
        assert_eq!(
            hex::encode(e2),
            "0e020000000908fbd095ffbc3110000e01cdeba9a50000001a0a0d746573742d70726f647563657210071880d095ffbc31480568656c6c6f"
        );
        let e3 = encode_entry(
            &[
                MessageInput {
                    value: Some(b"hello".to_vec()),
                    key: text("k1"),
                    ..Default::default()
                },
                MessageInput {
                    value: Some(b"world".to_vec()),
                    ..Default::default()
                },
            ],
            &EncodeOptions {
                sequence_id: 0,
                ..opts
            },
        )
        .unwrap();
        assert_eq!(
            hex::encode(e3),
            "0e014995f652000000240a0d746573742d70726f647563657210001880d095ffbc3132026b315802880100c001010000000a12026b3118053000400068656c6c6f0000000418054001776f726c64"
        );
    }

    #[test]
    fn stamping_keeps_the_checksummed_part() {
        let e = encode_entry(&[MessageInput::default()], &EncodeOptions::default()).unwrap();
        let bem = proto::BrokerEntryMetadata {
            broker_timestamp: Some(5),
            index: Some(9),
        };
        let stamped = set_broker_entry_metadata(&e, &bem).unwrap();
        assert!(stamped.ends_with(&e));
        let restamped = set_broker_entry_metadata(
            &stamped,
            &proto::BrokerEntryMetadata {
                broker_timestamp: None,
                index: Some(1),
            },
        )
        .unwrap();
        assert_eq!(hex::encode(&restamped[..8]), "0e02000000021001");
        assert!(restamped.ends_with(&e));
    }

    #[test]
    fn spec_chunk_metadata_vector_is_encoder_exact() {
        let opts = EncodeOptions {
            producer_name: "test-producer".into(),
            sequence_id: 9,
            publish_time: 1_700_000_000_000,
            checksum: false,
            ..Default::default()
        };
        let value = MessageInput {
            value: Some(b"0123456789".to_vec()),
            ..Default::default()
        };
        let chunks = encode_chunked(&value, &opts, 5).unwrap();
        assert_eq!(chunks.len(), 2);
        let md0 = "0a0d746573742d70726f647563657210091880d095ffbc31480ad2010f746573742d70726f64756365722d39d80102e0010ae80100";
        assert_eq!(
            hex::encode(&chunks[0]),
            format!("{:08x}{md0}{}", md0.len() / 2, hex::encode(b"01234"))
        );
        // Chunk 1 differs only in chunk_id and its slice.
        let md1 = md0.replace("e80100", "e80101");
        assert_eq!(
            hex::encode(&chunks[1]),
            format!("{:08x}{md1}{}", md1.len() / 2, hex::encode(b"56789"))
        );
        // A payload that fits one chunk is an ordinary single entry.
        let one = encode_chunked(&value, &opts, 10).unwrap();
        let plain = encode_entry(std::slice::from_ref(&value), &opts).unwrap();
        assert_eq!(one, vec![plain]);
    }

    #[test]
    fn chunks_slice_the_compressed_stream_and_count_broker_indexes() {
        let value: Vec<u8> = (0..50_000u32).map(|i| (i % 97) as u8).collect();
        let opts = EncodeOptions {
            compression: Codec::Zstd,
            producer_name: "p".into(),
            sequence_id: 3,
            broker_index: Some(100),
            broker_timestamp: Some(5),
            ..Default::default()
        };
        let msg = MessageInput {
            value: Some(value.clone()),
            key: text("k"),
            ..Default::default()
        };
        let chunks = encode_chunked(&msg, &opts, 100).unwrap();
        let compressed = compress(Codec::Zstd, &value).unwrap();
        assert_eq!(chunks.len(), compressed.len().div_ceil(100));
        let mut joined = Vec::new();
        for (k, c) in chunks.iter().enumerate() {
            let e = crate::format::frame::EntryView::parse(c, true).unwrap();
            let md = e.metadata;
            assert_eq!(md.uuid, Some("p-3"));
            assert_eq!(md.chunk_id, Some(k as i32));
            assert_eq!(md.num_chunks_from_msg, Some(chunks.len() as i32));
            assert_eq!(md.total_chunk_msg_size, Some(compressed.len() as i32));
            assert_eq!(md.uncompressed_size, Some(value.len() as u32));
            assert_eq!(md.partition_key, Some("k"));
            assert_eq!(md.sequence_id, 3);
            assert_eq!(e.broker_entry_metadata.unwrap().index, Some(100 + k as u64));
            joined.extend_from_slice(e.payload);
        }
        assert_eq!(joined, compressed);
        assert!(encode_chunked(&msg, &opts, 0).is_err());
    }

    #[test]
    fn rejects_unencodable_requests() {
        assert!(encode_entry(&[], &EncodeOptions::default()).is_err());
        let two = vec![MessageInput::default(); 2];
        assert!(encode_entry(
            &two,
            &EncodeOptions {
                batch: Some(false),
                ..Default::default()
            }
        )
        .is_err());
    }
}
