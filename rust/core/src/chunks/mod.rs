//! Chunked-message reassembly over decoded rows (spec
//! chunks-processors-offload.md §1.3), robust to what real topics hold:
//! duplicated, resent, interleaved and orphaned chunks.
//!
//! The input is the decode output (one row per entry for chunks, in topic
//! order). Chunk rows are grouped by `(partition, uuid)`; each whole message
//! becomes one row, and nothing is lost: every chunk row ends up in exactly
//! one output row's `chunk_ledger_ids` / `chunk_entry_ids`.
//!
//! | input | outcome (`status`) |
//! |---|---|
//! | chunk 0 … N−1 in order | `complete`: payload concatenated, decompressed once with the last chunk's codec and `uncompressed_size` |
//! | `chunk_id` ≤ the last one held | `duplicate`: one row for the ignored chunk; the message continues |
//! | a new chunk 0 for a pending uuid | the pending message is `incomplete`; a new one starts |
//! | a gap, or a chunk of an unknown uuid | `incomplete`: the message can no longer complete; its later chunks join it until its last chunk, a new chunk 0, expiry or the end |
//! | pending longer than `expire_after_ms` of stream time | `expired` |
//! | more than `max_pending` messages pending | the oldest is `evicted` |
//! | pending at the end of the input | `incomplete` |
//!
//! Stream time is the largest `publish_time` seen so far in the partition
//! (every chunk of a message carries the same publish time, so the clock must
//! come from the stream). Unlike Java, which stops its expiry walk at the first
//! live context, every context past its deadline expires: decisions then depend
//! only on one uuid's own chunks plus the stream clock, which is what lets
//! [`reassemble_partition`] and [`finish_leftovers`] reproduce the in-process
//! result on a partitioned input. Eviction is FIFO by start, so a message's
//! fate depends only on messages that started after it; the partition pass is
//! therefore exact for messages that start and end in its partition.
//!
//! Memory: at most `max_pending` live messages hold bytes, each at most
//! `max_message_size` (checked on chunk 0's `total_chunk_msg_size` before any
//! buffer is allocated). Incomplete messages keep chunk ids only, at most
//! [`ORPHAN_LIMIT`] of them per partition.
//!
//! Files: `options` (options, statuses, output schema), `columns` (input
//! column access), `state` (messages under assembly), `machine` (the state
//! machine), `output` (outcomes → rows), `api` (the entry points).

mod api;
mod columns;
mod machine;
mod options;
mod output;
mod state;

pub use api::{
    finish_leftovers, finished_schema, leftover_schema, reassemble, reassemble_partition,
    reassemble_table, PartitionReassembler, PartitionResult, Reassembler,
};
pub use options::{
    output_schema, ReassemblyOptions, ORPHAN_LIMIT, ROLE_COLUMN, STATUS_COMPLETE, STATUS_DUPLICATE,
    STATUS_EVICTED, STATUS_EXPIRED, STATUS_INCOMPLETE, WATERMARK_COLUMN,
};
