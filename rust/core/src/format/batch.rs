//! Batch payload scan (spec entry-format.md §5): `[u32 size][SingleMessageMetadata][payload]`
//! repeated, with the compacted shapes of §5.5.

use crate::error::{EntryError, FormatError, Result};
use crate::format::metadata::{MessageMetadataView, SingleMessageMetadataView};
use crate::format::wire::Lossy;

/// One message of a batch, borrowing from the batch buffer.
#[derive(Debug, Clone, Copy)]
pub struct BatchRecord<'a> {
    /// Batch index: the record position, or the mapped index from
    /// `compacted_batch_indexes` in the retained-only PIP-429 shape.
    pub index: i32,
    pub metadata: SingleMessageMetadataView<'a>,
    pub payload: &'a [u8],
    /// The whole record as stored: size word, SingleMessageMetadata, payload.
    pub record: &'a [u8],
}

/// A reusable list of records: its allocation outlives the buffers that the
/// records of one entry borrow, so a scan allocates it once, not per entry.
#[derive(Default)]
pub struct RecordBuf(Vec<BatchRecord<'static>>);

impl RecordBuf {
    /// Runs `f` with the (empty) list, typed for the buffer at hand.
    pub fn with<'a, R>(&mut self, f: impl FnOnce(&mut Vec<BatchRecord<'a>>) -> R) -> R {
        let mut list = recycle(std::mem::take(&mut self.0));
        let result = f(&mut list);
        self.0 = recycle(list);
        result
    }
}

/// Empties `v` and re-types it; the in-place `collect` keeps the allocation
/// (same layout, nothing to convert).
fn recycle<'b>(mut v: Vec<BatchRecord<'_>>) -> Vec<BatchRecord<'b>> {
    v.clear();
    v.into_iter().map(|_| unreachable!()).collect()
}

/// Smallest possible record: a size word and a 2-byte SingleMessageMetadata.
const MIN_RECORD: usize = 6;

#[inline(always)]
fn read_record<'a>(
    buf: &'a [u8],
    pos: usize,
    index: usize,
    lossy: Option<&'a Lossy>,
) -> Result<(SingleMessageMetadataView<'a>, &'a [u8], usize)> {
    let fail = |offset: usize, reason: String| {
        EntryError::from(FormatError::Batch {
            index,
            offset,
            reason,
        })
    };
    let size_bytes = buf.get(pos..pos + 4).ok_or_else(|| {
        fail(
            pos,
            format!("truncated size word: {} bytes left", buf.len() - pos),
        )
    })?;
    let smm_size = u32::from_be_bytes(size_bytes.try_into().unwrap()) as usize;
    let smm_start = pos + 4;
    let smm_end = smm_start
        .checked_add(smm_size)
        .filter(|&end| end <= buf.len())
        .ok_or_else(|| {
            fail(
                pos,
                format!(
                    "SingleMessageMetadata size {smm_size} exceeds the {} bytes left",
                    buf.len() - smm_start
                ),
            )
        })?;
    let smm = SingleMessageMetadataView::parse_with(&buf[smm_start..smm_end], smm_start, lossy)
        .map_err(|e| fail(smm_start, e.to_string()))?;
    let payload_size = usize::try_from(smm.payload_size).map_err(|_| {
        fail(
            smm_start,
            format!("negative payload_size {}", smm.payload_size),
        )
    })?;
    let end = smm_end
        .checked_add(payload_size)
        .filter(|&end| end <= buf.len())
        .ok_or_else(|| {
            fail(
                smm_end,
                format!(
                    "payload_size {payload_size} exceeds the {} bytes left",
                    buf.len() - smm_end
                ),
            )
        })?;
    Ok((smm, &buf[smm_end..end], end))
}

/// Splits `buf` (decompressed, decrypted) into its records, appending to `out`.
///
/// Without `compacted_batch_indexes`, exactly `num_messages_in_batch` records
/// are read (trailing bytes are ignored, as Java does). With it, records are
/// read to the end of the buffer and the count decides the shape: as many as
/// the list means retained-only (indexes come from the list), as many as
/// `num_messages_in_batch` means placeholders kept (indexes are positions).
///
/// Text in the records is replaced, not an error, when `header` was parsed
/// lossily (`header.lossy`).
pub fn split_batch<'a>(
    buf: &'a [u8],
    header: &MessageMetadataView<'a>,
    out: &mut Vec<BatchRecord<'a>>,
) -> Result<()> {
    let declared = header.num_messages();
    let n = usize::try_from(declared).map_err(|_| {
        EntryError::from(FormatError::Batch {
            index: 0,
            offset: 0,
            reason: format!("negative num_messages_in_batch {declared}"),
        })
    })?;
    if n == 0 {
        // No producer writes an empty batch; reporting it keeps the entry accounted for.
        return Err(EntryError::from(FormatError::Batch {
            index: 0,
            offset: 0,
            reason: "num_messages_in_batch is 0: the batch holds no message".into(),
        }));
    }
    let retained = header.compacted_batch_indexes_count();
    // Bound the reservation by what the buffer could possibly hold.
    out.reserve(n.min(buf.len() / MIN_RECORD + 1));
    let first = out.len();
    let mut pos = 0;
    if retained == 0 {
        for index in 0..n {
            let (metadata, payload, next) = read_record(buf, pos, index, header.lossy)?;
            out.push(BatchRecord {
                index: index as i32,
                metadata,
                payload,
                record: &buf[pos..next],
            });
            pos = next;
        }
        return Ok(());
    }
    let max = n.max(retained);
    let mut count = 0;
    while pos < buf.len() {
        if count == max {
            return Err(EntryError::from(FormatError::Batch {
                index: count,
                offset: pos,
                reason: format!(
                    "more records than num_messages_in_batch ({n}) and compacted_batch_indexes ({retained})"
                ),
            }));
        }
        let (metadata, payload, next) = read_record(buf, pos, count, header.lossy)?;
        out.push(BatchRecord {
            index: count as i32,
            metadata,
            payload,
            record: &buf[pos..next],
        });
        pos = next;
        count += 1;
    }
    if count == retained {
        for (record, index) in out[first..]
            .iter_mut()
            .zip(header.compacted_batch_indexes())
        {
            record.index = index;
        }
        Ok(())
    } else if count == n {
        Ok(())
    } else {
        Err(EntryError::from(FormatError::Batch {
            index: count,
            offset: pos,
            reason: format!(
                "payload holds {count} records, matching neither num_messages_in_batch ({n}) nor compacted_batch_indexes ({retained})"
            ),
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unhex(s: &str) -> Vec<u8> {
        hex::decode(s).unwrap()
    }

    fn header(hexed: &str) -> Vec<u8> {
        unhex(hexed)
    }

    #[test]
    fn spec_e3_batch_buffer() {
        let h = header("0a0d746573742d70726f647563657210001880d095ffbc3132026b315802880100c00101");
        let h = MessageMetadataView::parse(&h, 0).unwrap();
        let buf = unhex("0000000a12026b3118053000400068656c6c6f0000000418054001776f726c64");
        let mut out = vec![];
        split_batch(&buf, &h, &mut out).unwrap();
        assert_eq!(out.len(), 2);
        assert_eq!((out[0].index, out[0].payload), (0, &b"hello"[..]));
        assert_eq!(out[0].metadata.partition_key, Some("k1"));
        assert_eq!(out[0].metadata.sequence_id, Some(0));
        assert_eq!((out[1].index, out[1].payload), (1, &b"world"[..]));
        assert_eq!(out[1].metadata.partition_key, None);
        assert_eq!(out[1].metadata.sequence_id, Some(1));
    }

    // Header {p, 0, 1, num_messages_in_batch 4, compacted_batch_indexes [0, 2]}.
    const CBI_HEADER: &str = "0a0170100018015804f80100f80102";
    fn record(payload: &[u8], compacted_out: bool) -> Vec<u8> {
        let mut smm = vec![0x18, payload.len() as u8];
        if compacted_out {
            smm.extend([0x20, 0x01]);
        }
        let mut r = (smm.len() as u32).to_be_bytes().to_vec();
        r.extend(smm);
        r.extend(payload);
        r
    }

    #[test]
    fn pip429_retained_only_maps_indexes() {
        let h = unhex(CBI_HEADER);
        let h = MessageMetadataView::parse(&h, 0).unwrap();
        let buf = [record(b"a", false), record(b"c", false)].concat();
        let mut out = vec![];
        split_batch(&buf, &h, &mut out).unwrap();
        assert_eq!(
            out.iter().map(|r| (r.index, r.payload)).collect::<Vec<_>>(),
            vec![(0, &b"a"[..]), (2, &b"c"[..])]
        );
    }

    #[test]
    fn pip429_with_placeholders_uses_positions() {
        let h = unhex(CBI_HEADER);
        let h = MessageMetadataView::parse(&h, 0).unwrap();
        let buf = [
            record(b"a", false),
            record(b"", true),
            record(b"c", false),
            record(b"", true),
        ]
        .concat();
        let mut out = vec![];
        split_batch(&buf, &h, &mut out).unwrap();
        let shape: Vec<_> = out
            .iter()
            .map(|r| (r.index, r.metadata.is_compacted_out()))
            .collect();
        assert_eq!(shape, vec![(0, false), (1, true), (2, false), (3, true)]);
    }

    #[test]
    fn pip429_with_inconsistent_count_is_an_error() {
        let h = unhex(CBI_HEADER);
        let h = MessageMetadataView::parse(&h, 0).unwrap();
        let buf = [
            record(b"a", false),
            record(b"b", false),
            record(b"c", false),
        ]
        .concat();
        let err = split_batch(&buf, &h, &mut vec![]).unwrap_err();
        assert!(err.to_string().contains("matching neither"), "{err}");
    }

    #[test]
    fn bad_records_are_located() {
        let h = unhex("0a0170100018015802"); // 2 messages
        let h = MessageMetadataView::parse(&h, 0).unwrap();
        let one = record(b"abc", false);
        let err = split_batch(&one, &h, &mut vec![]).unwrap_err();
        assert_eq!(
            err.to_string(),
            "batch record 1 at batch-buffer offset 9: truncated size word: 0 bytes left"
        );
        let mut lying = record(b"abc", false);
        lying[5] = 50; // payload_size 50
        let err = split_batch(&lying, &h, &mut vec![]).unwrap_err();
        assert!(err.to_string().contains("payload_size 50 exceeds"), "{err}");
    }

    #[test]
    fn an_empty_batch_is_an_error_not_a_silent_drop() {
        // Found by cargo fuzz: num_messages_in_batch = 0 used to decode to no rows at all.
        let h = unhex("0a0170100018015800");
        let h = MessageMetadataView::parse(&h, 0).unwrap();
        let err = split_batch(&[], &h, &mut vec![]).unwrap_err();
        assert_eq!(
            err.to_string(),
            "batch record 0 at batch-buffer offset 0: num_messages_in_batch is 0: the batch holds no message"
        );
    }

    #[test]
    fn record_buf_keeps_its_allocation() {
        let h = unhex("0a0170100018015802");
        let h = MessageMetadataView::parse(&h, 0).unwrap();
        let buf = [record(b"a", false), record(b"b", false)].concat();
        let mut records = RecordBuf::default();
        let n = records.with(|list| {
            split_batch(&buf, &h, list).unwrap();
            list.len()
        });
        assert_eq!(n, 2);
        let cap = records.0.capacity();
        assert!(cap >= 2 && records.0.is_empty());
        let copy = buf.clone();
        records.with(|list| {
            assert!(list.is_empty() && list.capacity() == cap);
            split_batch(&copy, &h, list).unwrap();
        });
        assert_eq!(records.0.capacity(), cap);
    }

    #[test]
    fn huge_declared_count_does_not_allocate_it() {
        let h = unhex("0a01701000180158ffffffff07"); // num_messages_in_batch = i32::MAX
        let h = MessageMetadataView::parse(&h, 0).unwrap();
        let one = record(b"a", false);
        let mut out = vec![];
        assert!(split_batch(&one, &h, &mut out).is_err());
        assert!(out.capacity() < 16);
    }
}
