//! Set-based creations (`create_tasks`, schema version 9): one batch mixing accepted rows,
//! duplicates (stored, and earlier in the same batch) and rows over each limit answers
//! every row exactly, on counts that run through the batch, and leaves the usage counters
//! equal to the rows. Set-based terminal transitions (`finish_tasks`, module `finish`):
//! the same for a batch mixing applied rows, a completion and a cancellation of one task,
//! missing and finished tasks, and rows over each byte limit.

use std::collections::BTreeMap;

use mcp_tasks_store_postgres::PgStore;

use crate::common::TestDb;

/// One row of a batch: id, quota key, bytes, and the limits max_active, max_tasks,
/// max_bytes, max_total.
type Row = (&'static str, &'static str, i64, [Option<i64>; 4]);

const NONE: [Option<i64>; 4] = [None; 4];

/// `create_tasks` on `rows`, as one statement: per row, its seq or why it was refused, and
/// the counts it answered.
async fn create_tasks(
    c: &tokio_postgres::Client,
    rows: &[Row],
) -> Vec<(i32, Option<i64>, Option<String>, [i64; 4])> {
    let ids: Vec<&str> = rows.iter().map(|r| r.0).collect();
    let keys: Vec<&str> = rows.iter().map(|r| r.1).collect();
    let bytes: Vec<i64> = rows.iter().map(|r| r.2).collect();
    let max = |i: usize| -> Vec<Option<i64>> { rows.iter().map(|r| r.3[i]).collect() };
    let (m0, m1, m2, m3) = (max(0), max(1), max(2), max(3));
    let none_text: Vec<Option<&str>> = rows.iter().map(|_| None).collect();
    let none_int: Vec<Option<i64>> = rows.iter().map(|_| None).collect();
    let created: Vec<i64> = rows.iter().map(|_| 1).collect();
    let methods: Vec<&str> = rows.iter().map(|_| "tools/call").collect();
    let requests: Vec<&[u8]> = rows.iter().map(|_| &b"{}"[..]).collect();
    c.query(
        "SELECT row_no, new_seq, refused, n_active, n_tasks, n_bytes, n_total \
         FROM mcp_tasks.create_tasks($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, \
         $14, $15, $16)",
        &[
            &ids, &none_text, &none_text, &created, &none_int, &none_int, &none_int, &methods,
            &requests, &none_text, &keys, &bytes, &m0, &m1, &m2, &m3,
        ],
    )
    .await
    .expect("create_tasks")
    .iter()
    .map(|r| {
        (
            r.get(0),
            r.get(1),
            r.get(2),
            [r.get(3), r.get(4), r.get(5), r.get(6)],
        )
    })
    .collect()
}

/// The usage counters (per key: tasks and bytes; the store's bytes), base rows plus
/// deltas, equal what the rows hold.
pub(crate) async fn assert_counters_match(c: &tokio_postgres::Client) {
    let per_key = |sql: &'static str| async move {
        c.query(sql, &[])
            .await
            .expect("per key")
            .iter()
            .map(|r| {
                (
                    r.get::<_, String>(0),
                    (r.get::<_, i64>(1), r.get::<_, i64>(2)),
                )
            })
            .collect::<BTreeMap<_, _>>()
    };
    let actual =
        per_key("SELECT quota_key, count(*), sum(bytes)::bigint FROM mcp_tasks.tasks GROUP BY 1")
            .await;
    let counted = per_key(
        "SELECT quota_key, sum(tasks)::bigint, sum(bytes)::bigint FROM \
         (SELECT quota_key, tasks, bytes FROM mcp_tasks.quota_usage \
          UNION ALL SELECT quota_key, tasks, bytes FROM mcp_tasks.usage_deltas) u \
         GROUP BY 1 HAVING sum(tasks) <> 0 OR sum(bytes) <> 0",
    )
    .await;
    assert_eq!(counted, actual, "per-key counters (base + deltas)");
    let totals: (i64, i64) = c
        .query_one(
            "SELECT (SELECT coalesce(sum(bytes), 0)::bigint FROM mcp_tasks.tasks), \
             (SELECT sum(bytes)::bigint FROM mcp_tasks.store_bytes) \
             + (SELECT coalesce(sum(bytes), 0)::bigint FROM mcp_tasks.usage_deltas)",
            &[],
        )
        .await
        .map(|r| (r.get(0), r.get(1)))
        .expect("totals");
    assert_eq!(totals.1, totals.0, "store total");
}

#[tokio::test]
async fn a_mixed_batch_answers_each_row_exactly() {
    let db = TestDb::new().await;
    let url = db.url("");
    let _store = PgStore::connect(&url).await.expect("open (migrates)");
    let c = db.client().await;
    let first = create_tasks(&c, &[("old", "a", 10, NONE)]).await;
    assert!(first[0].1.is_some(), "{first:?}");
    let tasks3 = [None, Some(3), None, None];
    let bytes15 = [None, None, Some(15), None];
    let total45 = [None, None, None, Some(45)];
    let active3 = [Some(3), None, None, None];
    let rows: [Row; 11] = [
        ("n1", "a", 10, tasks3),  // 1: ok, a holds 2
        ("old", "a", 10, NONE),   // 2: stored already
        ("n2", "a", 10, tasks3),  // 3: ok, a holds 3
        ("n3", "a", 10, tasks3),  // 4: a holds 3 of 3
        ("n1", "b", 10, NONE),    // 5: accepted earlier in this batch
        ("n4", "b", 10, bytes15), // 6: ok, b holds 10 bytes
        ("n5", "b", 10, bytes15), // 7: 10 + 10 > 15
        ("n6", "c", 10, total45), // 8: the store holds 40: 40 + 10 > 45
        ("n3", "c", 5, total45),  // 9: refused above, so free: 40 + 5 fits
        ("n7", "a", 10, active3), // 10: a has 3 active of 3
        ("n8", "c", 7, NONE),     // 11: ok
    ];
    let out = create_tasks(&c, &rows).await;
    let expect: [(Option<&str>, [i64; 4]); 11] = [
        (None, [0, 1, 10, 0]),
        (Some("duplicate"), [0; 4]),
        (None, [0, 2, 20, 0]),
        (Some("limit"), [0, 3, 30, 0]),
        (Some("duplicate"), [0; 4]),
        (None, [0, 0, 0, 0]),
        (Some("limit"), [0, 1, 10, 0]),
        (Some("limit"), [0, 0, 0, 40]),
        (None, [0, 0, 0, 40]),
        (Some("limit"), [3, 3, 30, 0]),
        (None, [0, 1, 5, 0]),
    ];
    assert_eq!(out.len(), rows.len());
    let mut last_seq = first[0].1.unwrap();
    for (i, ((no, seq, refused, counts), (why, want))) in out.iter().zip(expect).enumerate() {
        assert_eq!(*no, i32::try_from(i + 1).unwrap(), "row order");
        assert_eq!(refused.as_deref(), why, "row {no}: {out:?}");
        assert_eq!(*counts, want, "row {no}'s counts");
        match seq {
            Some(s) => {
                assert!(why.is_none(), "row {no} refused with a seq");
                assert!(*s > last_seq, "seqs follow the batch's order");
                last_seq = *s;
            }
            None => assert!(why.is_some(), "row {no} accepted without a seq"),
        }
    }
    let stored: Vec<(String, String)> = c
        .query(
            "SELECT task_id, quota_key FROM mcp_tasks.tasks ORDER BY seq",
            &[],
        )
        .await
        .expect("rows")
        .iter()
        .map(|r| (r.get(0), r.get(1)))
        .collect();
    let want: Vec<(String, String)> = [
        ("old", "a"),
        ("n1", "a"),
        ("n2", "a"),
        ("n4", "b"),
        ("n3", "c"),
        ("n8", "c"),
    ]
    .iter()
    .map(|(i, k)| ((*i).to_owned(), (*k).to_owned()))
    .collect();
    assert_eq!(stored, want);
    assert_counters_match(&c).await;
    // One history entry per created task, written by the one insert.
    let history: i64 = c
        .query_one("SELECT count(*) FROM mcp_tasks.task_history", &[])
        .await
        .expect("history")
        .get(0);
    assert_eq!(history, 6);
}

/// One row of a `finish_tasks` batch: id, target status, outcome JSON, and the limits
/// max_bytes, max_total.
type FinishRow = (
    &'static str,
    &'static str,
    Option<&'static str>,
    [Option<i64>; 2],
);

/// `finish_tasks` on `rows`, as one statement: per applied row, its row number, and the
/// status, message and outcome stored.
async fn finish_tasks(
    c: &tokio_postgres::Client,
    rows: &[FinishRow],
) -> Vec<(i32, String, Option<String>, Option<String>)> {
    let ids: Vec<&str> = rows.iter().map(|r| r.0).collect();
    let to: Vec<&str> = rows.iter().map(|r| r.1).collect();
    let messages: Vec<String> = rows.iter().map(|r| format!("{} {}", r.1, r.0)).collect();
    let at: Vec<i64> = rows.iter().map(|_| 2).collect();
    let from: Vec<&str> = rows.iter().map(|_| "working,input_required").collect();
    let kinds: Vec<Option<&str>> = rows.iter().map(|r| r.2.map(|_| "result")).collect();
    let json: Vec<Option<&[u8]>> = rows.iter().map(|r| r.2.map(str::as_bytes)).collect();
    let max_bytes: Vec<Option<i64>> = rows.iter().map(|r| r.3[0]).collect();
    let max_total: Vec<Option<i64>> = rows.iter().map(|r| r.3[1]).collect();
    let over = |what: &str| -> (Vec<Option<String>>, Vec<Option<Vec<u8>>>) {
        rows.iter()
            .map(|r| {
                (
                    Some(format!("over {what} {}", r.0)),
                    Some(format!("{{\"over\":\"{what}\"}}").into_bytes()),
                )
            })
            .unzip()
    };
    let (obm, obj) = over("bytes");
    let (otm, otj) = over("total");
    c.query(
        "SELECT b.row_no, (b.rec).status, (b.rec).status_message, \
         convert_from((b.rec).outcome, 'UTF8') \
         FROM mcp_tasks.finish_tasks($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13) \
         AS b",
        &[
            &ids, &to, &messages, &at, &from, &kinds, &json, &max_bytes, &max_total, &obm, &obj,
            &otm, &otj,
        ],
    )
    .await
    .expect("finish_tasks")
    .iter()
    .map(|r| (r.get(0), r.get(1), r.get(2), r.get(3)))
    .collect()
}

#[tokio::test]
async fn a_mixed_finish_batch_answers_each_row_exactly() {
    let db = TestDb::new().await;
    let url = db.url("");
    let _store = PgStore::connect(&url).await.expect("open (migrates)");
    let c = db.client().await;
    // The row-by-row order is the `store_bytes` shard's (`hashtext(id) & 63`), then the
    // batch's: these ids' shards are 19, 25, 26, 31, 32, 47 (the expectations below follow
    // from that order, not from the batch's).
    let ids = ["t1", "t4", "t5", "c1", "t6", "a1"];
    let shards: Vec<i32> = c
        .query_one(
            "SELECT array_agg(hashtext(x) & 63 ORDER BY o) FROM unnest($1::text[]) \
             WITH ORDINALITY AS u(x, o)",
            &[&&ids[..]],
        )
        .await
        .expect("shards")
        .get(0);
    assert_eq!(shards, [19, 25, 26, 31, 32, 47]);
    let made = create_tasks(
        &c,
        &[
            ("t1", "a", 10, NONE),
            ("t4", "b", 10, NONE),
            ("t5", "b", 10, NONE),
            ("c1", "c", 10, NONE),
            ("t6", "c", 10, NONE),
            ("a1", "d", 10, NONE),
            ("done", "a", 10, NONE),
        ],
    )
    .await;
    assert!(made.iter().all(|m| m.1.is_some()), "{made:?}");
    let before = finish_tasks(&c, &[("done", "cancelled", None, [None; 2])]).await;
    assert_eq!(
        before,
        [(1, "cancelled".into(), Some("cancelled done".into()), None)]
    );
    // The store holds 70 bytes, b 20. Each outcome is 8 bytes, each over-limit one 16.
    let j = Some("{\"r\":10}");
    let rows: [FinishRow; 9] = [
        ("t1", "completed", j, [None; 2]),         // 1: applied (total 78)
        ("t1", "cancelled", None, [None; 2]),      // 2: t1 is completed by row 1
        ("missing", "completed", j, [None; 2]),    // 3: no such task
        ("done", "completed", j, [None; 2]),       // 4: cancelled already
        ("t5", "completed", j, [Some(28), None]),  // 5: after row 6: 28 + 8 > 28
        ("t4", "completed", j, [Some(28), None]),  // 6: first of b: 20 + 8 fits (total 102)
        ("c1", "completed", j, [None, Some(110)]), // 7: 102 + 8 fits 110
        ("t6", "completed", j, [None, Some(110)]), // 8: 110 + 8 > 110
        ("a1", "failed", None, [None; 2]),         // 9: applied, no outcome
    ];
    // In a transaction that counts the calls of the functions it runs: the statement
    // triggers once for the batch, no row-by-row `finish_task`.
    c.batch_execute("BEGIN; SET LOCAL track_functions = 'pl'")
        .await
        .expect("begin");
    let out = finish_tasks(&c, &rows).await;
    let calls: BTreeMap<String, i64> = c
        .query(
            "SELECT funcname::text, calls FROM pg_stat_xact_user_functions \
             WHERE schemaname = 'mcp_tasks'",
            &[],
        )
        .await
        .expect("calls")
        .iter()
        .map(|r| (r.get(0), r.get(1)))
        .collect();
    c.batch_execute("COMMIT").await.expect("commit");
    for (f, n) in [
        ("finish_tasks", 1),
        ("usage_update", 1),
        ("history_update", 1),
    ] {
        assert_eq!(calls.get(f), Some(&n), "calls of {f}: {calls:?}");
    }
    assert_eq!(calls.get("finish_task"), None, "{calls:?}");
    let ok = |no: i32, id: &str| {
        (
            no,
            "completed".to_owned(),
            Some(format!("completed {id}")),
            Some("{\"r\":10}".to_owned()),
        )
    };
    let over = |no: i32, id: &str, what: &str| {
        (
            no,
            "failed".to_owned(),
            Some(format!("over {what} {id}")),
            Some(format!("{{\"over\":\"{what}\"}}")),
        )
    };
    let want = vec![
        ok(1, "t1"),
        over(5, "t5", "bytes"),
        ok(6, "t4"),
        ok(7, "c1"),
        over(8, "t6", "total"),
        (9, "failed".to_owned(), Some("failed a1".to_owned()), None),
    ];
    assert_eq!(out, want, "every row's answer, in row order");
    // What is stored is what was answered; nothing else changed.
    let stored: BTreeMap<String, String> = c
        .query("SELECT task_id, status FROM mcp_tasks.tasks", &[])
        .await
        .expect("rows")
        .iter()
        .map(|r| (r.get(0), r.get(1)))
        .collect();
    for (no, status, _, _) in &out {
        let id = rows[usize::try_from(*no - 1).unwrap()].0;
        assert_eq!(&stored[id], status, "{id}");
    }
    assert_eq!(stored["done"], "cancelled");
    assert_eq!(stored.len(), 7);
    assert_counters_match(&c).await;
    // The history: each applied row's entry once, after the task's creation entry.
    let history: BTreeMap<String, Vec<String>> = c
        .query(
            "SELECT task_id, array_agg(status ORDER BY id) FROM mcp_tasks.task_history \
             GROUP BY 1",
            &[],
        )
        .await
        .expect("history")
        .iter()
        .map(|r| (r.get(0), r.get(1)))
        .collect();
    for (id, status) in &stored {
        assert_eq!(history[id], ["working", status.as_str()], "{id}'s history");
    }
}
