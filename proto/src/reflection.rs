//! gRPC server reflection (`grpc.reflection.v1`) of Centroid's services, so that
//! generic tools (grpcurl, grpcui) list and call them without the .proto files.

use tonic_reflection::pb::v1::server_reflection_server::{
    ServerReflection, ServerReflectionServer,
};

/// The encoded `FileDescriptorSet` of `centroid.v1` (with its imports), made by `build.rs`.
pub const FILE_DESCRIPTOR_SET: &[u8] =
    include_bytes!(concat!(env!("OUT_DIR"), "/centroid_descriptor_set.bin"));

/// The reflection service describing `centroid.v1` and the encoded descriptor sets
/// in `also` (e.g. `grpc.health.v1`'s). The sets are constants compiled into the
/// binaries (checked by this module's test): one that does not decode is a build
/// defect, hence the panic.
pub fn reflection_service(also: &[&'static [u8]]) -> ServerReflectionServer<impl ServerReflection> {
    let mut builder = tonic_reflection::server::Builder::configure()
        .register_encoded_file_descriptor_set(FILE_DESCRIPTOR_SET);
    for descriptor_set in also {
        builder = builder.register_encoded_file_descriptor_set(descriptor_set);
    }
    builder
        .build_v1()
        .expect("the descriptor sets compiled into the binary decode")
}

#[cfg(test)]
mod tests {
    use prost::Message;

    use super::*;

    #[test]
    fn the_descriptor_set_describes_every_service_and_builds_a_reflection_service() {
        let set = prost_types::FileDescriptorSet::decode(FILE_DESCRIPTOR_SET).unwrap();
        let services: Vec<String> = set
            .file
            .iter()
            .flat_map(|file| {
                file.service
                    .iter()
                    .map(move |service| format!("{}.{}", file.package(), service.name()))
            })
            .collect();
        for service in [
            "centroid.v1.Worker",
            "centroid.v1.Coordinator",
            "centroid.v1.Jobs",
        ] {
            assert!(services.iter().any(|name| name == service), "{services:?}");
        }
        let _service = reflection_service(&[]);
    }
}
