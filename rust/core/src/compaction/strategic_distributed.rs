//! Building blocks for running the [strategic compactor](super::strategic)
//! on a distributed engine (Spark) with results identical to the in-process
//! [`StrategicCompactor`](super::strategic::StrategicCompactor):
//!
//! 1. [`PartitionPass`]: one engine partition's entries, in topic order →
//!    [rows](row_schema) of four kinds: complete keyed messages with their
//!    values ([`KIND_MESSAGE`]), per-entry plans ([`KIND_PLAN`]: an entry kept
//!    whole with a note, a retained key-less slot), and the chunks the
//!    partition cannot finish on its own ([`KIND_CHUNK`], with the entry bytes)
//!    plus restart markers ([`KIND_RESTART`]).
//! 2. [`StrategicFold`]: those rows shuffled by `(partition, key)` and sorted
//!    by `(partition, key, ledger_id, entry_id, batch_index, kind)` → plan rows.
//!    Each key is folded with the strategy exactly as phase one does
//!    in-process; leftover chunks are assembled there, in position order, with
//!    the same [`MessageReader`], so a chunked message crossing partitions
//!    enters the fold at its last chunk as it does in-process. Memory: one
//!    key's state and its chunked messages under assembly.
//! 3. [`rebuild`]: entries joined with their plans (a `note`, or a `slots`
//!    list of `(batch_index, value)`) → compacted entries, written by the
//!    in-process phase two.
//!
//! Why the partition pass is exact: chunks of different messages never
//! interact, and a chunk 0 always restarts its message. So, per message id
//! `(partition, key, uuid)`, everything from the first chunk 0 a partition
//! holds onwards can be assembled locally; what comes before it in the
//! partition (continuations of an earlier partition's message) and what is
//! still assembling at the partition's end are sent on, with a restart
//! marker at that first chunk 0 so the fold abandons an earlier partition's
//! assembly there, as the in-process reader does. This needs each engine
//! partition to hold a contiguous range of the topic partition's entries.
//!
//! Files: `rows` (the row format the stages exchange), `partition` (stage 1),
//! `fold` (stage 2), `rebuild` (stage 3).

mod fold;
mod partition;
mod rebuild;
mod rows;

pub use fold::StrategicFold;
pub use partition::PartitionPass;
pub use rebuild::{rebuild, rebuild_schema};
pub use rows::{row_schema, KIND_CHUNK, KIND_MESSAGE, KIND_PLAN, KIND_RESTART};

#[cfg(test)]
mod tests;
