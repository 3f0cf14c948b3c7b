//! How long a client may cache what does not change while a process runs.

/// How long a client may cache `server/discover` and `tools/list`, in ms. The tool list
/// and capabilities of a process never change, but a restart may bring other ones: one
/// minute keeps clients current after an upgrade without a request per call.
pub(crate) const CACHE_TTL_MS: u64 = 60_000;
