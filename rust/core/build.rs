//! Compiles `proto/pulsar_entries.proto` with protox (a pure-Rust protobuf
//! compiler), so building needs no system `protoc`.
use std::path::PathBuf;

fn main() {
    let proto_dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../proto");
    let proto = proto_dir.join("pulsar_entries.proto");
    println!("cargo:rerun-if-changed={}", proto.display());
    let fds = protox::compile([&proto], [&proto_dir]).expect("compile proto/pulsar_entries.proto");
    prost_build::Config::new()
        .compile_fds(fds)
        .expect("generate Rust types from proto/pulsar_entries.proto");
}
