//! The process's allocator: mimalloc instead of the system's (glibc) malloc, told to give
//! freed memory back to the system at once.
//!
//! Why mimalloc: a request allocates and frees dozens of small blocks (headers, JSON
//! values, strings, futures): ~75 per `tasks/get`, and glibc's `malloc`/`free` were ~20 %
//! of its instructions. Measured with `bench/guard.sh` (docs/performance.md, "Per-request
//! work and the allocator"): 13 % fewer instructions per `tasks/get` and 20 % per task
//! creation on the memory store, the same build with and without this allocator.
//!
//! Why purge at once: by default mimalloc keeps freed pages for 10 ms (and arenas for
//! ten times that) before it returns them, and after a burst of large requests it held
//! far more than glibc did: the bound test `http_storage::large_requests_leave_bounded_memory`
//! (ten 4 MiB requests on the SQLite store) saw 116-124 MiB resident against 45-58 MiB
//! with glibc, over that test's 120 MiB cap. With a purge delay of 0 the same test sees
//! 22-46 MiB (SQLite) and 99-103 MiB (memory store, which keeps 80 MiB of it).
//! `MIMALLOC_PURGE_DELAY` in the environment still overrides it.

/// The global allocator of the `mcp-tasks` binary.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// `mi_option_purge_delay` of mimalloc's `mi_option_e` (the 16th option, in v2 and v3 of
/// the library that `libmimalloc-sys` 0.1.49 builds; that crate does not name it).
const MI_OPTION_PURGE_DELAY: std::ffi::c_int = 15;

#[allow(unsafe_code)]
unsafe extern "C" {
    /// mimalloc: `void mi_option_set(mi_option_t option, long value)`.
    fn mi_option_set(option: std::ffi::c_int, value: std::ffi::c_long);
}

/// Freed memory goes back to the system at once (purge delay 0), unless
/// `MIMALLOC_PURGE_DELAY` says otherwise.
#[allow(unsafe_code)]
pub(crate) fn purge_at_once() {
    if std::env::var_os("MIMALLOC_PURGE_DELAY").is_none() {
        // SAFETY: `mi_option_set` only stores the option's value (an atomic write in
        // mimalloc's option table); any thread may call it at any time.
        unsafe { mi_option_set(MI_OPTION_PURGE_DELAY, 0) };
    }
}
