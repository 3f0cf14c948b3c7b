//! `mcp-tasks bench` against our own server on 127.0.0.1 for about a second: the JSON
//! report has its shape and the run saw no error.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_mcp-tasks");
const TOKEN: &str = "smoke-token";

struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Start `mcp-tasks serve` on a free port (memory store, one bearer token so that
/// `tasks/list` is available); returns it and its URL.
fn start_server() -> (Server, String) {
    start_server_with(&[])
}

/// [`start_server`] with more `serve` arguments.
fn start_server_with(extra: &[&str]) -> (Server, String) {
    let mut child = Command::new(BIN)
        .args(["serve", "--listen", "127.0.0.1:0", "--store", "memory"])
        .args(extra)
        .env("MCP_TASKS_AUTH_TOKENS", format!("{TOKEN} smoke"))
        .env("RUST_LOG", "warn")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn mcp-tasks serve");
    let stderr = child.stderr.take().expect("stderr");
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut tx = Some(tx);
        for line in BufReader::new(stderr).lines() {
            let Ok(line) = line else { break };
            if let Some(url) = line.strip_prefix("listening on ")
                && let Some(tx) = tx.take()
            {
                let _ = tx.send(url.trim().to_owned());
            }
        }
    });
    let server = Server(child);
    let url = rx
        .recv_timeout(Duration::from_secs(20))
        .expect("the server prints `listening on URL`");
    (server, url)
}

fn bench(url: &str, pid: u32, args: &[&str]) -> Value {
    let out = Command::new(BIN)
        .args([
            "bench",
            "--url",
            url,
            "--token",
            TOKEN,
            "--duration",
            "1s",
            "--warmup",
            "200ms",
            "--concurrency",
            "4",
            "--server-pid",
            &pid.to_string(),
            "--json",
        ])
        .args(args)
        .env("RUST_LOG", "warn")
        .output()
        .expect("run mcp-tasks bench");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "bench {args:?} failed ({}):\n{stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("not JSON ({e}):\n{stdout}"))
}

/// A short run (one client, 300 ms, no warm-up) that must see errors: bench exits 1 and
/// still prints its JSON report, which is returned.
fn bench_failing(url: &str, args: &[&str]) -> Value {
    let out = Command::new(BIN)
        .args(["bench", "--url", url, "--token", TOKEN, "--json"])
        .args([
            "--duration",
            "300ms",
            "--warmup",
            "0s",
            "--concurrency",
            "1",
        ])
        .args(args)
        .env("RUST_LOG", "warn")
        .output()
        .expect("run mcp-tasks bench");
    assert!(!out.status.success(), "errors make bench exit 1");
    serde_json::from_slice(&out.stdout).expect("a JSON report")
}

fn check_op(report: &Value, op: &str) {
    let o = &report["ops"][op];
    for field in ["per_s", "p50_ms", "p90_ms", "p99_ms", "max_ms", "mean_ms"] {
        assert!(o[field].is_number(), "ops.{op}.{field} in {report:#}");
    }
    assert!(
        o["count"].as_u64().unwrap() > 0,
        "ops.{op} measured nothing"
    );
    assert_eq!(o["errors"], 0);
    let (p50, p99, max) = (
        o["p50_ms"].as_f64().unwrap(),
        o["p99_ms"].as_f64().unwrap(),
        o["max_ms"].as_f64().unwrap(),
    );
    assert!(p50 <= p99 && p99 <= max, "ordered percentiles: {o}");
}

fn check_common(report: &Value, scenario: &str) {
    assert_eq!(report["tool"], "mcp-tasks bench");
    assert!(
        report["era"] == "legacy" || report["era"] == "modern",
        "{report:#}"
    );
    assert_eq!(report["scenario"], scenario);
    assert_eq!(report["concurrency"], 4);
    assert!(report["measured_s"].as_f64().unwrap() >= 0.9);
    assert_eq!(report["errors"]["total"], 0, "{report:#}");
    assert!(report["errors"]["by_class"].as_object().unwrap().is_empty());
    assert!(report["figure"]["value"].is_number());
    assert!(report["figure"]["name"].is_string());
    let cpu = &report["cpu"];
    assert!(
        cpu["bench_s"].is_number() && cpu["server_s"].is_number(),
        "{cpu}"
    );
    assert!(cpu["load_generator_bound"].is_boolean());
    let mem = &report["server_memory"];
    assert!(mem["peak_rss_kib"].as_u64().unwrap() >= mem["rss_kib"].as_u64().unwrap());
}

#[test]
fn bench_runs_against_our_server_without_errors() {
    let (server, url) = start_server();
    let pid = server.0.id();

    let r = bench(&url, pid, &["--scenario", "create"]);
    check_common(&r, "create");
    check_op(&r, "tools/call");
    assert!(r["figure"]["value"].as_f64().unwrap() > 0.0);

    let r = bench(&url, pid, &["--scenario", "get", "--tasks", "100"]);
    check_common(&r, "get");
    check_op(&r, "tasks/get");
    assert_eq!(r["setup"]["tasks"], 100);

    let r = bench(&url, pid, &["--scenario", "result-wait", "--work-ms", "20"]);
    check_common(&r, "result-wait");
    for op in [
        "tools/call",
        "tasks/result",
        "result-lateness",
        "result-overhead",
        "lifecycle",
    ] {
        check_op(&r, op);
    }

    // `--wait-url`: tasks/result goes to another endpoint of the same session (here the
    // same server; a dead one proves the waiter is used: every tasks/result fails).
    let r = bench(
        &url,
        pid,
        &[
            "--scenario",
            "result-wait",
            "--work-ms",
            "20",
            "--wait-url",
            &url,
        ],
    );
    check_common(&r, "result-wait");
    check_op(&r, "tasks/result");
    let report = bench_failing(
        &url,
        &[
            "--scenario",
            "result-wait",
            "--work-ms",
            "1",
            "--wait-url",
            "http://127.0.0.1:1/mcp",
            "--timeout",
            "2s",
        ],
    );
    assert!(
        report["ops"]["tasks/result"]["errors"].as_u64().unwrap() > 0,
        "{report:#}"
    );
    assert!(
        report["ops"]["tools/call"]["count"].as_u64().unwrap() > 0,
        "{report:#}"
    );

    let r = bench(
        &url,
        pid,
        &[
            "--scenario",
            "lifecycle",
            "--work-ms",
            "20",
            "--poll-ms",
            "10",
        ],
    );
    check_common(&r, "lifecycle");
    for op in ["tools/call", "tasks/get", "tasks/result", "lifecycle"] {
        check_op(&r, op);
    }

    let r = bench(&url, pid, &["--scenario", "list", "--tasks", "250"]);
    check_common(&r, "list");
    check_op(&r, "tasks/list");
    assert_eq!(r["setup"]["tasks"], 250);
    assert!(r["tasks_per_page"].as_f64().unwrap() > 0.0);
}

/// `bench --era modern`: every 2026-07-28 scenario (create, get, lifecycle by polling
/// `tasks/get` until the result comes inline) against our server, whose `sleep` is made a
/// required-task tool so that every call becomes a task; the runs complete operations and
/// see no error (an error of any kind, a direct answer instead of a task included, makes
/// `bench` exit 1).
#[test]
fn bench_modern_era_runs_every_scenario_without_errors() {
    let (server, url) = start_server_with(&["--tool-task-support", "sleep=required"]);
    let pid = server.0.id();
    let modern = |args: &[&str]| {
        let mut all = vec!["--era", "modern"];
        all.extend_from_slice(args);
        let r = bench(&url, pid, &all);
        assert_eq!(r["era"], "modern", "{r:#}");
        r
    };

    let r = modern(&["--scenario", "create"]);
    check_common(&r, "create");
    check_op(&r, "tools/call");
    assert!(r["figure"]["value"].as_f64().unwrap() > 0.0);
    assert!(
        r["cpu"]["server_us_per_op"].as_f64().unwrap() > 0.0,
        "{r:#}"
    );

    let r = modern(&["--scenario", "get", "--tasks", "100"]);
    check_common(&r, "get");
    check_op(&r, "tasks/get");
    assert_eq!(r["setup"]["tasks"], 100);
    // With a long work the K tasks are still working while they are read.
    let r = modern(&["--scenario", "get", "--tasks", "20", "--work-ms", "60000"]);
    check_common(&r, "get");
    check_op(&r, "tasks/get");
    assert_eq!(
        (r["setup"]["tasks"].as_u64(), r["work_ms"].as_u64()),
        (Some(20), Some(60_000))
    );

    for scenario in ["lifecycle", "lifecycle-poll-interval"] {
        let r = modern(&["--scenario", scenario, "--work-ms", "20", "--poll-ms", "10"]);
        check_common(&r, scenario);
        // No tasks/result in this era: the result came inline in the last tasks/get.
        for op in ["tools/call", "tasks/get", "lifecycle"] {
            check_op(&r, op);
        }
        assert!(r["ops"].get("tasks/result").is_none(), "{r:#}");
    }
}

/// In the modern era a tool the server runs directly is reported, not counted as a task;
/// the scenarios without a 2026-07-28 form are refused before any request.
#[test]
fn bench_modern_era_reports_direct_answers_and_refuses_legacy_only_scenarios() {
    // `sleep` 0 ms is `optional` by default: a modern call finishes within --task-after and
    // is answered directly.
    let (server, url) = start_server();
    let r = bench_failing(&url, &["--era", "modern"]);
    assert!(r["errors"]["total"].as_u64().unwrap() > 0, "{r:#}");
    let example = r["errors"]["by_class"]["malformed"]["example"]
        .as_str()
        .unwrap();
    assert!(example.contains("directly"), "{example}");
    drop(server);

    for scenario in ["result-wait", "list"] {
        let out = Command::new(BIN)
            .args([
                "bench",
                "--url",
                "http://127.0.0.1:1/mcp",
                "--era",
                "modern",
                "--scenario",
                scenario,
            ])
            .output()
            .unwrap();
        assert!(!out.status.success());
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("no 2026-07-28 form"), "{scenario}: {err}");
    }
}

/// `bench --compare-metrics` starts its own servers, one with `--no-metrics` and one with
/// metrics on (scraped meanwhile), and reports both throughputs and their ratio.
#[test]
fn compare_metrics_reports_both_throughputs_and_their_ratio() {
    let out = Command::new(BIN)
        .args([
            "bench",
            "--compare-metrics",
            "--rounds",
            "1",
            "--scenario",
            "get",
            "--tasks",
            "50",
            "--duration",
            "1500ms",
            "--warmup",
            "200ms",
            "--concurrency",
            "2",
            "--json",
        ])
        .env("RUST_LOG", "warn")
        .output()
        .expect("run mcp-tasks bench --compare-metrics");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "bench --compare-metrics failed ({}):\n{stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    let r: Value =
        serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("not JSON ({e}):\n{stdout}"));
    assert_eq!(r["scenario"], "get", "{r:#}");
    assert_eq!(r["errors"], 0, "{r:#}");
    let rounds = r["rounds"].as_array().unwrap();
    assert_eq!(rounds.len(), 1, "{r:#}");
    let (off, on) = (
        rounds[0]["metrics_off"].as_f64().unwrap(),
        rounds[0]["metrics_on"].as_f64().unwrap(),
    );
    assert!(off > 0.0 && on > 0.0, "{r:#}");
    let ratio = r["median_ratio"].as_f64().unwrap();
    assert!((ratio - on / off).abs() < 1e-9, "{r:#}");
    assert!((r["cost_percent"].as_f64().unwrap() - (1.0 - ratio) * 100.0).abs() < 1e-6);
    // The server with metrics on was scraped while it ran (every second, 1.5 s).
    assert!(r["scrapes"].as_u64().unwrap() >= 1, "{r:#}");
}

#[test]
fn compare_metrics_and_url_are_exclusive() {
    let out = Command::new(BIN)
        .args([
            "bench",
            "--compare-metrics",
            "--url",
            "http://127.0.0.1:1/mcp",
        ])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--compare-metrics") && err.contains("--url"),
        "{err}"
    );
    let out = Command::new(BIN).args(["bench"]).output().unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("--url"));
}
