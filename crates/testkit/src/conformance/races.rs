//! Checks of races on one task: exactly one terminal transition wins (proptest
//! interleavings).

use std::future::Future;
use std::sync::Arc;

use mcp_tasks_core::{Limits, NewTask, OrphanSweep, OutcomeKind, TaskRecord, TransitionResult};
use mcp_tasks_proto::mcp::TaskStatus;
use proptest::strategy::{Strategy, ValueTree};
use proptest::test_runner::{Config, TestRunner};

use super::helpers::*;
use super::{Leases, Store, T0};

// ---------------------------------------------------------------------------------------
// Races.

/// One contender in a race on one task.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RaceOp {
    /// `-> cancelled` with a cancellation error outcome.
    Cancel,
    /// `-> completed` with a result outcome.
    Complete,
    /// `-> failed` with an error outcome.
    Fail,
    /// `-> input_required`.
    AskInput,
    /// `-> working`.
    Resume,
    /// `delete_expired` at a time past the task's TTL.
    Expire,
    /// `fail_orphans` (the task's executor never renewed a lease).
    Orphan,
}

fn race_op() -> (proptest::sample::Select<RaceOp>, std::ops::Range<u8>) {
    let op = proptest::sample::select(vec![
        RaceOp::Cancel,
        RaceOp::Complete,
        RaceOp::Fail,
        RaceOp::AskInput,
        RaceOp::Resume,
        RaceOp::Expire,
        RaceOp::Orphan,
    ]);
    (op, 0u8..6)
}

#[allow(clippy::large_enum_variant)] // short-lived, one per contender
enum RaceResult {
    Transition(TransitionResult),
    Deleted(Vec<String>),
    Orphaned(Vec<TaskRecord>),
}

/// Race the `ops` (each after its number of scheduler yields) on one fresh task, and check
/// that exactly one terminal transition won, that its outcome is stored exactly, that every
/// loser saw the winner's record, and that nothing changed after it.
///
/// # Errors
/// A description of the broken invariant.
pub async fn race_case(store: Store, ops: &[(RaceOp, u8)], leases: Leases) -> Result<(), String> {
    let orphaned_msg = "executor gone";
    let task = NewTask {
        ttl_ms: Some(1000),
        ..new_task(Some("racer"), Some("dead-executor"))
    };
    let id = task.task_id.clone();
    store
        .create(task, &Limits::NONE)
        .await
        .map_err(|e| format!("create: {e}"))?;
    // A sibling whose executor is alive: no race may touch it.
    store
        .heartbeat("live-executor", i64::MAX)
        .await
        .map_err(|e| format!("heartbeat: {e}"))?;
    let sibling = store
        .create(
            NewTask {
                ttl_ms: None,
                ..new_task(Some("racer"), Some("live-executor"))
            },
            &Limits::NONE,
        )
        .await
        .map_err(|e| format!("create sibling: {e}"))?;

    let barrier = Arc::new(tokio::sync::Barrier::new(ops.len()));
    let mut handles = Vec::new();
    for (i, &(op, yields)) in ops.iter().enumerate() {
        let store = Arc::clone(&store);
        let barrier = Arc::clone(&barrier);
        let id = id.clone();
        handles.push(tokio::spawn(async move {
            barrier.wait().await;
            for _ in 0..yields {
                tokio::task::yield_now().await;
            }
            let at = T0 + 100 + i64::try_from(i).unwrap_or(0);
            let msg = format!("op {i}");
            let to = |status, outcome| Some(tr(&id, status, Some(&msg), outcome, at));
            let transition = match op {
                RaceOp::Cancel => to(TaskStatus::Cancelled, Some(error_outcome(-32800, &msg))),
                RaceOp::Complete => to(TaskStatus::Completed, Some(result_outcome(&msg))),
                RaceOp::Fail => to(TaskStatus::Failed, Some(error_outcome(-32603, &msg))),
                RaceOp::AskInput => to(TaskStatus::InputRequired, None),
                RaceOp::Resume => to(TaskStatus::Working, None),
                RaceOp::Expire | RaceOp::Orphan => None,
            };
            let r = match transition {
                Some(t) => store.transition(t).await.map(RaceResult::Transition),
                None if op == RaceOp::Expire => store
                    .delete_expired(T0 + 1000, 1000)
                    .await
                    .map(RaceResult::Deleted),
                None => store
                    .fail_orphans(OrphanSweep::new(T0 + 100, orphaned_msg))
                    .await
                    .map(RaceResult::Orphaned),
            };
            (i, op, r)
        }));
    }
    let mut results = Vec::new();
    for h in handles {
        let (i, op, r) = h.await.map_err(|e| format!("a contender panicked: {e}"))?;
        results.push((
            i,
            op,
            r.map_err(|e| format!("op {i} ({op:?}) failed: {e}"))?,
        ));
    }

    let finals = store.get(&id).await.map_err(|e| format!("get: {e}"))?;
    let mut deleted = false;
    let mut winners: Vec<(usize, RaceOp, TaskRecord)> = Vec::new();
    let mut losers: Vec<(usize, RaceOp, TaskRecord)> = Vec::new();
    for (i, op, r) in &results {
        match r {
            RaceResult::Transition(TransitionResult::Applied(rec)) => {
                if rec.status.is_terminal() {
                    winners.push((*i, *op, rec.clone()));
                } else if !matches!(op, RaceOp::AskInput | RaceOp::Resume) {
                    return Err(format!(
                        "op {i} ({op:?}) applied a non-terminal status {}",
                        rec.status
                    ));
                }
            }
            RaceResult::Transition(TransitionResult::Rejected(rec)) => {
                if matches!(op, RaceOp::Cancel | RaceOp::Complete | RaceOp::Fail)
                    && !rec.status.is_terminal()
                {
                    return Err(format!(
                        "op {i} ({op:?}) was rejected although the task was {} (a terminal transition is legal from any non-terminal status)",
                        rec.status
                    ));
                }
                if rec.status.is_terminal() {
                    losers.push((*i, *op, rec.clone()));
                }
            }
            RaceResult::Transition(TransitionResult::Missing) => {}
            RaceResult::Deleted(ids) => deleted |= ids.contains(&id),
            RaceResult::Orphaned(recs) => {
                if recs.iter().any(|r| r.task.task_id == sibling.task.task_id) {
                    return Err("fail_orphans failed a task of a live executor".into());
                }
                if leases == Leases::ProcessLocal && !recs.is_empty() {
                    return Err("a process-local store failed orphans".into());
                }
                for rec in recs.iter().filter(|r| r.task.task_id == id) {
                    winners.push((*i, *op, rec.clone()));
                }
            }
        }
    }
    if winners.len() > 1 {
        return Err(format!(
            "{} terminal transitions won: {:?}",
            winners.len(),
            winners
                .iter()
                .map(|(i, op, r)| (i, op, r.status))
                .collect::<Vec<_>>()
        ));
    }
    let contenders = results.iter().filter(|(_, op, _)| match op {
        RaceOp::Cancel | RaceOp::Complete | RaceOp::Fail => true,
        RaceOp::Orphan => leases == Leases::Tracked,
        _ => false,
    });
    let contenders = contenders.count();
    if deleted {
        if finals.is_some() {
            return Err("delete_expired reported the task deleted but it is still there".into());
        }
    } else {
        let Some(finals) = finals else {
            return Err("the task vanished without being deleted".into());
        };
        if contenders > 0 && winners.is_empty() {
            return Err(format!(
                "{contenders} terminal contenders and no winner; task is {}",
                finals.status
            ));
        }
        if let Some((i, op, won)) = winners.first() {
            if &finals != won {
                return Err(format!(
                    "the task changed after op {i} ({op:?}) made it terminal:\n won: {won:?}\nnow: {finals:?}"
                ));
            }
            let expected = match op {
                RaceOp::Cancel => Some(error_outcome(-32800, &format!("op {i}"))),
                RaceOp::Complete => Some(result_outcome(&format!("op {i}"))),
                RaceOp::Fail => Some(error_outcome(-32603, &format!("op {i}"))),
                _ => None,
            };
            if let Some(expected) = expected {
                if finals.outcome.as_ref() != Some(&expected) {
                    return Err(format!(
                        "stored outcome {:?} is not the winner's {expected:?}",
                        finals.outcome
                    ));
                }
            } else if finals.status != TaskStatus::Failed
                || finals.task.status_message.as_deref() != Some(orphaned_msg)
                || finals.outcome.as_ref().map(|o| o.kind) != Some(OutcomeKind::Error)
            {
                return Err(format!(
                    "an orphaned task must be failed with an error outcome: {finals:?}"
                ));
            }
        }
        for (i, op, seen) in &losers {
            if seen != &finals {
                return Err(format!(
                    "op {i} ({op:?}) was rejected with {seen:?}, but the winner stored {finals:?}"
                ));
            }
        }
    }
    let sib = store
        .get(&sibling.task.task_id)
        .await
        .map_err(|e| format!("get sibling: {e}"))?;
    if sib.as_ref() != Some(&sibling) {
        return Err(format!("the live sibling task changed: {sib:?}"));
    }
    Ok(())
}

/// Random interleavings (proptest) of cancel, complete, fail, input_required, working,
/// expiry and orphan-failing on one task, each case on a fresh store: exactly one terminal
/// transition wins and its outcome is stored exactly ([`race_case`]). Failing cases are
/// shrunk. `PROPTEST_CASES` sets the number of cases (default 64).
pub async fn racing_terminals<F, Fut>(make: &F, leases: Leases)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Store>,
{
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|c| c.parse().ok())
        .unwrap_or(64);
    let mut runner = TestRunner::new(Config {
        cases,
        ..Config::default()
    });
    let strategy = proptest::collection::vec(race_op(), 2..8);
    // A fixed, hand-picked case first: the three terminal contenders at once.
    let fixed = vec![
        (RaceOp::Cancel, 0),
        (RaceOp::Complete, 0),
        (RaceOp::Fail, 0),
    ];
    if let Err(e) = race_case(make().await, &fixed, leases).await {
        panic!("race {fixed:?}: {e}");
    }
    for _ in 0..cases {
        let mut tree = strategy
            .new_tree(&mut runner)
            .expect("the race strategy generates values");
        let first = tree.current();
        let Err(error) = race_case(make().await, &first, leases).await else {
            continue;
        };
        // Shrink: keep simplifying while the case still fails.
        let mut minimal = (first.clone(), error.clone());
        let mut steps = 0;
        while steps < 256 && tree.simplify() {
            steps += 1;
            let candidate = tree.current();
            match race_case(make().await, &candidate, leases).await {
                Err(e) => minimal = (candidate, e),
                Ok(()) => {
                    if !tree.complicate() {
                        break;
                    }
                }
            }
        }
        panic!(
            "race invariant broken.\n  case: {first:?}\n  error: {error}\n  minimal failing case found: {:?}\n  its error: {}",
            minimal.0, minimal.1
        );
    }
}
