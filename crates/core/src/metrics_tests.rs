use super::*;
use crate::memory::MemoryStore;
use crate::record::NewTask;
use crate::store::TaskStore;

fn rec(id: &str, status: TaskStatus, created: i64, updated: i64) -> TaskRecord {
    TaskRecord {
        task: NewTask {
            task_id: id.into(),
            owner: None,
            quota_key: "local".into(),
            status_message: None,
            created_at_ms: created,
            ttl_ms: None,
            poll_interval_ms: None,
            method: methods::TOOLS_CALL.into(),
            request: String::new(),
            executor: None,
        },
        seq: 0,
        status,
        last_updated_at_ms: updated,
        outcome: None,
    }
}

/// The value of the sample whose line starts with `prefix` (name and labels).
fn sample(text: &str, prefix: &str) -> Option<f64> {
    text.lines()
        .find(|l| l.starts_with(prefix) && l[prefix.len()..].starts_with(' '))
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|v| v.parse().ok())
}

/// Every line `series value` of `want` must be sampled in `text` with that value.
fn assert_samples(text: &str, want: &str) {
    for line in want.lines().map(str::trim).filter(|l| !l.is_empty()) {
        let (series, value) = line.rsplit_once(' ').expect("`series value`");
        let got = sample(text, series).unwrap_or_else(|| panic!("no {series} in\n{text}"));
        assert_eq!(got, value.parse::<f64>().unwrap(), "{series} in\n{text}");
    }
}

#[tokio::test]
async fn transitions_durations_and_input_time_are_counted_by_status_and_tool() {
    let m = Metrics::new();
    m.set_tools(["echo"]);
    m.task_created(&rec("a", TaskStatus::Working, 0, 0), Some("echo"));
    m.task_created(
        &rec("b", TaskStatus::Working, 0, 0),
        Some("secret-tool-name"),
    );
    m.task_changed(&rec("a", TaskStatus::InputRequired, 0, 1000));
    m.task_changed(&rec("a", TaskStatus::Working, 0, 3500));
    m.task_changed(&rec("a", TaskStatus::Completed, 0, 4000));
    m.task_changed(&rec("b", TaskStatus::Failed, 0, 10));
    let text = m.render(None, Duration::from_secs(1)).await;
    assert_samples(
        &text,
        r#"
        mcp_tasks_task_transitions_total{status="working",tool="echo"} 2
        mcp_tasks_task_transitions_total{status="working",tool="other"} 1
        mcp_tasks_task_transitions_total{status="completed",tool="echo"} 1
        mcp_tasks_task_transitions_total{status="failed",tool="other"} 1
        mcp_tasks_input_required_seconds_sum 2.5
        mcp_tasks_input_required_seconds_count 1
        mcp_tasks_task_duration_seconds_sum{status="completed",tool="echo"} 4
        "#,
    );
    // Unknown tool names never become label values.
    assert!(!text.contains("secret-tool-name"), "{text}");
    // Finished tasks are forgotten.
    assert!(m.inner.live.lock().is_empty());
}

#[tokio::test]
async fn stored_tasks_are_counted_from_the_store_at_scrape_time() {
    let store = MemoryStore::new();
    let limits = crate::store::Limits::default();
    for (i, to) in [
        TaskStatus::Completed,
        TaskStatus::Completed,
        TaskStatus::Working,
    ]
    .into_iter()
    .enumerate()
    {
        let id = format!("t{i}");
        store.create(new_task(&id), &limits).await.unwrap();
        if to != TaskStatus::Working {
            let t = crate::store::Transition {
                task_id: id,
                to,
                status_message: None,
                outcome: Some(crate::record::Outcome::result(&serde_json::json!({}))),
                at_ms: 1,
            };
            store.transition(t).await.unwrap();
        }
    }
    let m = Metrics::new();
    let text = m.render(Some(&store), Duration::from_secs(1)).await;
    // Every status is a series, those with no task too.
    for (status, n) in [("completed", 2.0), ("working", 1.0), ("cancelled", 0.0)] {
        let series = format!(r#"mcp_tasks_tasks{{status="{status}"}}"#);
        assert_eq!(sample(&text, &series), Some(n), "{series} in\n{text}");
    }
}

#[tokio::test]
async fn requests_waits_lookups_and_rejections() {
    let m = Metrics::new();
    m.request("tasks/get", Revision::V2025_11_25).finish(true);
    m.request("tasks/get", Revision::V2025_11_25).finish(false);
    m.request("vendor/unknown-method", Revision::V2025_11_25)
        .finish(true);
    m.request("tasks/get", Revision::V2026_07_28).finish(true);
    m.upstream_restart();
    m.upstream_call("tools/call", Duration::from_millis(3), true);
    m.upstream_call("vendor/x", Duration::from_millis(3), false);
    let wait = m.result_wait();
    m.failed_lookup();
    m.rejected(Rejection::Auth);
    m.rejected(Rejection::Auth);
    m.commit_batch(3);
    let text = m.render(None, Duration::from_secs(1)).await;
    assert_eq!(
        sample(
            &text,
            r#"mcp_tasks_requests_total{method="tasks/get",era="2025-11-25",outcome="ok"}"#
        ),
        Some(1.0)
    );
    assert_eq!(
        sample(
            &text,
            r#"mcp_tasks_requests_total{method="tasks/get",era="2025-11-25",outcome="error"}"#
        ),
        Some(1.0)
    );
    assert_eq!(
        sample(
            &text,
            r#"mcp_tasks_requests_total{method="other",era="2025-11-25",outcome="ok"}"#
        ),
        Some(1.0)
    );
    assert_eq!(
        sample(
            &text,
            r#"mcp_tasks_request_duration_seconds_count{method="tasks/get",era="2025-11-25"}"#
        ),
        Some(2.0)
    );
    assert_eq!(
        sample(
            &text,
            r#"mcp_tasks_requests_total{method="tasks/get",era="2026-07-28",outcome="ok"}"#
        ),
        Some(1.0)
    );
    assert_eq!(
        sample(&text, "mcp_tasks_gateway_upstream_restarts_total"),
        Some(1.0)
    );
    assert_eq!(
        sample(
            &text,
            r#"mcp_tasks_gateway_upstream_call_duration_seconds_count{method="tools/call",outcome="ok"}"#
        ),
        Some(1.0)
    );
    assert_eq!(
        sample(
            &text,
            r#"mcp_tasks_gateway_upstream_call_duration_seconds_count{method="other",outcome="error"}"#
        ),
        Some(1.0)
    );
    assert_eq!(sample(&text, "mcp_tasks_result_waits"), Some(1.0));
    assert_eq!(sample(&text, "mcp_tasks_failed_lookups_total"), Some(1.0));
    assert_eq!(
        sample(&text, r#"mcp_tasks_rejected_requests_total{reason="auth"}"#),
        Some(2.0)
    );
    assert_eq!(
        sample(&text, "mcp_tasks_store_commit_batch_size_sum"),
        Some(3.0)
    );
    drop(wait);
    let text = m.render(None, Duration::from_secs(1)).await;
    assert_eq!(sample(&text, "mcp_tasks_result_waits"), Some(0.0));
    // Two registries never share a counter.
    let other = Metrics::new().render(None, Duration::from_secs(1)).await;
    assert_eq!(sample(&other, "mcp_tasks_failed_lookups_total"), Some(0.0));
}

/// A store whose listing never answers (a database that hangs).
struct Stuck(MemoryStore);

#[async_trait::async_trait]
impl TaskStore for Stuck {
    async fn create(
        &self,
        t: crate::record::NewTask,
        limits: &crate::store::Limits,
    ) -> Result<TaskRecord, crate::StoreError> {
        self.0.create(t, limits).await
    }
    async fn get(&self, id: &str) -> Result<Option<TaskRecord>, crate::StoreError> {
        self.0.get(id).await
    }
    async fn transition(
        &self,
        t: crate::store::Transition,
    ) -> Result<crate::store::TransitionResult, crate::StoreError> {
        self.0.transition(t).await
    }
    async fn list(&self, _q: crate::ListQuery) -> Result<Vec<TaskRecord>, crate::StoreError> {
        std::future::pending().await
    }
    async fn delete_expired(
        &self,
        now: i64,
        limit: usize,
    ) -> Result<Vec<String>, crate::StoreError> {
        self.0.delete_expired(now, limit).await
    }
    async fn cursor_key(&self) -> Result<[u8; 32], crate::StoreError> {
        self.0.cursor_key().await
    }
    async fn heartbeat(&self, e: &str, until: i64) -> Result<(), crate::StoreError> {
        self.0.heartbeat(e, until).await
    }
    async fn fail_orphans(
        &self,
        s: crate::OrphanSweep,
    ) -> Result<Vec<TaskRecord>, crate::StoreError> {
        self.0.fail_orphans(s).await
    }
    fn subscribe(&self, id: &str) -> tokio::sync::watch::Receiver<u64> {
        self.0.subscribe(id)
    }
}

#[tokio::test]
async fn a_store_that_does_not_answer_bounds_the_scrape_and_is_counted() {
    let m = Metrics::new();
    let store = Stuck(MemoryStore::new());
    let t0 = Instant::now();
    let text = m.render(Some(&store), Duration::from_millis(100)).await;
    assert!(t0.elapsed() < Duration::from_secs(2), "{:?}", t0.elapsed());
    assert_eq!(
        sample(&text, r#"mcp_tasks_store_errors_total{op="count"}"#),
        Some(1.0),
        "{text}"
    );
    // No made-up numbers: the gauge was never set.
    assert!(!text.contains("mcp_tasks_tasks{"), "{text}");
}

fn new_task(id: &str) -> crate::record::NewTask {
    crate::record::NewTask {
        task_id: id.into(),
        owner: None,
        quota_key: "local".into(),
        created_at_ms: 0,
        ttl_ms: None,
        poll_interval_ms: None,
        method: methods::TOOLS_CALL.into(),
        request: "{}".into(),
        executor: None,
        status_message: None,
    }
}

#[tokio::test]
async fn instrumented_stores_time_every_operation_and_count_failures_not_limits() {
    let m = Metrics::new();
    let store = crate::Instrumented::new(std::sync::Arc::new(MemoryStore::new()), m.clone());
    let none = crate::store::Limits::default();
    store.create(new_task("a"), &none).await.unwrap();
    store.get("a").await.unwrap();
    store.get_summary("a").await.unwrap();
    // The same id again: a failure.
    assert!(store.create(new_task("a"), &none).await.is_err());
    // Over a limit: a refusal, not a store failure.
    let one = crate::store::Limits {
        max_active: Some(1),
        ..crate::store::Limits::default()
    };
    let refused = store.create(new_task("b"), &one).await;
    assert!(
        matches!(refused, Err(crate::StoreError::LimitExceeded { .. })),
        "{refused:?}"
    );
    let text = m.render(Some(&store), Duration::from_secs(1)).await;
    // `count`: the scrape's own count, timed before the text is encoded.
    assert_samples(
        &text,
        r#"
        mcp_tasks_store_operation_duration_seconds_count{op="create"} 3
        mcp_tasks_store_operation_duration_seconds_count{op="get"} 2
        mcp_tasks_store_operation_duration_seconds_count{op="count"} 1
        mcp_tasks_store_errors_total{op="create"} 1
        mcp_tasks_tasks{status="working"} 1
        "#,
    );
}
