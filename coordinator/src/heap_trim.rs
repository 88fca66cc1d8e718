//! Giving freed heap memory back to the system after a large request. glibc's
//! allocator keeps what a request freed in its arenas (a refused 50 MB or
//! 100,000-device submission left the coordinator at 550–600 MB resident for
//! good); `malloc_trim` returns the free pages of every arena. The coordinator
//! binary allocates with mimalloc (`main.rs`), whose heap this does not reach (what
//! mimalloc keeps after a large request: BENCHMARKS.md, issue 29, farm-cpu); it
//! still trims what glibc allocates, there and in other binaries linking this crate.

/// Inputs at least this large are followed by a trim.
pub const LARGE_REQUEST_BYTES: usize = 1024 * 1024;

/// Returns the allocator's free pages to the system, on a blocking thread (a trim
/// of a large heap takes milliseconds).
pub fn release_freed_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    tokio::task::spawn_blocking(|| {
        // SAFETY: malloc_trim only walks the allocator's own arenas; 0 = keep no pad.
        let released = unsafe { libc::malloc_trim(0) };
        tracing::debug!(
            released = released == 1,
            "heap trimmed after a large request"
        );
    });
}
