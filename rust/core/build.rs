//! Compiles the protobuf definitions in `proto/` with protox (a pure-Rust
//! protobuf compiler), so building needs no system `protoc`.
use std::path::PathBuf;

fn main() {
    let proto_dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../proto");
    let protos = [
        proto_dir.join("pulsar_entries.proto"),
        proto_dir.join("offload.proto"),
        proto_dir.join("bookkeeper.proto"),
    ];
    for proto in &protos {
        println!("cargo:rerun-if-changed={}", proto.display());
    }
    let fds = protox::compile(&protos, [&proto_dir]).expect("compile proto/*.proto");
    prost_build::Config::new()
        .compile_fds(fds)
        .expect("generate Rust types from proto/*.proto");
}
