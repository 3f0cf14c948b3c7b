//! [`starting`]: a Ctrl-C while a call starts, and [`CREATE_GRACE`]. On tokio's paused
//! clock (it jumps to the next timer when every task waits), so the grace takes no real
//! time; times are read on that clock.

use std::future::Future;
use std::time::Duration;

use mcp_tasks_client::{CallToolResult, ClientError, Started};
use serde_json::json;
use tokio::sync::watch;
use tokio::time::Instant;

use super::{CREATE_GRACE, Report, starting};
use crate::term::interrupt::Interrupts;

/// [`Interrupts`] that see a Ctrl-C at each of `at` (after `t0`, in order).
fn ctrl_c_at(t0: Instant, at: &[Duration]) -> Interrupts {
    let (tx, rx) = watch::channel(0u64);
    let interrupts = Interrupts::from_counter(rx);
    let at = at.to_vec();
    tokio::spawn(async move {
        for d in at {
            tokio::time::sleep_until(t0 + d).await;
            tx.send_modify(|n| *n += 1);
        }
        // The sender stays: no end of the channel for `next` to see.
        std::future::pending::<()>().await;
    });
    interrupts
}

/// A start that answers with a plain result once `after` has passed since `t0`.
async fn result_at(t0: Instant, after: Duration) -> Result<Started, ClientError> {
    tokio::time::sleep_until(t0 + after).await;
    Ok(Started::Result(CallToolResult(
        json!({"content": [{"type": "text", "text": "done"}]}),
    )))
}

/// A start that never answers (a server that never creates the task).
fn never() -> impl Future<Output = Result<Started, ClientError>> {
    std::future::pending()
}

const SECOND: Duration = Duration::from_secs(1);

/// A start that never answers, interrupted once at 1 s: `starting` is still waiting
/// just before the grace ends (1 s + CREATE_GRACE), then gives up and returns `None`
/// exactly then: the call is left, not awaited for ever.
#[tokio::test(start_paused = true)]
async fn a_start_that_never_answers_is_left_once_the_grace_is_over() {
    let t0 = Instant::now();
    let mut interrupts = ctrl_c_at(t0, &[SECOND]);
    let report = Report::new("sleep");
    let run = starting(never(), true, &report, &mut interrupts);
    tokio::pin!(run);
    let grace_end = SECOND + CREATE_GRACE;
    let early = tokio::time::timeout(grace_end - Duration::from_millis(1), &mut run).await;
    assert!(early.is_err(), "returned before the grace was over");
    let out = run.await;
    let elapsed = t0.elapsed();
    assert!(
        out.is_none(),
        "a start still pending past the grace is left"
    );
    assert!(
        elapsed >= grace_end,
        "left after {elapsed:?}, before 1 s + {CREATE_GRACE:?}"
    );
    assert!(elapsed < grace_end + SECOND, "left late, after {elapsed:?}");
}

/// Interrupted at 1 s, a start that answers 9 s later (within the grace) is awaited:
/// `starting` returns its outcome marked interrupted (`Some((outcome, true))`), so that a
/// task it created is cancelled.
#[tokio::test(start_paused = true)]
async fn a_start_that_answers_within_the_grace_is_awaited_and_marked_interrupted() {
    assert!(Duration::from_secs(9) < CREATE_GRACE);
    let t0 = Instant::now();
    let mut interrupts = ctrl_c_at(t0, &[SECOND]);
    let report = Report::new("sleep");
    let start = result_at(t0, SECOND + Duration::from_secs(9));
    let out = starting(start, true, &report, &mut interrupts).await;
    assert_eq!(t0.elapsed(), Duration::from_secs(10));
    match out {
        Some((Ok(Started::Result(r)), true)) => assert_eq!(r.content()[0]["text"], "done"),
        Some((Ok(Started::Result(_)), false)) => panic!("not marked interrupted"),
        Some((Ok(Started::Task(_)), _)) => panic!("a task out of a plain result"),
        Some((Err(e), _)) => panic!("an error: {e}"),
        None => panic!("left within the grace"),
    }
}

/// A second Ctrl-C during the grace leaves at once: interrupted at 1 s and 3 s, a start
/// that never answers is left at 3 s, not at the end of the grace.
#[tokio::test(start_paused = true)]
async fn a_second_ctrl_c_during_the_grace_leaves_at_once() {
    let t0 = Instant::now();
    let mut interrupts = ctrl_c_at(t0, &[SECOND, 3 * SECOND]);
    let report = Report::new("sleep");
    let out = starting(never(), true, &report, &mut interrupts).await;
    assert!(out.is_none());
    assert_eq!(t0.elapsed(), 3 * SECOND);
}

/// A call that cannot create a task (`may_create` false: a plain call to a 2025-11-25
/// server) is left at the first Ctrl-C, with no grace.
#[tokio::test(start_paused = true)]
async fn a_call_that_cannot_create_a_task_is_left_at_the_first_ctrl_c() {
    let t0 = Instant::now();
    let mut interrupts = ctrl_c_at(t0, &[SECOND]);
    let report = Report::new("sleep");
    let out = starting(never(), false, &report, &mut interrupts).await;
    assert!(out.is_none());
    assert_eq!(t0.elapsed(), SECOND);
}

/// With no Ctrl-C the start is awaited however long it takes (here past the grace), and
/// its outcome is not marked interrupted.
#[tokio::test(start_paused = true)]
async fn without_ctrl_c_the_start_is_awaited_and_not_marked_interrupted() {
    let t0 = Instant::now();
    let mut interrupts = ctrl_c_at(t0, &[]);
    let report = Report::new("sleep");
    let late = CREATE_GRACE + 5 * SECOND;
    let out = starting(result_at(t0, late), true, &report, &mut interrupts).await;
    assert_eq!(t0.elapsed(), late);
    assert!(matches!(out, Some((Ok(Started::Result(_)), false))));
}
