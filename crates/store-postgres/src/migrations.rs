//! The schema's migrations, oldest first: what [`schema::prepare`](crate::schema::prepare)
//! runs to bring a schema to [`SCHEMA_VERSION`](crate::SCHEMA_VERSION). Each is applied
//! once per schema and recorded by its version in `schema_migrations`: a migration that a
//! deployed database ran must keep its effect, so its text never changes (a test holds
//! each one's SHA-256).

/// Migrations: `MIGRATIONS[n]` takes a schema from version `n` to `n + 1`; its SQL is the
/// file `migrations/NNNN_name.sql` of this crate, `NNNN` being `n + 1`. Unqualified names:
/// the store's schema is first on the search path.
pub(crate) const MIGRATIONS: &[&str] = &[
    // 0 -> 1: the first schema.
    include_str!("../migrations/0001_tasks.sql"),
    // 1 -> 2: each task's status history (the dashboard's detail view), written by
    // statement triggers in the statement of every insert and status change, so in the same
    // transaction; the latest 64 entries per task kept (`mcp_tasks_core::HISTORY_MAX`);
    // deleted with the task (the foreign key cascades). Tasks stored before get one entry:
    // their current status.
    include_str!("../migrations/0002_history.sql"),
    // 2 -> 3: the notes an extension keeps beside its tasks (a gateway's upstream tasks),
    // deleted with the task (`notes`).
    include_str!("../migrations/0003_notes.sql"),
    // 3 -> 4: the sessions shared between replicas (`sessions`).
    include_str!("../migrations/0004_sessions.sql"),
    // 4 -> 5: the mailbox of running tasks' requests to their requestors (`inputs`).
    include_str!("../migrations/0005_inputs.sql"),
    // 5 -> 6: a task's change is announced after its commit by the store (`announce`), not
    // by a trigger in its transaction (which serialised the commits of all changes).
    include_str!("../migrations/0006_announce_after_commit.sql"),
    // 6 -> 7: the batch functions of group commit (`group`, `write`). Self-contained: it
    // only adds functions that call those of version 1.
    include_str!("../migrations/0007_batch_functions.sql"),
    // 7 -> 8: relayed messages too large for a notification (`relay`).
    include_str!("../migrations/0008_relay.sql"),
    // 8 -> 9: `create_tasks` set-based: one insert per batch, same signature and answers as
    // version 7's (`setbased`).
    include_str!("../migrations/0009_create_tasks_set_based.sql"),
    // 9 -> 10: the rate-limit buckets the replicas share (`buckets`).
    include_str!("../migrations/0010_buckets.sql"),
    // 10 -> 11: each relayed message counts against its session's owner, who may hold at
    // most a share of the total (`relay`). The function of version 8 stays for replicas of
    // the previous build during an upgrade.
    include_str!("../migrations/0011_relay_owner_share.sql"),
    // 11 -> 12: the requests of shared sessions waiting for an answer; only answers to
    // them are relayed (`answers`).
    include_str!("../migrations/0012_answers.sql"),
    // 12 -> 13: `finish_tasks` set-based: one update per batch, same signature and answers as
    // version 7's (`finish`).
    include_str!("../migrations/0013_finish_tasks_set_based.sql"),
    // 13 -> 14: the usage counters as a base plus insert-only deltas, and the writes of
    // one quota key without its lock when no limit applies to them (`usage`).
    include_str!("../migrations/0014_usage_deltas.sql"),
];

#[cfg(test)]
mod tests {
    use sha2::{Digest, Sha256};

    use super::MIGRATIONS;

    /// The SHA-256 of each migration as released, in order: a database that ran one
    /// keeps its effect, so its text never changes (a new migration is appended, with
    /// its hash).
    const RELEASED: &[&str] = &[
        "fda11eb5cd3ed04abbe61c9aaa5dd1c6c975e593f7b132fcfc41f5b85b7fc83c",
        "f62e69a67526a68261f55638e5dd6eaea3368b0e25a58b46eec8e5dcf89e65b5",
        "92902a1706a29b1a739fa7c5abefd3d20f9d6127b18ee0ba2c194275dad4feb9",
        "f983faffae6512b0e71fc480d049e486c36089be6eb0416194bdb49f6d3e1cba",
        "30a2f85dc97daebd2d5154d0bdbb16dd416ced5740b1b2c24e7502bf7ed91bca",
        "a32e0f4f34f9a201a418143a9fe7ccc67c6b4ae1294c44fa96a9003950a534b3",
        "a534d18bf6a8e22db510610cf3142e8eb2fcc2d59beefdd89d88b914fad32ae4",
        "2b67f3c4484c9731e6110f2167225f895d1041d6157a00667dc18a22ff362aa4",
        "1d7c1345662ad9fcc90e82a7e2a961a3a4f38156fc8943d0e7fcacb0842547c2",
        "08c9864bd5eafabcede35daffc5ba191c9c2905241a0018e12072f21c5094dcc",
        "8e5d5c8cdc2ae43b6e23dc8c854c043b8645225e61f5ad6e558859df795f5037",
        "f26b27d635b56562203922c35f09d8e88a8743192f1017a2c42a3c53e0fd9a98",
        "d9fdf9797317ada886890c93772fef44205d2da90110b7e78d7f4c0c72fdffde",
        "cff0e01e744e5ac046c71e3f1593b39d58e0f106847c426e9add5dee9ea53fa4",
    ];

    #[test]
    fn every_migration_keeps_the_bytes_it_was_released_with() {
        assert_eq!(
            MIGRATIONS.len(),
            RELEASED.len(),
            "a migration without its hash"
        );
        for (n, (sql, want)) in MIGRATIONS.iter().zip(RELEASED).enumerate() {
            let got: String = Sha256::digest(sql.as_bytes())
                .iter()
                .map(|b| format!("{b:02x}"))
                .collect();
            assert_eq!(&got, want, "migration {n} -> {} changed", n + 1);
        }
    }
}
