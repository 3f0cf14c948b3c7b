//! Set-based terminal transitions (schema version 13,
//! `migrations/0013_finish_tasks_set_based.sql`): `finish_tasks` decides every row of a
//! batch in memory and writes the applied ones in one `UPDATE ... FROM unnest(...)`, so
//! the statement triggers of `tasks` (the usage counters, the history) run once per batch
//! instead of once per row, as `create_tasks` does for creations (`setbased`).
//!
//! Each caller still gets its exact answer, the one the row-by-row version (`finish_task`
//! per row, in the order of the rows' `store_bytes` shard, then the batch's order) gave:
//!
//! * The locks first, in the same global order as before: the advisory locks of the
//!   batch's quota keys (`hashtext` order), the store-wide one when a row has a store-wide
//!   byte limit, then the tasks' rows (`FOR UPDATE`, in shard order: the order in which the
//!   row-by-row updates locked them). A locked row's status cannot change before the
//!   update, so the compare-and-swap is decided on the statuses read.
//! * The counts are read once, after the locks, and walked in the row-by-row order with
//!   running totals: a row whose task is missing, or whose status (as left by the rows
//!   before it in the batch) is not one its transition may leave, is not applied (a
//!   completion and a cancellation of one task in one batch: the first wins, the second
//!   sees the terminal status); an applied row whose outcome would pass its key's or the
//!   store's byte limit, with the bytes of the rows applied before it counted, stores the
//!   `failed` transition the caller prepared for that limit instead, as `finish_task`
//!   does.
//! * One `UPDATE` writes the applied rows (still guarded by the status condition) and
//!   returns each one's record with its row number; the rows not applied return nothing.
//!
//! A batch holding two transitions of one task that could both apply (never the case for
//! terminal transitions: no status leads out of a terminal one) raises an error, so that
//! the batch is written row by row instead (`group`'s fallback).
