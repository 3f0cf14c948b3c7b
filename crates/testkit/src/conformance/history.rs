//! The status history of a task: written with each creation and status change, in order,
//! with the time of the change; bounded per task; deleted with the task.

use mcp_tasks_core::{HISTORY_MAX, HistoryEntry, NewTask};
use mcp_tasks_proto::mcp::TaskStatus;

use super::helpers::*;
use super::{Store, T0};

async fn history(store: &Store, id: &str) -> Vec<HistoryEntry> {
    store
        .history(id)
        .await
        .unwrap_or_else(|e| panic!("history of {id} failed: {e}"))
}

fn entry(status: TaskStatus, message: Option<&str>, at_ms: i64) -> HistoryEntry {
    HistoryEntry {
        status,
        status_message: message.map(str::to_owned),
        at_ms,
    }
}

/// The creation and every applied status change are in the task's history, oldest first,
/// with their status message and time; a rejected transition adds nothing; another task's
/// history is its own; the latest [`HISTORY_MAX`] entries are kept; the history goes with
/// the task when it is deleted; an unknown task has none.
pub async fn status_history(store: Store) {
    let t = NewTask {
        status_message: Some("starting".into()),
        ..new_task(Some("alice"), None)
    };
    let id = create(&store, t).await.task.task_id;
    let other = create(&store, new_task(Some("bob"), None))
        .await
        .task
        .task_id;
    assert_eq!(
        history(&store, &id).await,
        vec![entry(TaskStatus::Working, Some("starting"), T0)],
        "a new task's history is its creation"
    );
    ask_input(&store, &id, Some("need a name"), T0 + 10).await;
    apply_ok(
        &store,
        tr(&id, TaskStatus::Working, None, None, T0 + 20),
        "back to working",
    )
    .await;
    complete(&store, &id, T0 + 30).await;
    apply_rejected(
        &store,
        tr(&id, TaskStatus::Working, Some("again"), None, T0 + 40),
        "a terminal task never changes",
    )
    .await;
    assert_eq!(
        history(&store, &id).await,
        vec![
            entry(TaskStatus::Working, Some("starting"), T0),
            entry(TaskStatus::InputRequired, Some("need a name"), T0 + 10),
            entry(TaskStatus::Working, None, T0 + 20),
            entry(TaskStatus::Completed, None, T0 + 30),
        ],
        "each applied change, in order, with its message and time; not the rejected one"
    );
    assert_eq!(
        history(&store, &other).await,
        vec![entry(TaskStatus::Working, None, T0)],
        "another task's history is its own"
    );
    assert!(
        history(&store, "no-such-task").await.is_empty(),
        "an unknown task has no history"
    );

    // Bounded: a task toggling between working and input_required keeps its latest
    // changes.
    let busy = create(&store, new_task(Some("alice"), None))
        .await
        .task
        .task_id;
    let changes = HISTORY_MAX + 6;
    for i in 1..=changes {
        let at = T0 + i64::try_from(i).expect("small");
        if i % 2 == 1 {
            ask_input(&store, &busy, Some(&format!("ask {i}")), at).await;
        } else {
            apply_ok(
                &store,
                tr(
                    &busy,
                    TaskStatus::Working,
                    Some(&format!("go {i}")),
                    None,
                    at,
                ),
                "working again",
            )
            .await;
        }
    }
    let h = history(&store, &busy).await;
    assert_eq!(h.len(), HISTORY_MAX, "at most HISTORY_MAX entries per task");
    let last = i64::try_from(changes).expect("small");
    assert_eq!(
        h.last().map(|e| e.at_ms),
        Some(T0 + last),
        "the latest is kept"
    );
    assert_eq!(
        h.first().map(|e| e.at_ms),
        Some(T0 + last - i64::try_from(HISTORY_MAX).expect("small") + 1),
        "the oldest are dropped first"
    );
    assert!(
        h.windows(2).all(|w| w[0].at_ms < w[1].at_ms),
        "oldest first: {h:?}"
    );

    // Deleted with the task.
    let doomed = create_expiring(&store).await.task.task_id;
    ask_input(&store, &doomed, None, T0 + 1).await;
    assert_eq!(history(&store, &doomed).await.len(), 2);
    let deleted = store
        .delete_expired(T0 + 1000, 100)
        .await
        .expect("delete_expired");
    assert!(deleted.contains(&doomed), "{deleted:?}");
    assert!(
        history(&store, &doomed).await.is_empty(),
        "the history is deleted with the task"
    );
    assert_eq!(history(&store, &id).await.len(), 4, "other histories stay");
}
