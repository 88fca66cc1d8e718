//! The Centroid worker node: a gRPC service over a supervised pool of KLayout processes. Lands with the worker issue.
