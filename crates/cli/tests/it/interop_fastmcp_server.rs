//! FastMCP 4.1.4 (`fastmcp[tasks]`, in `target/venv-fastmcp4`, see
//! `interop/python/setup.sh`) as a 2026-07-28 *server* with the tasks extension
//! (`interop/python/fastmcp_server.py`):
//!
//! * for our CLI (`mcp-tasks call`, era found by `server/discover`) over Streamable HTTP
//!   and over stdio;
//! * as the upstream of our gateway (`serve --upstream-url` over HTTP, `serve --stdio
//!   --upstream-cmd` over stdio) with a 2025-11-25 client in front (our CLI forced to
//!   `--protocol legacy`).
//!
//! Each pairing drives four tasks at once: `sleep` to `completed`, `ask` through
//! `input_required` (its elicitation answered with `--elicit-reply`), a long `sleep` to
//! `cancelled` by Ctrl-C, and `error` to `failed` with FastMCP's exact JSON-RPC error.
//! The pairings run concurrently inside each test (one FastMCP HTTP server shared) to keep
//! the time small. `MCP_TASKS_REQUIRE_INTEROP=1` turns a missing venv into a failure.

use crate::client_support::{cli, cli_auto, legacy, stderr, wait_output};
use crate::http_common::{Server, bin};
use crate::interop_fastmcp::venv_python;

use std::io::{BufRead, BufReader};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use mcp_tasks_client::{Client, HttpClientConfig};
use serde_json::{Value, json};

/// Bound on one CLI run (FastMCP starts in ~2.5 s on an idle core; the tests run beside
/// others on a shared machine).
const LIMIT: Duration = Duration::from_secs(90);

fn script() -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../interop/python/fastmcp_server.py")
        .to_string_lossy()
        .into_owned()
}

fn fastmcp() -> Option<String> {
    venv_python("venv-fastmcp4", "interop/python/setup.sh").map(|p| p.to_string_lossy().into())
}

/// The FastMCP server over HTTP on a free port of 127.0.0.1, killed on drop.
struct FastMcp {
    child: Child,
    url: String,
}

impl FastMcp {
    fn start(py: &str) -> Self {
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        let child = Command::new(py)
            .args([&script(), "--port", &port.to_string()])
            .env("FASTMCP_SHOW_CLI_BANNER", "false")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn the FastMCP server");
        let addr = SocketAddr::from(([127, 0, 0, 1], port));
        let start = Instant::now();
        while TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_err() {
            assert!(start.elapsed() < LIMIT, "FastMCP did not listen on {addr}");
            std::thread::sleep(Duration::from_millis(100));
        }
        Self {
            child,
            url: format!("http://{addr}/mcp"),
        }
    }
}

impl Drop for FastMcp {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The four scenarios of one pairing, by name, with the CLI's `--json` object and stderr.
#[derive(Debug)]
struct Outcomes {
    label: String,
    runs: Vec<(&'static str, Output)>,
}

impl Outcomes {
    fn get(&self, name: &str) -> (Value, String, Option<i32>) {
        let (_, o) = self
            .runs
            .iter()
            .find(|(n, _)| *n == name)
            .unwrap_or_else(|| panic!("{}: no {name}", self.label));
        let out = String::from_utf8_lossy(&o.stdout);
        let v = out
            .lines()
            .find_map(|l| serde_json::from_str::<Value>(l).ok())
            .unwrap_or(Value::Null);
        (v, stderr(o), o.status.code())
    }

    /// Every pairing ends the same way: FastMCP's own results and error.
    fn check(&self) {
        let l = &self.label;
        let (v, err, code) = self.get("completed");
        assert_eq!(code, Some(0), "{l}: completed: {v}\n{err}");
        assert_eq!(v["task"]["status"], "completed", "{l}: {v}\n{err}");
        assert_eq!(v["result"]["content"][0]["text"], "slept 300", "{l}: {v}");
        // One line per status, not per poll (FastMCP stamps every tasks/get anew).
        let working = err.lines().filter(|x| x.ends_with(": working")).count();
        assert_eq!(working, 1, "{l}: a status line per poll:\n{err}");

        let (v, err, code) = self.get("input_required");
        assert_eq!(code, Some(0), "{l}: input_required: {v}\n{err}");
        // Asked inside the task (a status poll may fall between the question and its
        // answer, so the `input_required` line itself is not always seen).
        assert!(
            err.contains(": input_required") || err.contains("elicitation (task "),
            "{l}: never parked:\n{err}"
        );
        assert!(err.contains("answered from --elicit-reply"), "{l}:\n{err}");
        assert_eq!(v["task"]["status"], "completed", "{l}: {v}\n{err}");
        assert_eq!(
            v["result"]["content"][0]["text"], "answered: Bob",
            "{l}: {v}"
        );

        let (v, err, code) = self.get("cancelled");
        assert_eq!(code, Some(130), "{l}: cancelled: {v}\n{err}");
        assert_eq!(v["task"]["status"], "cancelled", "{l}: {v}\n{err}");
        assert!(err.contains("cancelled"), "{l}:\n{err}");

        let (v, err, code) = self.get("failed");
        assert_eq!(code, Some(1), "{l}: failed: {v}\n{err}");
        assert_eq!(v["task"]["status"], "failed", "{l}: {v}\n{err}");
        assert_eq!(
            v["error"],
            json!({"code": -32050, "message": "boom"}),
            "{l}: {v}"
        );
    }
}

/// Run `cmd`; once its stderr shows the task `working`, send it SIGINT (Ctrl-C).
fn interrupted(mut cmd: Command) -> Output {
    let mut child = cmd.spawn().expect("spawn the CLI");
    let err = child.stderr.take().expect("stderr");
    let pid = child.id().to_string();
    let reader = std::thread::spawn(move || {
        let mut all = String::new();
        let mut sent = false;
        for line in BufReader::new(err).lines() {
            let Ok(line) = line else { break };
            if !sent && line.ends_with(": working") {
                sent = true;
                let _ = Command::new("kill").args(["-INT", &pid]).status();
            }
            all.push_str(&line);
            all.push('\n');
        }
        all
    });
    let mut o = wait_output(child, LIMIT);
    o.stderr = reader.join().expect("stderr reader").into_bytes();
    o
}

/// The four scenarios against one server, concurrently: `make(args)` is the CLI command
/// for `call <args> <how to reach the server>`.
fn pairing(label: &str, make: impl Fn(&[&str]) -> Command + Sync) -> Outcomes {
    let scenarios: [(&'static str, &[&str]); 4] = [
        ("completed", &["sleep", "--arg", "ms=300", "--task"]),
        (
            "input_required",
            &[
                "ask",
                "--arg",
                "question=Name?",
                "--task",
                "--elicit-reply",
                r#"{"answer":"Bob"}"#,
            ],
        ),
        ("cancelled", &["sleep", "--arg", "ms=60000", "--task"]),
        (
            "failed",
            &[
                "error",
                "--arg",
                "message=boom",
                "--arg",
                "ms=300",
                "--task",
            ],
        ),
    ];
    let runs = std::thread::scope(|s| {
        let handles: Vec<_> = scenarios
            .iter()
            .map(|(name, args)| {
                let make = &make;
                s.spawn(move || {
                    let cmd = make(args);
                    let o = if *name == "cancelled" {
                        interrupted(cmd)
                    } else {
                        let child = { cmd }.spawn().expect("spawn the CLI");
                        wait_output(child, LIMIT)
                    };
                    (*name, o)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("scenario thread"))
            .collect()
    });
    Outcomes {
        label: label.to_owned(),
        runs,
    }
}

/// `call <args> --json` and the server's address; `legacy` forces 2025-11-25.
fn call(legacy: bool, args: &[&str], server: &[String]) -> Command {
    let mut all = vec!["call"];
    all.extend_from_slice(args);
    all.push("--json");
    let mut cmd = if legacy { cli(&all) } else { cli_auto(&all) };
    cmd.args(server).env("FASTMCP_SHOW_CLI_BANNER", "false");
    cmd
}

#[test]
fn fastmcp4_server_drives_tasks_for_the_cli_over_http_and_stdio() {
    let Some(py) = fastmcp() else { return };
    let server = FastMcp::start(&py);
    let http = vec!["--url".to_owned(), server.url.clone()];
    let stdio = vec!["--".to_owned(), py.clone(), script(), "--stdio".to_owned()];
    let (over_http, over_stdio) = std::thread::scope(|s| {
        let h = s.spawn(|| pairing("CLI over HTTP", |a| call(false, a, &http)));
        let o = s.spawn(|| pairing("CLI over stdio", |a| call(false, a, &stdio)));
        (h.join().unwrap(), o.join().unwrap())
    });
    over_http.check();
    over_stdio.check();
    // The era was found (no `--protocol` given): the CLI says the server decides.
    let (_, err, _) = over_stdio.get("completed");
    assert!(err.contains("2026-07-28"), "{err}");
}

#[test]
fn fastmcp4_server_behind_the_gateway_for_a_legacy_client() {
    let Some(py) = fastmcp() else { return };
    let server = FastMcp::start(&py);
    // Over HTTP: the gateway on HTTP, FastMCP on HTTP.
    let gateway = Server::start_env(
        &[
            "--upstream-url",
            &server.url,
            "--upstream-protocol",
            "modern",
            // For the modern client: its calls become tasks past 100 ms.
            "--task-after",
            "100ms",
        ],
        &[(
            "RUST_LOG",
            "warn,mcp_tasks_gateway::upstream_task=info,mcp_tasks_gateway::modern_upstream=info",
        )],
    );
    let http = vec!["--url".to_owned(), gateway.url()];
    // Over stdio: the gateway spawned by the CLI, FastMCP spawned by the gateway.
    let upstream_cmd = format!("{py} {} --stdio", script());
    let stdio = vec![
        "--".to_owned(),
        bin().to_owned(),
        "serve".to_owned(),
        "--stdio".to_owned(),
        "--store".to_owned(),
        "memory".to_owned(),
        "--upstream-cmd".to_owned(),
        upstream_cmd,
        "--upstream-protocol".to_owned(),
        "auto".to_owned(),
    ];
    let (over_http, over_stdio, modern) = std::thread::scope(|s| {
        let h = s.spawn(|| pairing("gateway over HTTP", |a| call(true, a, &http)));
        let o = s.spawn(|| pairing("gateway over stdio", |a| call(true, a, &stdio)));
        // A 2026-07-28 client at the same gateway: its `tasks/cancel` reaches FastMCP too.
        let m = s.spawn(|| pairing("modern client at the gateway", |a| call(false, a, &http)));
        (h.join().unwrap(), o.join().unwrap(), m.join().unwrap())
    });
    over_http.check();
    over_stdio.check();
    modern.check();
    // The gateway's tasks are its own (2025-11-25, UUIDs) ...
    let (v, _, _) = over_http.get("completed");
    assert_eq!(v["task"]["taskId"].as_str().unwrap().len(), 36, "{v}");
    // ... and cancelling one (of either era) cancels FastMCP's (`tasks/cancel` upstream).
    let start = Instant::now();
    while gateway.stderr().matches("upstream task cancelled").count() < 2 {
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "the upstream task was not cancelled:\n{}",
            gateway.stderr()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    // The legacy client sees FastMCP's serverInfo through the gateway.
    let rt = tokio::runtime::Runtime::new().unwrap();
    let info = rt.block_on(async {
        let c = Client::connect_http(HttpClientConfig::new(gateway.url()), legacy())
            .await
            .expect("connect to the gateway");
        let info = c.initialize_result().server_info.clone();
        c.close().await;
        info
    });
    assert_eq!(info["name"], "fastmcp-interop-server", "{info}");
}
