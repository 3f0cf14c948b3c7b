//! Helpers of the requestor tests (`client_*.rs`, `cli_*.rs`): our server over stdio or
//! HTTP, the CLI as a process, token files.
#![allow(dead_code, unreachable_pub, missing_docs)]

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Output, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use std::time::{Duration, Instant};

use mcp_tasks_client::{
    Client, ClientConfig, FixedElicitation, FixedSampling, HttpClientConfig, Revision,
    RevisionChoice, elicit,
};
use serde_json::json;

pub const LIMIT: Duration = Duration::from_secs(30);

pub fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_mcp-tasks")
}

/// A file in the temp dir, unique to this test process, removed on drop.
pub struct TempFile(pub PathBuf);

impl TempFile {
    pub fn new(name: &str, contents: &str) -> Self {
        static N: AtomicU32 = AtomicU32::new(0);
        let path = std::env::temp_dir().join(format!(
            "mcp-tasks-client-test-{}-{}-{name}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::write(&path, contents).expect("write temp file");
        Self(path)
    }

    pub fn path(&self) -> &str {
        self.0.to_str().expect("utf-8 temp path")
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
        for ext in ["-wal", "-shm"] {
            let mut p = self.0.clone().into_os_string();
            p.push(ext);
            let _ = std::fs::remove_file(p);
        }
    }
}

/// Bearer tokens of two principals: `tok-alice` and `tok-bob`.
pub fn tokens() -> TempFile {
    TempFile::new("tokens", "tok-alice alice\ntok-bob bob\n")
}

/// `mcp-tasks serve` over HTTP on 127.0.0.1 (a free port), killed on drop.
pub struct HttpServer {
    child: Child,
    pub url: String,
    stderr: Arc<Mutex<Vec<String>>>,
}

impl HttpServer {
    pub fn start(extra: &[&str]) -> Self {
        Self::start_at("127.0.0.1:0", extra)
    }

    /// Listening on `listen` (a fixed address: a server restarted where it was).
    pub fn start_at(listen: &str, extra: &[&str]) -> Self {
        let mut args = vec!["serve", "--listen", listen];
        if !extra.contains(&"--store") {
            args.extend(["--store", "memory"]);
        }
        args.extend_from_slice(extra);
        let mut child = Command::new(bin())
            .args(&args)
            .env("RUST_LOG", "warn")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn mcp-tasks serve");
        let stderr = child.stderr.take().expect("stderr");
        let lines = Arc::new(Mutex::new(Vec::new()));
        let (tx, rx) = mpsc::channel();
        {
            let lines = Arc::clone(&lines);
            std::thread::spawn(move || {
                for line in BufReader::new(stderr).lines() {
                    let Ok(line) = line else { return };
                    if let Some(url) = line.strip_prefix("listening on ") {
                        let _ = tx.send(url.trim().to_owned());
                    }
                    lines.lock().unwrap().push(line);
                }
            });
        }
        let url = rx
            .recv_timeout(LIMIT)
            .unwrap_or_else(|_| panic!("server did not listen: {:?}", lines.lock().unwrap()));
        Self {
            child,
            url,
            stderr: lines,
        }
    }

    pub fn stderr(&self) -> Vec<String> {
        self.stderr.lock().unwrap().clone()
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A client configuration that accepts elicitations with `{"answer": "42"}` and answers
/// sampling with `short`.
pub fn answering() -> ClientConfig {
    ClientConfig::default()
        .with_elicitation(FixedElicitation(elicit::accept(json!({"answer": "42"}))))
        .with_sampling(FixedSampling {
            model: "test".into(),
            text: "short".into(),
        })
}

/// `mcp-tasks serve --stdio --store STORE` as a client command.
pub fn stdio_command(store: &str, extra: &[&str]) -> tokio::process::Command {
    let mut cmd = tokio::process::Command::new(bin());
    cmd.args(["serve", "--stdio", "--store", store])
        .args(extra)
        .env("RUST_LOG", "warn");
    cmd
}

/// The FastMCP-3-like stdio server of `client_fixtures/early_result_server.mjs`, whose
/// `tasks/result` answers a running task at once with -32602 "Task not completed yet".
pub fn early_result_server() -> Vec<String> {
    vec![
        "node".into(),
        concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/it/client_fixtures/early_result_server.mjs"
        )
        .into(),
    ]
}

/// The default configuration, speaking 2025-11-25 only: the tests of that era's
/// behaviour say so, as `auto` finds our dual-era server modern (`client_modern.rs`,
/// `cli_modern.rs` test that).
pub fn legacy() -> ClientConfig {
    ClientConfig::default().with_protocol(RevisionChoice::Fixed(Revision::V2025_11_25))
}

/// Our server over stdio, spoken to in 2025-11-25 (see [`legacy`]).
pub async fn connect_stdio(store: &str, config: ClientConfig) -> Client {
    Client::connect_stdio(
        stdio_command(store, &[]),
        config.with_protocol(RevisionChoice::Fixed(Revision::V2025_11_25)),
    )
    .await
    .expect("connect over stdio")
}

/// Our server over HTTP, spoken to in 2025-11-25 (see [`legacy`]).
pub async fn connect_http(url: &str, token: Option<&str>, config: ClientConfig) -> Client {
    let mut http = HttpClientConfig::new(url);
    http.bearer_token = token.map(str::to_owned);
    Client::connect_http(
        http,
        config.with_protocol(RevisionChoice::Fixed(Revision::V2025_11_25)),
    )
    .await
    .expect("connect over HTTP")
}

/// The CLI as a process, speaking 2025-11-25 unless `--protocol` says otherwise (see
/// [`legacy`]; [`cli_auto`] leaves the choice to the CLI).
pub fn cli(args: &[&str]) -> Command {
    let mut cmd = cli_auto(args);
    cmd.env("MCP_TASKS_PROTOCOL", "legacy");
    cmd
}

/// The CLI as a process, finding the server's era itself.
pub fn cli_auto(args: &[&str]) -> Command {
    let mut cmd = Command::new(bin());
    cmd.args(args)
        .env("RUST_LOG", "warn")
        .env_remove("MCP_TASKS_PROTOCOL")
        .env_remove("MCP_TASKS_TOKEN")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    cmd
}

/// Run the CLI to its end (bounded).
pub fn run(cmd: &mut Command) -> Output {
    let child = cmd.spawn().expect("spawn the CLI");
    wait_output(child, LIMIT)
}

pub fn wait_output(mut child: Child, limit: Duration) -> Output {
    let start = Instant::now();
    loop {
        if child.try_wait().expect("wait").is_some() {
            return child.wait_with_output().expect("output");
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let out = child.wait_with_output().expect("output");
            panic!(
                "the CLI did not finish in {limit:?}\nstdout: {}\nstderr: {}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// The one JSON object `--json` prints.
pub fn json_out(o: &Output) -> serde_json::Value {
    let text = stdout(o);
    let mut lines = text.lines().filter(|l| !l.trim().is_empty());
    let first = lines
        .next()
        .unwrap_or_else(|| panic!("no JSON on stdout; stderr: {}", stderr(o)));
    assert!(
        lines.next().is_none(),
        "more than one line on stdout: {text}"
    );
    serde_json::from_str(first).unwrap_or_else(|e| panic!("not JSON ({e}): {first}"))
}

/// Whether a process (group) with this id still exists.
pub fn alive(pid: u32) -> bool {
    std::path::Path::new(&format!("/proc/{pid}")).exists()
        && !std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .is_ok_and(|s| s.split_whitespace().nth(2) == Some("Z"))
}

#[test]
fn temp_files_are_removed() {
    let f = TempFile::new("x", "y");
    let p = f.0.clone();
    assert!(p.exists());
    drop(f);
    assert!(!p.exists());
}

/// The stderr of `child`, read to its end by a thread (its text is what the handle
/// returns), and a channel that hears once for every line containing `marker`.
pub fn watch_stderr(
    child: &mut Child,
    marker: &'static str,
) -> (
    std::sync::mpsc::Receiver<()>,
    std::thread::JoinHandle<String>,
) {
    let err = child.stderr.take().expect("stderr piped");
    let (tx, rx) = std::sync::mpsc::channel();
    let reader = std::thread::spawn(move || {
        let mut all = String::new();
        for line in std::io::BufRead::lines(std::io::BufReader::new(err)) {
            let Ok(line) = line else { break };
            if line.contains(marker) {
                let _ = tx.send(());
            }
            all.push_str(&line);
            all.push('\n');
        }
        all
    });
    (rx, reader)
}

/// Ctrl-C for `child`: SIGINT.
pub fn interrupt(child: &Child) {
    let status = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
}
