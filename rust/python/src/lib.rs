//! `pulsar_entries._native`: the thin PyO3 layer over `pulsar-entries-core`.
//!
//! Arrow data crosses the boundary through the Arrow C stream interface
//! (pyo3-arrow), so input entries and output messages are never copied
//! between Python and Rust. The GIL is released while entries are processed.
//! Every core error becomes a Python exception in one place, [`errors`].

// Decoding hands every output buffer to pyarrow, which frees it when the table
// dies; the next call then allocates the same sizes again. glibc returns those
// pages to the OS in between (trimming, mmap for large blocks), so each call
// faulted its output in afresh: a fifth of decode time on small messages.
// mimalloc keeps freed pages for reuse.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

mod broker;
mod chunks;
mod cluster;
mod compaction;
mod convert;
mod entry;
mod errors;
mod ids;
mod kafka;
mod offload;
mod pass;
mod processors;
mod typed;

use pyo3::prelude::*;

/// The module: every function and class the files above define, and the
/// error classes.
#[pymodule]
mod _native {
    use super::*;

    #[pymodule_export]
    use broker::{find_position_by_offset, find_position_by_time, stamp};
    #[pymodule_export]
    use chunks::{finish_leftovers, reassemble_chunks, reassemble_partition, PartitionReassembler};
    #[pymodule_export]
    use cluster::{
        bookie_address, compacted_ledger, ledger_metadata, ledger_node_from_text, ledger_path,
        managed_ledger_info, partition_count, partition_name, read_bookie_dirs,
        strip_rocksdb_header, topic_paths, BookieReader,
    };
    #[pymodule_export]
    use compaction::{
        aborted_transactions, compacted_last_position, compaction_candidates, find_by_publish_time,
        from_ledger_records, keyed_messages, last_batch_indexes, max_entry_position,
        rebuild_entries, strategic_rebuild, to_ledger_records, topic_last_position, CompactorPy,
        NativeStrategy, StrategicFolder, StrategicPartitionPass, SurvivorFolder,
    };
    #[pymodule_export]
    use entry::{
        decode, encode_chunked, encode_entry, entry_metadata, parse_entry,
        set_broker_entry_metadata, with_message_ids,
    };
    #[pymodule_export]
    use ids::{deserialize_message_id, serialize_message_id};
    #[pymodule_export]
    use kafka::{encode_kafka_batch, encode_kafka_control_batch, kop_entry};
    #[pymodule_export]
    use offload::{
        offload_blocks, parse_offload_index, parse_offload_name, read_offload_blocks,
        read_offload_object, write_offload_ledger, write_offload_streaming,
    };
    #[pymodule_export]
    use processors::{
        builtin_processor, message_at, parse_metadata, pulsar_messages, single_message,
    };
    #[pymodule_export]
    use typed::{schema_entry, schema_locations, typed_decode};

    #[pymodule_export]
    const DEFAULT_MAX_UNCOMPRESSED_SIZE: usize = pulsar_entries_core::DEFAULT_MAX_UNCOMPRESSED_SIZE;

    #[pymodule_init]
    fn init(m: &Bound<'_, PyModule>) -> PyResult<()> {
        m.add("__version__", env!("CARGO_PKG_VERSION"))?;
        errors::register(m)
    }
}
