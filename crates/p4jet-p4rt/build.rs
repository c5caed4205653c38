//! Compiles the P4Runtime schema (`proto/`) with protox: no protoc, no network.

use prost::Message;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let files = [
        "proto/p4/v1/p4runtime.proto",
        "proto/p4/tmp/p4config.proto",
        "proto/google/rpc/code.proto",
    ];
    println!("cargo:rerun-if-changed=proto");
    let fds = protox::compile(files, ["proto"])?;
    // kept for tests (the schema is compared with the official clients') and tools
    let out = std::path::PathBuf::from(std::env::var("OUT_DIR")?);
    std::fs::write(out.join("p4runtime_descriptor.bin"), fds.encode_to_vec())?;
    tonic_prost_build::configure()
        .build_client(true)
        .build_server(true)
        .compile_fds(fds)?;
    Ok(())
}
