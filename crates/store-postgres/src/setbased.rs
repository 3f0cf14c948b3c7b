//! Set-based creations (schema version 9, `migrations/0009_create_tasks_set_based.sql`):
//! `create_tasks` decides every row of a batch in memory and inserts the accepted ones in
//! one `INSERT ... SELECT`, so the statement triggers of `tasks` (the usage counters, the
//! history, the list fence) run once per batch instead of once per row.
//!
//! Each caller still gets its exact answer. The function takes, up front and in one global
//! order, every lock it will need: the advisory locks of the batch's quota keys (in
//! `hashtext` order), the store-wide one when a row has a store-wide byte limit, then the
//! counter rows, `quota_usage` in key order and then `store_bytes` in shard order: the
//! order of the statement triggers of the sweeps (`usage_add`), so a batch and a sweep no
//! longer deadlock (a batch used to lock them row by row). The counts are then read once
//! (after the locks, so in a snapshot no other creation of these keys can change) and
//! walked in the batch's order with running totals: a row is a duplicate when its id is
//! stored or was accepted earlier in the batch; otherwise it is refused when over a limit
//! with the counts as they stand after the rows accepted before it (what `create_task`
//! would have read had the rows run one by one in that order), else accepted and added
//! to the running counts. A refused row answers its counts, from which the caller names
//! the limit (`Limits::check_create`), as before.
//!
//! A task id inserted by a concurrent transaction between the read and the insert (another
//! replica's creation of the same id) is answered `duplicate` (`ON CONFLICT DO NOTHING`);
//! the rows after it in the batch were then checked against counts that included it, so
//! they can only have been refused conservatively, never admitted over a limit.
