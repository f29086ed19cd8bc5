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

mod chunks;
mod cluster;
mod compaction;
mod convert;
mod entry;
mod errors;
mod format;
mod inputs;
mod metadata;
mod offload;
mod options;
mod pass;
mod processors;
mod typed;

use pyo3::prelude::*;

/// The module: every function and class the files above define, the core's
/// functions over plain values ([`calls`]), and the error classes.
#[pymodule]
mod _native {
    use super::*;

    #[pymodule_export]
    use chunks::{finish_leftovers, reassemble_chunks, reassemble_partition, PartitionReassembler};
    #[pymodule_export]
    use cluster::{read_bookie_dirs, BookieClientOptions, BookieReader};
    #[pymodule_export]
    use compaction::{
        aborted_transactions, compacted_last_position, compaction_candidates, find_by_publish_time,
        from_ledger_records, keyed_messages, max_entry_position, rebuild_entries,
        strategic_rebuild, to_ledger_records, topic_last_position,
    };
    #[pymodule_export]
    use compaction::{
        last_batch_indexes, CompactorPy, NativeStrategy, StrategicFolder, StrategicPartitionPass,
        SurvivorFolder,
    };
    #[pymodule_export]
    use entry::{decode, entry_metadata, CryptoKeys};
    #[pymodule_export]
    use format::{
        builtin_processor, deserialize_message_id, encode_chunked, encode_entry,
        encode_kafka_batch, encode_kafka_control_batch, encode_kop_entry, find_position_by_offset,
        find_position_by_time, message_at, parse_entry, parse_metadata, pulsar_messages,
        serialize_message_id, set_broker_entry_metadata, single_message, stamp, with_message_ids,
    };
    #[pymodule_export]
    use metadata::{
        ledger_metadata, ledger_node_from_text, parse_offload_name, partition_name,
        resolve_ledgers, resolve_topic, schema_entry, schema_locations, strip_rocksdb_header,
        topic_paths, LayoutRecord, LedgerRecord, PartitionRecord,
    };
    #[pymodule_export]
    use offload::{
        offload_blocks, parse_offload_index, read_offload_blocks, read_offload_object,
        write_offload_ledger, write_offload_streaming, OffloadOptions,
    };
    #[pymodule_export]
    use options::{CompactionOptions, DecodeOptions, ReassemblyOptions};
    #[pymodule_export]
    use typed::typed_decode;

    #[pymodule_export]
    const DEFAULT_MAX_UNCOMPRESSED_SIZE: usize = pulsar_entries_core::DEFAULT_MAX_UNCOMPRESSED_SIZE;

    // The defaults of `OffloadOptions` that `pulsar_entries.offload` names.
    use pulsar_entries_core::offload::OffloadOptions as Off;
    #[pymodule_export]
    const DEFAULT_OFFLOAD_BLOCK_SIZE: usize = Off::DEFAULT_BLOCK_SIZE;
    #[pymodule_export]
    const DEFAULT_STREAMING_BLOCK_SIZE: usize = Off::DEFAULT_STREAMING_BLOCK_SIZE;
    #[pymodule_export]
    const DEFAULT_MANAGED_LEDGER: &str = Off::DEFAULT_MANAGED_LEDGER;

    #[pymodule_init]
    fn init(m: &Bound<'_, PyModule>) -> PyResult<()> {
        m.add("__version__", env!("CARGO_PKG_VERSION"))?;
        errors::register(m)
    }
}
