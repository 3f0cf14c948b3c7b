use super::*;

#[test]
fn a_line_has_every_field_and_no_raw_session() {
    let who = Requester {
        principal: Some("alice".into()),
        sees_all: false,
        session: Some("secret-session-id".into()),
        client_address: None,
    };
    let e = Event::new(EventKind::Created)
        .who(&who)
        .task("t1")
        .method("tools/call")
        .with("tool", "sleep");
    let line = e.to_line("2026-01-01T00:00:00.000Z");
    let v: Value = serde_json::from_str(&line).unwrap();
    assert_eq!(v["event"], "task_created");
    assert_eq!(v["principal"], "alice");
    assert_eq!(v["taskId"], "t1");
    assert_eq!(v["method"], "tools/call");
    assert_eq!(v["outcome"], "ok");
    assert_eq!(v["tool"], "sleep");
    assert_eq!(v["session"].as_str().unwrap().len(), 16);
    assert!(!line.contains("secret-session-id"));
    assert!(
        !format!("{e:?}").contains("secret-session-id"),
        "Debug shows the digest"
    );
}

#[tokio::test]
async fn lines_are_appended_and_a_reopen_follows_a_rename() {
    let dir = tempfile_dir();
    let path = dir.join("audit.log");
    std::fs::write(&path, "old\n").unwrap();
    let audit = Audit::open(path.to_str().unwrap(), 16).unwrap();
    audit.record(Event::new(EventKind::Listed));
    wait_for(|| std::fs::read_to_string(&path).unwrap().lines().count() == 2).await;
    let moved = dir.join("audit.log.1");
    std::fs::rename(&path, &moved).unwrap();
    audit.reopen();
    wait_for(|| path.exists()).await;
    audit.record(Event::new(EventKind::Created));
    wait_for(|| std::fs::read_to_string(&path).is_ok_and(|s| s.contains("task_created"))).await;
    assert_eq!(std::fs::read_to_string(&moved).unwrap().lines().count(), 2);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[tokio::test(flavor = "current_thread")]
async fn a_full_queue_drops_and_counts_without_waiting() {
    let dir = tempfile_dir();
    let audit = Audit::open(dir.join("a.log").to_str().unwrap(), 1).unwrap();
    let metrics = Metrics::new();
    audit.set_metrics(metrics.clone());
    // The writer cannot run in between: a current-thread runtime, no await.
    for _ in 0..5 {
        audit.record(Event::new(EventKind::Listed));
    }
    assert_eq!(audit.dropped(), 4);
    let text = metrics.render(None, Duration::from_secs(1)).await;
    assert!(text.contains("mcp_tasks_audit_dropped_total 4"), "{text}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn client_strings_are_cut_in_a_line() {
    let huge = "x".repeat(1 << 20);
    let who = Requester {
        principal: Some(huge.clone()),
        sees_all: false,
        session: None,
        client_address: None,
    };
    let line = Event::new(EventKind::LookupFailed)
        .who(&who)
        .task(&huge)
        .method(&huge)
        .with("tool", huge.as_str())
        .to_line("2026-01-01T00:00:00.000Z");
    assert!(line.len() < 4 * 1024, "{} bytes", line.len());
    let v: Value = serde_json::from_str(&line).unwrap();
    for k in ["taskId", "principal", "method", "tool"] {
        assert!(
            v[k].as_str().unwrap().ends_with("…(cut, 1048576 bytes)"),
            "{k}: {}",
            v[k]
        );
    }
}

#[cfg(unix)]
#[tokio::test]
async fn the_file_is_created_private() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile_dir();
    let path = dir.join("audit.log");
    let _audit = Audit::open(path.to_str().unwrap(), 16).unwrap();
    let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600, "{mode:o}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `/dev/full` takes the open and fails every write, as a full disk does.
#[cfg(target_os = "linux")]
#[tokio::test]
async fn lines_lost_to_a_failed_write_are_counted() {
    let audit = Audit::open("/dev/full", 16).unwrap();
    let metrics = Metrics::new();
    audit.set_metrics(metrics.clone());
    for _ in 0..3 {
        audit.record(Event::new(EventKind::Listed));
    }
    wait_for(|| audit.dropped() == 3).await;
    let text = metrics.render(None, Duration::from_secs(1)).await;
    assert!(text.contains("mcp_tasks_audit_dropped_total 3"), "{text}");
    // Warned about once (the next warning waits a minute), with the count.
    let last = *audit.inner.lost.last_warning.lock();
    assert!(last.is_some());
}

fn tempfile_dir() -> PathBuf {
    let d = std::env::temp_dir().join(format!("mcp-tasks-audit-{}", uuid::Uuid::new_v4()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

async fn wait_for(mut f: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !f() {
        assert!(Instant::now() < deadline, "timed out");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}
