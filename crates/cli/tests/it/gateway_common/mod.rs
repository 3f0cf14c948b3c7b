//! Shared by the gateway tests: the fake upstream, its log, and server-everything.
#![allow(dead_code, unreachable_pub, missing_docs)]

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::common::{Stdio, TIMEOUT};

pub const RELATED: &str = "io.modelcontextprotocol/related-task";

pub fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/it")
        .join("gateway_fixtures")
        .join(name)
}

/// A scratch directory for one test.
pub fn scratch(test: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("mcp-tasks-gw-{}-{test}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The fake upstream, logging what it receives to `dir/upstream.log`.
pub struct Fake {
    pub dir: PathBuf,
    pub tasks: bool,
}

impl Fake {
    pub fn new(test: &str, tasks: bool) -> Self {
        Self {
            dir: scratch(test),
            tasks,
        }
    }

    pub fn log_path(&self) -> PathBuf {
        self.dir.join("upstream.log")
    }

    pub fn pid_path(&self) -> PathBuf {
        self.dir.join("upstream.pid")
    }

    /// `serve` flags that put the gateway in front of the fake.
    pub fn args(&self) -> Vec<String> {
        let mut a = vec![
            "--upstream-cmd".to_owned(),
            format!("node {}", fixture("fake_upstream.mjs").display()),
            "--upstream-env".to_owned(),
            format!("FAKE_LOG={}", self.log_path().display()),
            "--upstream-env".to_owned(),
            format!("FAKE_PIDFILE={}", self.pid_path().display()),
        ];
        if self.tasks {
            a.extend(["--upstream-env".to_owned(), "FAKE_TASKS=1".to_owned()]);
        }
        a
    }

    /// Start a gateway in front of the fake (memory store) and initialize it.
    pub fn gateway(&self, extra: &[&str]) -> Stdio {
        let mut args: Vec<String> = self.args();
        args.extend(extra.iter().map(|s| (*s).to_owned()));
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        let mut s = Stdio::spawn(&refs);
        s.initialize();
        s
    }

    /// Every message the upstream has received so far.
    pub fn received(&self) -> Vec<Value> {
        std::fs::read_to_string(self.log_path())
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }

    /// Wait until the upstream has received a message matching `pred`.
    pub fn wait_received(&self, what: &str, pred: impl Fn(&Value) -> bool) -> Value {
        let deadline = Instant::now() + TIMEOUT;
        loop {
            if let Some(m) = self.received().into_iter().find(|m| pred(m)) {
                return m;
            }
            assert!(
                Instant::now() < deadline,
                "the upstream never received {what}; it got: {:#?}",
                self.received()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    pub fn pid(&self) -> i32 {
        let deadline = Instant::now() + TIMEOUT;
        loop {
            if let Ok(s) = std::fs::read_to_string(self.pid_path())
                && let Ok(p) = s.trim().parse()
            {
                return p;
            }
            assert!(Instant::now() < deadline, "the fake upstream wrote no pid");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// `node .../server-everything/dist/index.js stdio`, if interop's npm packages are
/// installed (`npm ci --prefix interop`); `None` (and a note) otherwise.
pub fn everything() -> Option<String> {
    let js = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../interop/node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    if js.exists() {
        Some(format!("node {} stdio", js.display()))
    } else {
        eprintln!(
            "skipped: {} is missing (run `npm ci --prefix interop`)",
            js.display()
        );
        assert!(
            std::env::var_os("MCP_TASKS_REQUIRE_INTEROP").is_none(),
            "the npm packages of interop/ are required (MCP_TASKS_REQUIRE_INTEROP is set)"
        );
        None
    }
}

/// Run `mcp-tasks ARGS...` (the CLI, e.g. `call ... --json`), require exit status 0 and
/// return its stdout as JSON.
pub fn cli_json(args: &[&str]) -> Value {
    let out = std::process::Command::new(crate::common::bin())
        .args(args)
        // These tests read 2025-11-25 shapes (`tasks list`, task-augmented calls).
        .env("MCP_TASKS_PROTOCOL", "legacy")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "mcp-tasks {args:?}: {}\n{}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// The fixture that logs one side of a stdio upstream's traffic and runs the real one.
pub fn tapped(log: &Path, command: &str) -> String {
    format!(
        "node {} {} {command}",
        fixture("tap.mjs").display(),
        log.display()
    )
}

/// Lines of a tap log (what the upstream received).
pub fn read_log(log: &Path) -> Vec<Value> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

pub fn text_of(result: &Value) -> String {
    result["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

/// tasks/result of `id`, as the whole response message.
pub fn task_result(s: &mut Stdio, id: &str) -> Value {
    s.call("tasks/result", serde_json::json!({"taskId": id}))
}

/// Run `tool` as a task that must fail with a JSON-RPC error: that error's message (the
/// task ends `failed`).
pub fn failed_task_message(s: &mut Stdio, tool: &str, args: Value) -> String {
    let task = s.create_task(tool, args);
    let id = task["taskId"].as_str().unwrap().to_owned();
    let answer = task_result(s, &id);
    let msg = answer["error"]["message"]
        .as_str()
        .unwrap_or_else(|| panic!("not an error: {answer}"))
        .to_owned();
    assert_eq!(answer["error"]["code"], -32603, "{answer}");
    assert_eq!(until_terminal(s, &id)["status"], "failed");
    msg
}

/// Poll until the task is terminal; return the task.
pub fn until_terminal(s: &mut Stdio, id: &str) -> Value {
    s.poll_until(id, "terminal", |t| {
        matches!(
            t["status"].as_str(),
            Some("completed" | "failed" | "cancelled")
        )
    })
}

/// `mcp-tasks serve` over Streamable HTTP on a free loopback port (demo tools, tasks in
/// memory): an HTTP upstream for the gateway. Killed on drop.
pub struct HttpUpstream {
    pub child: std::process::Child,
    pub url: String,
    /// The digests of the sessions it started, in order (from its log, which shows a
    /// session id only as `mcp_tasks_proto::logged::digest`).
    pub sessions: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
}

impl HttpUpstream {
    pub fn start(extra: &[&str]) -> Self {
        Self::start_with_tokens(extra, "")
    }

    /// With bearer tokens (`TOKEN PRINCIPAL;...`), so that it binds tasks to principals
    /// and lists them.
    pub fn start_with_tokens(extra: &[&str], tokens: &str) -> Self {
        use std::io::BufRead;
        let mut child = std::process::Command::new(crate::common::bin())
            .args(["serve", "--listen", "127.0.0.1:0", "--store", "memory"])
            .args(extra)
            .env("RUST_LOG", "warn,mcp_tasks_rpc::http::handlers=info")
            .env("MCP_TASKS_AUTH_TOKENS", tokens)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("spawn the HTTP upstream");
        let stderr = child.stderr.take().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        let sessions = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let started = std::sync::Arc::clone(&sessions);
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(stderr).lines() {
                let Ok(line) = line else { return };
                if let Some(url) = line.strip_prefix("listening on ") {
                    let _ = tx.send(url.trim().to_owned());
                }
                if line.contains("session started")
                    && let Some(id) = line
                        .split("session=")
                        .nth(1)
                        .and_then(|rest| rest.split_whitespace().next())
                {
                    started.lock().unwrap().push(id.to_owned());
                }
                eprintln!("[upstream] {line}");
            }
        });
        let url = rx
            .recv_timeout(TIMEOUT)
            .expect("the HTTP upstream printed its address");
        Self {
            child,
            url,
            sessions,
        }
    }
}

impl Drop for HttpUpstream {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The SQLite file an upstream `mcp-tasks serve` of the reverse-bridge tests keeps its
/// tasks in, under `dir`.
pub fn upstream_db(dir: &Path) -> PathBuf {
    dir.join("up.db")
}

/// The upstream's tasks as its store (`upstream_db(dir)`) has them: (request, status).
pub fn upstream_tasks(dir: &Path) -> Vec<(String, String)> {
    let conn = rusqlite::Connection::open(upstream_db(dir)).unwrap();
    let mut st = conn
        .prepare("SELECT request, status FROM tasks ORDER BY seq")
        .unwrap();
    st.query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect()
}

/// Wait until the upstream store has a task whose request mentions `needle` in `status`.
pub fn wait_upstream(dir: &Path, needle: &str, status: &str) {
    let deadline = Instant::now() + TIMEOUT;
    loop {
        let tasks = upstream_tasks(dir);
        if tasks.iter().any(|(r, s)| r.contains(needle) && s == status) {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "no upstream task of {needle} became {status}: {tasks:?}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The `taskId` of a task.
pub fn task_id(task: &Value) -> String {
    task["taskId"].as_str().unwrap().to_owned()
}

/// Wait until `path` exists (`exists`) or is gone.
pub fn wait_file(path: &Path, exists: bool) {
    let deadline = Instant::now() + TIMEOUT;
    while path.exists() != exists {
        assert!(
            Instant::now() < deadline,
            "{} never {}",
            path.display(),
            if exists { "appeared" } else { "went away" }
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Through a gateway in front of a modern upstream keeping its tasks in `dir`: a task of
/// `ask` waits on its upstream's `inputRequests` entry, which the gateway asks the client
/// on `tasks/result` (`elicitation/create` with `question`); the client answers
/// `answer`, which reaches the upstream (`tasks/update`), and both tasks complete with it.
pub fn an_upstream_question_is_answered(s: &mut Stdio, dir: &Path, question: &str, answer: &str) {
    let id = task_id(&s.create_task("ask", serde_json::json!({"question": question})));
    s.poll_until(&id, "input_required", |t| t["status"] == "input_required");
    wait_upstream(dir, question, "input_required");
    let rid = s.start("tasks/result", serde_json::json!({"taskId": id}));
    let req = s.wait_for("elicitation/create", |m| {
        m["method"] == "elicitation/create"
    });
    assert_eq!(req["params"]["message"], question);
    s.send(&serde_json::json!({"jsonrpc": "2.0", "id": req["id"], "result": {"action": "accept", "content": {"answer": answer}}}));
    let r = s.response_to(&rid);
    assert_eq!(text_of(&r["result"]), answer, "{r}");
    assert_eq!(until_terminal(s, &id)["status"], "completed");
    wait_upstream(dir, question, "completed");
}

/// The gateway's `tools/list` entry of `name` (the test fails naming the list without it).
pub fn listed_tool(s: &mut Stdio, name: &str) -> Value {
    let tools = s.ok("tools/list", serde_json::json!({}))["tools"].clone();
    tools
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == name)
        .cloned()
        .unwrap_or_else(|| panic!("{tools}"))
}

/// The SDK's conformance example (`crates/sdk/examples/conformance`): tools, resources,
/// prompts, completions, logging and `x-mcp-header` parameters in both generations. Built
/// by `cargo build --workspace --all-targets` (and the suite's `--examples`); built here
/// once when missing.
pub fn conformance_example() -> PathBuf {
    static BUILT: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    BUILT
        .get_or_init(|| {
            let bin = Path::new(crate::common::bin());
            let path = bin
                .parent()
                .expect("the binary's directory")
                .join("examples")
                .join(format!("conformance{}", std::env::consts::EXE_SUFFIX));
            if !path.exists() {
                let status = std::process::Command::new(env!("CARGO"))
                    .args(["build", "--workspace", "--examples"])
                    .current_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join("../.."))
                    .status()
                    .expect("run cargo to build the conformance example");
                assert!(status.success(), "building the conformance example failed");
            }
            assert!(path.exists(), "{} is missing", path.display());
            path
        })
        .clone()
}

/// The conformance example over Streamable HTTP on a free loopback port. Killed on drop.
pub struct ConformanceHttp {
    pub child: std::process::Child,
    pub url: String,
}

impl ConformanceHttp {
    pub fn start() -> Self {
        use std::io::BufRead;
        let mut child = std::process::Command::new(conformance_example())
            .args(["--listen", "127.0.0.1:0"])
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("spawn the conformance example");
        let stderr = child.stderr.take().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(stderr).lines() {
                let Ok(line) = line else { return };
                if let Some(url) = line.strip_prefix("listening on ") {
                    let _ = tx.send(url.trim().to_owned());
                }
                eprintln!("[conformance] {line}");
            }
        });
        let url = rx
            .recv_timeout(TIMEOUT)
            .expect("the conformance example printed its address");
        Self { child, url }
    }
}

impl Drop for ConformanceHttp {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
