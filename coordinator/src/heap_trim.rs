//! Giving freed heap memory back to the system after a large request. glibc's
//! allocator keeps what a request freed in its arenas (a refused 50 MB or
//! 100,000-device submission left the coordinator at 550–600 MB resident for
//! good); `malloc_trim` returns the free pages of every arena. The coordinator
//! binary allocates with mimalloc (`main.rs`), which keeps a freed page in the
//! heap of the thread that freed it until that thread allocates again (an idle
//! coordinator stayed at 158 MB after such requests): `mi_collect` gives them back
//! (39 MB; BENCHMARKS.md, issue 29, farm-cpu). glibc's trim stays for what glibc
//! allocates, there and in other binaries linking this crate.

/// Inputs at least this large are followed by a trim.
pub const LARGE_REQUEST_BYTES: usize = 1024 * 1024;

// mimalloc, the coordinator binary's allocator, linked wherever this crate is
extern crate mimalloc as _;

unsafe extern "C" {
    /// mimalloc: frees what the calling thread's heap keeps and, with `force`,
    /// purges the freed pages of every heap's arenas.
    fn mi_collect(force: bool);
}

/// Returns the allocator's free pages to the system: mimalloc's at once, on the
/// calling thread (the one that freed the request), glibc's on a blocking thread
/// (a trim of a large heap takes milliseconds).
pub fn release_freed_memory() {
    // SAFETY: mi_collect only walks mimalloc's own heaps and arenas
    unsafe { mi_collect(true) };
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
