//! gRPC contracts of Centroid (Coordinator and Worker services). The protos land with the worker and coordinator issues.
