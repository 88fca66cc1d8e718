//! Compiles the .proto files with protox (pure Rust, no system protoc) and
//! generates prost messages plus tonic clients and servers from the descriptors.

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let proto_files = [
        "centroid/v1/errors.proto",
        "centroid/v1/worker.proto",
        "centroid/v1/coordinator.proto",
    ];
    for proto_file in proto_files {
        println!("cargo:rerun-if-changed={proto_file}");
    }
    let file_descriptor_set = protox::compile(proto_files, ["."])?;
    tonic_prost_build::configure()
        .build_client(true)
        .build_server(true)
        .compile_fds(file_descriptor_set)?;
    Ok(())
}
