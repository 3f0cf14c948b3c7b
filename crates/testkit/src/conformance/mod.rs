//! The conformance suite every [`TaskStore`] must pass.
//!
//! Run it from a test of the store's crate with
//! [`conformance_tests!`](crate::conformance_tests), which writes one test per check, so a
//! failure names the check:
//!
//! ```ignore
//! mod memory_store {
//!     mcp_tasks_testkit::conformance_tests! {
//!         make: || async { Arc::new(MemoryStore::new()) as Store },
//!         leases: ProcessLocal,
//!     }
//! }
//! ```
//!
//! Each check takes a fresh store (or a factory, for the checks that need many) and panics
//! with a message saying which invariant broke. The invariants are those of
//! [`TaskStore`]: transitions are atomic compare-and-swaps on the status, a terminal task
//! never changes again and its outcome bytes never change, waiters wake after every change,
//! listing is keyset pagination in `seq` order that neither skips nor repeats, TTLs and
//! per-owner limits hold, and `fail_orphans` fails only tasks without a live executor.
//!
//! Use a multi-threaded runtime: the race checks run their contenders in parallel.

use std::sync::Arc;

use mcp_tasks_core::TaskStore;

mod helpers;
mod history;
mod leases;
mod limits;
mod listing;
mod races;
mod records;

pub use helpers::{new_task, quota_key, unique_id};
pub use history::status_history;
pub use leases::{
    cursor_key_stable, durable_reopen, lease_orphans, process_local_leases, wake_ups,
};
pub use limits::{
    max_active_per_owner, quota_keys_not_owners, stored_bytes_limits, stored_tasks_limit,
};
pub use listing::{
    keyset_pagination, newest_first_pages, owner_isolation, pagination_under_concurrent_inserts,
    ttl_deletion,
};
pub use races::{RaceOp, race_case, racing_terminals};
pub use records::{
    create_get_round_trip, duplicate_id_refused, failing_writes_fail_alone,
    illegal_transitions_rejected, legal_transitions, terminal_never_changes,
};

/// A store under test.
pub type Store = Arc<dyn TaskStore>;

/// What a store promises about executors and their leases.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Leases {
    /// Leases are recorded by `heartbeat`; `fail_orphans` fails every non-terminal task
    /// whose executor has no live lease (expired, unknown, or no executor at all).
    Tracked,
    /// The store lives and dies with its one process (the memory store): every executor
    /// is alive as long as the store is, so `fail_orphans` never fails anything.
    ProcessLocal,
}

/// An arbitrary but fixed "now" (2023-11-14T22:13:20Z) the checks count from.
pub const T0: i64 = 1_700_000_000_000;

/// One `#[tokio::test]` (multi-threaded) per check of the suite, each on fresh stores from
/// `make`.
///
/// `make` is an expression giving a factory (`Fn() -> impl Future<Output = Store>`); it is
/// evaluated once in each test, so a factory that owns a temporary directory gets a new one
/// per test. `leases` is `Tracked` or `ProcessLocal` (see [`Leases`]); it selects the lease
/// check (`lease_orphans` or `process_local_leases`). The calling crate needs `tokio` (with
/// the `macros` and `rt-multi-thread` features) among its dev-dependencies. Invoke it inside
/// a module named after the store, since the tests are named after the checks.
#[macro_export]
macro_rules! conformance_tests {
    (make: $make:expr, leases: $leases:ident $(,)?) => {
        $crate::conformance_tests!(@store $make, $leases;
            create_get_round_trip,
            duplicate_id_refused,
            legal_transitions,
            illegal_transitions_rejected,
            terminal_never_changes,
            failing_writes_fail_alone,
            ttl_deletion,
            keyset_pagination,
            newest_first_pages,
            pagination_under_concurrent_inserts,
            owner_isolation,
            max_active_per_owner,
            quota_keys_not_owners,
            stored_tasks_limit,
            status_history,
        );
        $crate::conformance_tests!(@leases $make, $leases;
            stored_bytes_limits,
            wake_ups,
        );

        #[::tokio::test(flavor = "multi_thread", worker_threads = 4)]
        async fn racing_terminals() {
            let make = $make;
            $crate::conformance::racing_terminals(
                &make,
                $crate::conformance::Leases::$leases,
            )
            .await;
        }

        #[::tokio::test(flavor = "multi_thread", worker_threads = 4)]
        async fn cursor_key_stable() {
            let make = $make;
            $crate::conformance::cursor_key_stable(make().await, make().await).await;
        }

        $crate::conformance_tests!(@lease_check $make, $leases);
    };
    // Checks taking a fresh store.
    (@store $make:expr, $leases:ident; $($check:ident),* $(,)?) => {
        $(
            #[::tokio::test(flavor = "multi_thread", worker_threads = 4)]
            async fn $check() {
                let make = $make;
                $crate::conformance::$check(make().await).await;
            }
        )*
    };
    // Checks taking a fresh store and what the store promises about leases.
    (@leases $make:expr, $leases:ident; $($check:ident),* $(,)?) => {
        $(
            #[::tokio::test(flavor = "multi_thread", worker_threads = 4)]
            async fn $check() {
                let make = $make;
                $crate::conformance::$check(
                    make().await,
                    $crate::conformance::Leases::$leases,
                )
                .await;
            }
        )*
    };
    (@lease_check $make:expr, Tracked) => {
        $crate::conformance_tests!(@store $make, Tracked; lease_orphans);
    };
    (@lease_check $make:expr, ProcessLocal) => {
        $crate::conformance_tests!(@store $make, ProcessLocal; process_local_leases);
    };
}
