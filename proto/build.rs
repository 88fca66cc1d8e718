//! Compiles the .proto files with protox (pure Rust, no system protoc) and
//! generates prost messages plus tonic clients and servers from the descriptors;
//! the encoded descriptor set goes to `OUT_DIR` for server reflection.

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let proto_files = [
        "centroid/v1/errors.proto",
        "centroid/v1/worker.proto",
        "centroid/v1/coordinator.proto",
    ];
    for proto_file in proto_files {
        println!("cargo:rerun-if-changed={proto_file}");
    }
    let mut compiler = protox::Compiler::new(["."])?;
    compiler.include_imports(true).open_files(proto_files)?;
    let out_dir = std::path::PathBuf::from(std::env::var("OUT_DIR")?);
    std::fs::write(
        out_dir.join("centroid_descriptor_set.bin"),
        compiler.encode_file_descriptor_set(),
    )?;
    let file_descriptor_set = compiler.file_descriptor_set();
    tonic_prost_build::configure()
        .build_client(true)
        .build_server(true)
        .compile_fds(file_descriptor_set)?;
    Ok(())
}
