//! Faults while serving: a full disk, an externally held lock, a read-only file. The
//! affected call fails with `StoreError::Unavailable` and a clear message (no panic, no
//! hang beyond `busy_timeout`), nothing stored is lost, and calls succeed again once the
//! fault is gone.

use crate::common;

use std::path::Path;
use std::time::{Duration, Instant};

use mcp_tasks_core::{
    Limits, NewTask, Outcome, StoreError, TaskRecord, TaskStore, Transition, TransitionResult,
};
use mcp_tasks_proto::mcp::TaskStatus;
use mcp_tasks_store_sqlite::{SqliteOptions, SqliteStore};
use mcp_tasks_testkit::conformance::T0;

/// A few tasks in several states, to check nothing is lost.
async fn seed(store: &SqliteStore) -> Vec<TaskRecord> {
    let mut out = Vec::new();
    for i in 0..6 {
        let rec = store
            .create(common::task(Some("seed")), &Limits::NONE)
            .await
            .unwrap();
        let rec = if i % 2 == 0 {
            let t = Transition {
                task_id: rec.task.task_id.clone(),
                to: TaskStatus::Completed,
                status_message: Some(format!("done {i}")),
                outcome: Some(Outcome::result(&serde_json::json!({"content": [], "n": i}))),
                at_ms: T0 + 5,
            };
            match store.transition(t).await.unwrap() {
                TransitionResult::Applied(r) => r,
                other => panic!("{other:?}"),
            }
        } else {
            rec
        };
        out.push(rec);
    }
    out
}

async fn all_there(store: &SqliteStore, seeded: &[TaskRecord]) {
    for r in seeded {
        assert_eq!(
            store.get(&r.task.task_id).await.unwrap().as_ref(),
            Some(r),
            "a stored task was lost or changed"
        );
    }
}

fn big_task(kb: usize) -> NewTask {
    NewTask {
        request: format!("{{\"blob\":\"{}\"}}", "x".repeat(kb * 1024)),
        ..common::task(Some("big"))
    }
}

fn unavailable(r: Result<impl std::fmt::Debug, StoreError>, what: &str, words: &[&str]) -> String {
    match r {
        Err(StoreError::Unavailable(m)) => {
            for w in words {
                assert!(m.contains(w), "{what}: message {m:?} should mention {w:?}");
            }
            m
        }
        other => panic!("{what}: expected Unavailable, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_disk_fails_the_write_and_loses_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("full.db");
    let store = SqliteStore::open(&path, SqliteOptions::default()).unwrap();
    let seeded = seed(&store).await;
    // The "disk" is full: the file may not grow by a single page.
    let pages: i64 = {
        let c = rusqlite::Connection::open(&path).unwrap();
        c.query_row("PRAGMA page_count", [], |r| r.get(0)).unwrap()
    };
    let pages = u64::try_from(pages).unwrap();
    store.set_max_pages(Some(pages)).await.unwrap();
    let path_text = path.display().to_string();
    let m = unavailable(
        store.create(big_task(64), &Limits::NONE).await,
        "create on a full disk",
        &["full", &path_text],
    );
    eprintln!("full disk: {m}");
    // Concurrent writes in the same batches all fail alike; none panics or hangs. They are
    // as large as the one that just failed: the file's free pages (left by the seeding)
    // may hold a smaller task, which is no failure of the store.
    let mut handles = Vec::new();
    let store = std::sync::Arc::new(store);
    for _ in 0..16 {
        let s = std::sync::Arc::clone(&store);
        handles.push(tokio::spawn(async move {
            s.create(big_task(64), &Limits::NONE).await
        }));
    }
    for h in handles {
        unavailable(
            h.await.unwrap(),
            "concurrent create on a full disk",
            &["full"],
        );
    }
    all_there(&store, &seeded).await;
    assert_eq!(
        store
            .list(mcp_tasks_core::ListQuery::new(
                mcp_tasks_core::ListScope::Owner("big".into()),
                None,
                100
            ))
            .await
            .unwrap(),
        vec![]
    );
    // Space again.
    store.set_max_pages(None).await.unwrap();
    let rec = store.create(big_task(64), &Limits::NONE).await.unwrap();
    assert_eq!(store.get(&rec.task.task_id).await.unwrap(), Some(rec));
    all_there(&store, &seeded).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lock_held_elsewhere_fails_writes_after_busy_timeout_then_clears() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("locked.db");
    let mut opts = SqliteOptions::default();
    opts.busy_timeout = Duration::from_millis(300);
    let store = SqliteStore::open(&path, opts).unwrap();
    let seeded = seed(&store).await;
    let other = rusqlite::Connection::open(&path).unwrap();
    other.execute_batch("BEGIN EXCLUSIVE").unwrap();

    let started = Instant::now();
    let m = unavailable(
        store.create(common::task(None), &Limits::NONE).await,
        "create under a held lock",
        &["locked", &path.display().to_string()],
    );
    let waited = started.elapsed();
    eprintln!("held lock ({waited:?}): {m}");
    assert!(
        waited >= Duration::from_millis(250),
        "gave up before busy_timeout: {waited:?}"
    );
    assert!(
        waited < Duration::from_secs(5),
        "hung beyond busy_timeout: {waited:?}"
    );
    let t = Transition {
        task_id: seeded[1].task.task_id.clone(),
        to: TaskStatus::Cancelled,
        status_message: None,
        outcome: None,
        at_ms: T0 + 9,
    };
    unavailable(
        store.transition(t.clone()).await,
        "cancel under a held lock",
        &["locked"],
    );
    // Readers are not blocked by a writer in WAL mode.
    all_there(&store, &seeded).await;

    other.execute_batch("ROLLBACK").unwrap();
    store
        .create(common::task(None), &Limits::NONE)
        .await
        .unwrap();
    assert!(matches!(
        store.transition(t).await.unwrap(),
        TransitionResult::Applied(_)
    ));
    let mut seeded = seeded;
    seeded.remove(1);
    all_there(&store, &seeded).await;
}

/// The read-only scenario; runs where file permissions are enforced (see the test below).
async fn read_only_scenario(dir: &Path) {
    use std::os::unix::fs::PermissionsExt;
    let path = dir.join("ro.db");
    let seeded = {
        let store = SqliteStore::open(&path, SqliteOptions::default()).unwrap();
        seed(&store).await
    };
    // What an operator does: `chmod a-w tasks.db*`, later `chmod u+w tasks.db*`.
    let set_mode = |mode| {
        for suffix in ["", "-wal", "-shm"] {
            let p = format!("{}{suffix}", path.display());
            if Path::new(&p).exists() {
                std::fs::set_permissions(&p, std::fs::Permissions::from_mode(mode)).unwrap();
            }
        }
    };
    set_mode(0o444);
    let store = SqliteStore::open(&path, SqliteOptions::default())
        .expect("a read-only file still opens: its tasks can be read");
    all_there(&store, &seeded).await;
    let m = unavailable(
        store.create(common::task(None), &Limits::NONE).await,
        "create on a read-only file",
        &["read-only", &path.display().to_string()],
    );
    eprintln!("read-only: {m}");
    unavailable(
        store.heartbeat("x", T0).await,
        "heartbeat on a read-only file",
        &["read-only"],
    );
    all_there(&store, &seeded).await;
    set_mode(0o644);
    let rec = store
        .create(common::task(None), &Limits::NONE)
        .await
        .expect("writes work again once the file is writable");
    assert_eq!(store.get(&rec.task.task_id).await.unwrap(), Some(rec));
    all_there(&store, &seeded).await;
}

/// The child half of `a_read_only_file_fails_writes_then_clears` (a no-op unless asked).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn read_only_child() {
    if let Ok(dir) = std::env::var("MCP_TASKS_RO_DIR") {
        read_only_scenario(Path::new(&dir)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_only_file_fails_writes_then_clears() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    if !common::permissions_bypassed(dir.path()) {
        read_only_scenario(dir.path()).await;
        return;
    }
    // Root ignores permission bits: run the scenario in a child process as `nobody`.
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
    let d = dir.path().display().to_string();
    assert!(
        common::run_child(
            "faults::read_only_child",
            &[("MCP_TASKS_RO_DIR", &d)],
            Some(65534)
        ),
        "the read-only scenario failed in the child process (see its output above)"
    );
}

mod outcome_store_faults {
    //! Issue 15 (10): a task whose outcome cannot be stored (disk full, a lock held
    //! elsewhere) does not stay `working` for good: the engine keeps the task and retries;
    //! within its retry budget the outcome is stored once the store takes writes again,
    //! past it the task fails naming the cause; a waiting `tasks/result` returns either way.
    use std::path::Path;
    use std::sync::Arc;
    use std::time::Duration;

    use mcp_tasks_core::engine::{Classifier, TaskRun, TaskSpec};
    use mcp_tasks_core::{EngineError, Policy, Requester, SystemClock, TaskEngine};
    use mcp_tasks_proto::ErrorObject;
    use mcp_tasks_proto::mcp::TaskStatus;
    use mcp_tasks_store_sqlite::{SqliteOptions, SqliteStore};
    use mcp_tasks_testkit::NoRequestor;
    use serde_json::{Value, json};
    use tokio::sync::oneshot;
    use tokio::task::JoinHandle;

    fn completed(_: &Value) -> (TaskStatus, Option<String>) {
        (TaskStatus::Completed, None)
    }

    type Work =
        std::pin::Pin<Box<dyn std::future::Future<Output = Result<Value, ErrorObject>> + Send>>;
    type Waited = Result<Result<Value, ErrorObject>, EngineError>;

    fn big_result() -> Value {
        json!({"content": [{"type": "text", "text": "z".repeat(512 * 1024)}]})
    }

    struct Running {
        engine: TaskEngine,
        id: String,
        go: oneshot::Sender<()>,
        waiter: JoinHandle<Waited>,
    }

    /// An engine over `store` and one task that returns [`big_result`] when told to, with
    /// a `tasks/result` waiting for it.
    async fn start(store: Arc<SqliteStore>, retry_ms: u64) -> Running {
        let mut policy = Policy::default();
        policy.outcome_retry_ms = retry_ms;
        let engine = TaskEngine::new(store, policy, Arc::new(SystemClock));
        let (go, ready) = oneshot::channel::<()>();
        let spec = TaskSpec {
            requester: Requester::local(),
            method: "tools/call".into(),
            params: json!({"name": "big"}),
            task_field: json!({}),
            origin: Arc::new(NoRequestor),
            classify: completed as Classifier,
        };
        let runner = Box::new(move |_run: TaskRun| {
            Box::pin(async move {
                let _ = ready.await;
                Ok(big_result())
            }) as Work
        });
        let id = engine.create(spec, runner).await.unwrap().task.task_id;
        let waiter = {
            let (engine, id) = (engine.clone(), id.clone());
            tokio::spawn(async move { engine.result(&id, &Requester::local(), None).await })
        };
        Running {
            engine,
            id,
            go,
            waiter,
        }
    }

    impl Running {
        /// The task finishes while the store refuses writes; some time passes.
        async fn finish_into_a_fault(
            self,
            wait: Duration,
        ) -> (TaskEngine, String, JoinHandle<Waited>) {
            self.go.send(()).unwrap();
            tokio::time::sleep(wait).await;
            let task = self
                .engine
                .get(&self.id, &Requester::local())
                .await
                .unwrap();
            assert_eq!(task.status, TaskStatus::Working, "nothing could be stored");
            assert!(!self.waiter.is_finished(), "tasks/result returned early");
            assert_eq!(self.engine.running_count(), 1, "the task stays ours");
            (self.engine, self.id, self.waiter)
        }
    }

    async fn returned(waiter: JoinHandle<Waited>) -> Result<Value, ErrorObject> {
        tokio::time::timeout(Duration::from_secs(15), waiter)
            .await
            .expect("tasks/result returned once the store took writes again")
            .unwrap()
            .unwrap()
    }

    fn page_count(path: &Path) -> u64 {
        let c = rusqlite::Connection::open(path).unwrap();
        let n: i64 = c.query_row("PRAGMA page_count", [], |r| r.get(0)).unwrap();
        u64::try_from(n).unwrap()
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_result_refused_by_a_full_disk_is_stored_once_there_is_space() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("full.db");
        let store = Arc::new(SqliteStore::open(&path, SqliteOptions::default()).unwrap());
        let running = start(Arc::clone(&store), 30_000).await;
        // The disk is full: the file may not grow by a single page.
        store.set_max_pages(Some(page_count(&path))).await.unwrap();
        let (engine, id, waiter) = running
            .finish_into_a_fault(Duration::from_millis(400))
            .await;
        store.set_max_pages(None).await.unwrap();
        let mut got = returned(waiter).await.expect("the task's own result");
        got.as_object_mut().unwrap().remove("_meta");
        assert_eq!(got, big_result());
        let task = engine.get(&id, &Requester::local()).await.unwrap();
        assert_eq!(task.status, TaskStatus::Completed);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_result_that_cannot_be_stored_in_time_fails_the_task_naming_the_cause() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("locked.db");
        let mut opts = SqliteOptions::default();
        opts.busy_timeout = Duration::from_millis(50);
        let store = Arc::new(SqliteStore::open(&path, opts).unwrap());
        let running = start(Arc::clone(&store), 300).await;
        let other = rusqlite::Connection::open(&path).unwrap();
        other.execute_batch("BEGIN EXCLUSIVE").unwrap();
        let (engine, id, waiter) = running
            .finish_into_a_fault(Duration::from_millis(800))
            .await;
        other.execute_batch("ROLLBACK").unwrap();
        let err = returned(waiter).await.expect_err("the task failed");
        assert_eq!(err.code, -32603, "{err:?}");
        assert!(
            err.message
                .contains("The task's result could not be stored")
                && err.message.contains("locked"),
            "{}",
            err.message
        );
        let task = engine.get(&id, &Requester::local()).await.unwrap();
        assert_eq!(task.status, TaskStatus::Failed);
        assert_eq!(task.status_message.as_deref(), Some(err.message.as_str()));
    }
}
