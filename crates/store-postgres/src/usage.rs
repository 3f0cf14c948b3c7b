//! The usage counters as a base plus insert-only deltas (schema version 14,
//! `migrations/0014_usage_deltas.sql`), so that the writes of one quota key that no limit
//! applies to run side by side instead of one transaction at a time.
//!
//! * **What is counted.** The statement triggers of `tasks` (insert, terminal update,
//!   delete) insert, in the statement's own transaction, one `usage_deltas` row per quota
//!   key the statement changed: its tasks and bytes added (negative for a delete). No
//!   counter row is locked or updated by a writer. The usage of a key is its
//!   `quota_usage` row plus the sum of its deltas; the store's bytes are the sum of
//!   `store_bytes` plus the sum of every delta's bytes, each read in one statement, hence
//!   one snapshot (`key_usage`, `store_usage`).
//! * **Exact by construction.** A delta commits with the change it counts, or not at all:
//!   in every snapshot, base + committed deltas = the committed rows. The fold
//!   (`fold_usage`) deletes committed deltas (`FOR UPDATE SKIP LOCKED`: the deltas another
//!   fold holds are left to it) and adds them to the base rows in one transaction, so no
//!   snapshot sees a delta both in the base and in the table, or in neither. Folds lock the
//!   base rows in key order and then the `store_bytes` shards in shard order, and a
//!   transaction folds at most once: folds cannot deadlock.
//! * **Who locks.** Spec of the limits (`Limits`): a creation is refused when it would pass
//!   its requester's active tasks, stored tasks or stored bytes, or the store's bytes; an
//!   outcome past a byte limit fails its task instead. A write to which no limit applies
//!   takes no lock and only adds its deltas. A write to which one applies
//!   (`create_task`/`create_tasks`: a row with any `max_*`; `finish_task`/`finish_tasks`:
//!   a row with `max_bytes`) takes its key's lock before it reads the counts and holds it
//!   until its commit. The lock of a key is four lanes (advisory locks; lane 0 is the
//!   key's lock of earlier versions): a writer takes all four (`key_lock_all`), then the
//!   store-wide lock under a store-wide limit, and reads exact counts, no other limited
//!   writer of the key being in flight. The exception, `create_tasks` under limits on
//!   counts of tasks only (active, stored; no byte limit): it takes one free lane
//!   (`key_lock_lane`), reads the counts, and keeps the lane only when they leave room for
//!   its rows plus 3 x 64, the most that the (at most 3) other lane holders of the key can
//!   add (each has at most 64 rows of the key); otherwise the lane is released with the
//!   block that took it and it takes all four. Why that is exact: take the committed
//!   writer `Z` whose snapshot came last; every writer committed before that snapshot is
//!   in its counts, every other committed one was in flight at it, holding another lane
//!   of the key (at most 3, at most 64 rows each), so the stored count is at most `Z`'s
//!   count + its rows + 3 x 64, within the limit. A refusal is only decided under all
//!   four lanes, on exact counts. Deltas are exact by construction, and the next limited
//!   reader counts the unlimited writers' ones once committed.
//! * **Caveat.** The limits of one key must be the same for every writer of it: replicas
//!   sharing one database must run with the same limits (a replica without limits writes
//!   without the lock, so a limited replica's check could race with it; replicas that
//!   each have some limit of the same kind exclude each other through the lanes).
//! * **Folding.** The expiry sweep folds up to [`FOLD_MAX`] deltas of every key
//!   ([`FOLD`], after its delete, about once a second); a writer under a limit on stored
//!   tasks or bytes folds its keys' deltas when they are more than 64 (and every delta,
//!   under a store-wide limit, when there are more than 256), so that its reads stay
//!   short. A creation under a limit on active tasks alone reads no counter (the active
//!   tasks are counted on the partial index).

/// Fold up to [`FOLD_MAX`] committed deltas of every key into the base counters (one
/// statement, one transaction); the number folded.
pub(crate) const FOLD: &str = "SELECT fold_usage(NULL, $1)";

/// The most deltas one sweep folds.
pub(crate) const FOLD_MAX: i32 = 10_000;
