//! The Centroid coordinator: sessions, planning, candidate search, dispatch. Lands with the coordinator issue.
