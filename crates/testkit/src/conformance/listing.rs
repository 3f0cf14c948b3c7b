//! Checks of TTL deletion and listing: expiry, keyset pagination, owner isolation.

use std::collections::{BTreeSet, HashSet};
use std::sync::Arc;
use std::time::Duration;

use mcp_tasks_core::{Limits, ListQuery, ListScope, NewTask, TaskRecord};

use super::helpers::*;
use super::{Store, T0};

// ---------------------------------------------------------------------------------------
// TTL.

/// `delete_expired` deletes exactly the tasks whose TTL has passed (`now >= createdAt +
/// ttl`), whatever their status, at most `limit` at a time; unlimited tasks never; a seq is
/// never handed out again after its task is deleted.
///
/// Spec: "After a task's `ttl` lifetime has elapsed, receivers MAY delete the task and its
/// results, regardless of the task status."
pub async fn ttl_deletion(store: Store) {
    let mk = |ttl: Option<u64>| NewTask {
        ttl_ms: ttl,
        ..new_task(Some("ttl"), None)
    };
    let a = create(&store, mk(Some(1000))).await;
    let b = create(&store, mk(Some(5000))).await;
    let forever = create(&store, mk(None)).await;
    let huge = create(&store, mk(Some(u64::MAX))).await;
    let done = create(&store, mk(Some(1000))).await;
    complete(&store, &done.task.task_id, T0 + 1).await;
    let gone = |v: Vec<String>| v.into_iter().collect::<BTreeSet<_>>();
    let del = |now: i64| {
        let store = Arc::clone(&store);
        async move {
            store
                .delete_expired(now, 1000)
                .await
                .unwrap_or_else(|e| panic!("delete_expired failed: {e}"))
        }
    };
    assert_eq!(
        del(T0 + 999).await,
        Vec::<String>::new(),
        "nothing has expired 1 ms before the TTL"
    );
    assert_eq!(
        gone(del(T0 + 1000).await),
        gone(vec![a.task.task_id.clone(), done.task.task_id.clone()]),
        "tasks expire at createdAt + ttl, working or terminal"
    );
    assert_eq!(get(&store, &a.task.task_id).await, None);
    assert_eq!(get(&store, &done.task.task_id).await, None);
    assert_eq!(must_get(&store, &b.task.task_id).await, b);
    assert_eq!(
        gone(del(i64::MAX - 1).await),
        gone(vec![b.task.task_id.clone()])
    );
    assert_eq!(
        must_get(&store, &forever.task.task_id).await,
        forever,
        "an unlimited task never expires"
    );
    assert_eq!(
        must_get(&store, &huge.task.task_id).await,
        huge,
        "a ttl beyond i64 saturates"
    );
    assert!(del(i64::MAX - 1).await.is_empty());

    // The limit.
    let many: Vec<TaskRecord> = {
        let mut v = Vec::new();
        for _ in 0..5 {
            v.push(create(&store, mk(Some(10))).await);
        }
        v
    };
    let mut seen = BTreeSet::new();
    for expected in [2, 2, 1, 0] {
        let ids = store
            .delete_expired(T0 + 10, 2)
            .await
            .unwrap_or_else(|e| panic!("delete_expired failed: {e}"));
        assert_eq!(ids.len(), expected, "delete_expired must honour its limit");
        for id in ids {
            assert!(seen.insert(id.clone()), "{id} deleted twice");
        }
    }
    assert_eq!(seen, gone(ids(&many)));

    // Seqs are not reused: delete the newest task, create another.
    let newest = create(&store, mk(Some(1))).await;
    assert_eq!(del(T0 + 1).await, vec![newest.task.task_id.clone()]);
    let next = create(&store, mk(None)).await;
    assert!(
        next.seq > newest.seq,
        "seq {} reused after deleting {}",
        next.seq,
        newest.seq
    );
}

// ---------------------------------------------------------------------------------------
// Listing.

/// `list` is keyset pagination: ascending `seq`, strictly after `after_seq`, at most
/// `limit`; pages neither skip nor repeat.
///
/// Spec: "Receivers MUST include a `nextCursor` in the response if more tasks are
/// available." (the engine asks for `limit + 1` to know).
pub async fn keyset_pagination(store: Store) {
    let created = create_mixed_owners(&store).await;
    pages_return(&store, &created, "paging", "in seq order", |page, after| {
        ListQuery::new(ListScope::All, after, page)
    })
    .await;
    let first = list(&store, ListQuery::new(ListScope::All, None, 10)).await;
    assert_eq!(first, created[..10]);
    let second = list(
        &store,
        ListQuery::new(ListScope::All, Some(created[9].seq), 10),
    )
    .await;
    assert_eq!(second, created[10..20]);
    let after_last = list(
        &store,
        ListQuery::new(ListScope::All, Some(created[24].seq), 10),
    )
    .await;
    assert!(after_last.is_empty(), "nothing after the last task");
    assert!(
        list(&store, ListQuery::new(ListScope::All, None, 0))
            .await
            .is_empty(),
        "limit 0"
    );
    // A cursor left by a deleted task still works.
    let t = create_expiring(&store).await;
    let after = create(&store, new_task(None, None)).await;
    store
        .delete_expired(T0 + 1, 10)
        .await
        .expect("delete_expired");
    let page = list(&store, ListQuery::new(ListScope::All, Some(t.seq), 10)).await;
    assert_eq!(
        ids(&page),
        vec![after.task.task_id],
        "a cursor at a deleted task resumes after it"
    );
}

/// Paging while other tasks insert concurrently neither skips nor repeats: every task that
/// existed when paging began is seen exactly once, pages come in strictly ascending `seq`,
/// and paging on to the end after the inserts sees every task exactly once.
pub async fn pagination_under_concurrent_inserts(store: Store) {
    let mut before = Vec::new();
    for _ in 0..60 {
        before.push(create(&store, new_task(Some("p"), None)).await.task.task_id);
    }
    let inserter = {
        let store = Arc::clone(&store);
        tokio::spawn(async move {
            let mut ids = Vec::new();
            for _ in 0..150 {
                let rec = store
                    .create(new_task(Some("p"), None), &Limits::NONE)
                    .await
                    .unwrap_or_else(|e| panic!("concurrent create failed: {e}"));
                ids.push(rec.task.task_id);
                tokio::task::yield_now().await;
            }
            ids
        })
    };
    let mut seen: Vec<TaskRecord> = Vec::new();
    let mut after = None;
    let mut pages = 0;
    loop {
        let batch = store
            .list(ListQuery::new(ListScope::Owner("p".into()), after, 7))
            .await
            .unwrap_or_else(|e| panic!("list failed: {e}"));
        pages += 1;
        if batch.is_empty() {
            if inserter.is_finished() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(1)).await;
            continue;
        }
        after = batch.last().map(|r| r.seq);
        seen.extend(batch);
        tokio::task::yield_now().await;
        assert!(pages < 100_000, "paging does not end");
    }
    let during = inserter.await.expect("inserter panicked");
    // One more page after the inserter finished: nothing may be left behind.
    let rest = store
        .list(ListQuery::new(ListScope::Owner("p".into()), after, 1000))
        .await
        .expect("list");
    seen.extend(rest);
    for w in seen.windows(2) {
        assert!(
            w[0].seq < w[1].seq,
            "seq {} then {}: a repeat or a step back",
            w[0].seq,
            w[1].seq
        );
    }
    let seen_ids: Vec<String> = ids(&seen);
    let set: HashSet<&String> = seen_ids.iter().collect();
    assert_eq!(set.len(), seen_ids.len(), "a task was listed twice");
    for id in before.iter().chain(during.iter()) {
        assert!(set.contains(id), "task {id} was skipped");
    }
    assert_eq!(seen_ids.len(), before.len() + during.len());
}

/// `ListScope::Owner` lists exactly that principal's tasks (never those bound to no one or
/// to another); `ListScope::All` lists everything.
///
/// Spec: "For `tasks/list` requests, receivers MUST ensure that the returned task list
/// includes only tasks associated with the requestor's authorization context."
pub async fn owner_isolation(store: Store) {
    let mut by_owner: Vec<(Option<&str>, Vec<String>)> = vec![
        (Some("alice"), vec![]),
        (Some("bob"), vec![]),
        (None, vec![]),
        (Some(""), vec![]),
    ];
    let mut everything = Vec::new();
    for i in 0..14 {
        let slot = i % by_owner.len();
        let owner = by_owner[slot].0;
        let rec = create(&store, new_task(owner, None)).await;
        by_owner[slot].1.push(rec.task.task_id.clone());
        everything.push(rec.task.task_id);
    }
    for (owner, expected) in &by_owner {
        let Some(owner) = owner else { continue };
        for page in [1, 3, 100] {
            let got = ids(&list_all(&store, &ListScope::Owner((*owner).to_owned()), page).await);
            assert_eq!(
                &got, expected,
                "owner {owner:?} (page {page}) must see exactly their tasks"
            );
        }
    }
    assert!(
        list_all(&store, &ListScope::Owner("carol".into()), 10)
            .await
            .is_empty()
    );
    assert_eq!(ids(&list_all(&store, &ListScope::All, 5).await), everything);
}

/// Newest-first pages (the dashboard's): descending `seq`, strictly before the previous
/// page's last task, at most `limit`, neither skipping nor repeating; per owner they hold
/// that owner's tasks only; a cursor at a deleted task still works.
pub async fn newest_first_pages(store: Store) {
    let created = create_mixed_owners(&store).await;
    let newest: Vec<TaskRecord> = created.iter().rev().cloned().collect();
    pages_return(
        &store,
        &newest,
        "paging newest first",
        "in descending seq",
        |page, before| ListQuery::newest_first(ListScope::All, before, page),
    )
    .await;
    let first = list(&store, ListQuery::newest_first(ListScope::All, None, 10)).await;
    assert_eq!(first, newest[..10], "the first page holds the newest tasks");
    let of_a = store
        .list(ListQuery::newest_first(
            ListScope::Owner("a".into()),
            None,
            3,
        ))
        .await
        .expect("list");
    let want: Vec<TaskRecord> = newest
        .iter()
        .filter(|r| r.task.owner.as_deref() == Some("a"))
        .take(3)
        .cloned()
        .collect();
    assert_eq!(of_a, want, "an owner's newest tasks, and only its own");
    assert!(
        list(
            &store,
            ListQuery::newest_first(ListScope::All, Some(created[0].seq), 10)
        )
        .await
        .is_empty(),
        "nothing before the first task"
    );
    // A cursor left by a deleted task still works.
    let t = create_expiring(&store).await;
    store
        .delete_expired(T0 + 1, 10)
        .await
        .expect("delete_expired");
    let page = list(
        &store,
        ListQuery::newest_first(ListScope::All, Some(t.seq), 2),
    )
    .await;
    assert_eq!(
        page,
        newest[..2],
        "a cursor at a deleted task resumes before it"
    );
}
