//! Drives `mcp-tasks serve` over real HTTP on 127.0.0.1, with a small raw HTTP/1.1 client
//! (so that tests see exactly what goes over the wire: status, headers, SSE framing) and
//! a schema check of every JSON-RPC message received.
#![allow(dead_code, unreachable_pub, missing_docs)]

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex, mpsc};
use std::time::{Duration, Instant};

use serde_json::Value;

mod client;
mod raw;

pub use client::Client;
pub use raw::{Conn, Event, Resp, Sse, responses, send};

pub const TIMEOUT: Duration = Duration::from_secs(20);
pub const TOKENS_ENV: &str = "MCP_TASKS_AUTH_TOKENS";
pub const VERSION: &str = "2025-11-25";

pub fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_mcp-tasks")
}

/// Validate one JSON-RPC message against the official schema.
pub fn check(msg: &Value) {
    if let Err(e) = mcp_tasks_testkit::schema::validate_message(msg) {
        panic!("schema violation: {e}\nmessage: {msg}");
    }
}

/// Validate a response to a request of `method`.
pub fn check_response(method: &str, msg: &Value) {
    if let Err(e) = mcp_tasks_testkit::schema::validate_response(method, msg) {
        panic!("schema violation: {e}\nmessage: {msg}");
    }
}

// ---------------------------------------------------------------------------------------
// The server process

pub struct Server {
    pub child: Child,
    pub addr: SocketAddr,
    stderr: Arc<Mutex<Vec<String>>>,
}

impl Server {
    pub fn start(extra: &[&str]) -> Self {
        Self::start_env(extra, &[])
    }

    pub fn start_env(extra: &[&str], env: &[(&str, &str)]) -> Self {
        match Self::try_start(extra, env) {
            Ok(s) => s,
            Err((status, stderr)) => {
                panic!("server exited ({status:?}) before listening:\n{stderr}")
            }
        }
    }

    /// Start; `Err` with the exit status and stderr when it exits before listening.
    pub fn try_start(
        extra: &[&str],
        env: &[(&str, &str)],
    ) -> Result<Self, (Option<ExitStatus>, String)> {
        let mut args = vec!["serve"];
        if !extra.contains(&"--listen") {
            args.extend(["--listen", "127.0.0.1:0"]);
        }
        if !extra.contains(&"--store") {
            args.extend(["--store", "memory"]);
        }
        args.extend_from_slice(extra);
        let mut cmd = Command::new(bin());
        cmd.args(&args)
            .env("RUST_LOG", "warn")
            .env_remove(TOKENS_ENV)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        for (k, v) in env {
            cmd.env(k, v);
        }
        let mut child = cmd.spawn().expect("spawn mcp-tasks");
        let err = child.stderr.take().unwrap();
        let lines = Arc::new(Mutex::new(Vec::new()));
        let (tx, rx) = mpsc::channel();
        {
            let lines = Arc::clone(&lines);
            std::thread::spawn(move || {
                let mut tx = Some(tx);
                for line in BufReader::new(err).lines() {
                    let Ok(line) = line else { break };
                    eprintln!("[server] {line}");
                    // As it is, or as the message of a JSON log line (`--log-format json`).
                    let said = serde_json::from_str::<Value>(&line)
                        .ok()
                        .and_then(|v| v["fields"]["message"].as_str().map(str::to_owned))
                        .unwrap_or_else(|| line.clone());
                    if let Some(rest) = said
                        .strip_prefix("listening on http://")
                        .or_else(|| said.strip_prefix("listening on https://"))
                        && let Some(addr) = rest.strip_suffix("/mcp")
                        && let Some(tx) = tx.take()
                    {
                        let _ = tx.send(addr.parse::<SocketAddr>().unwrap());
                    }
                    lines.lock().unwrap().push(line);
                }
            });
        }
        let deadline = Instant::now() + TIMEOUT;
        loop {
            if let Ok(addr) = rx.recv_timeout(Duration::from_millis(50)) {
                return Ok(Self {
                    child,
                    addr,
                    stderr: lines,
                });
            }
            if let Ok(Some(status)) = child.try_wait() {
                std::thread::sleep(Duration::from_millis(100));
                let text = lines.lock().unwrap().join("\n");
                return Err((Some(status), text));
            }
            if Instant::now() > deadline {
                let _ = child.kill();
                return Err((None, lines.lock().unwrap().join("\n")));
            }
        }
    }

    pub fn url(&self) -> String {
        format!("http://{}/mcp", self.addr)
    }

    pub fn stderr(&self) -> String {
        self.stderr.lock().unwrap().join("\n")
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// SIGTERM.
    pub fn terminate(&self) {
        let ok = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status()
            .expect("run kill")
            .success();
        assert!(ok, "kill -TERM failed");
    }

    pub fn wait_exit(&mut self, within: Duration) -> Option<ExitStatus> {
        let deadline = Instant::now() + within;
        loop {
            if let Ok(Some(s)) = self.child.try_wait() {
                return Some(s);
            }
            if Instant::now() > deadline {
                return None;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Resident memory of the server process, in KiB.
    pub fn rss_kib(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.pid())).unwrap();
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.split_whitespace().next())
            .and_then(|v| v.parse().ok())
            .expect("VmRSS")
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

// ---------------------------------------------------------------------------------------
// Running a scenario with and without authentication

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Auth {
    /// No tokens: tasks belong to no one.
    Open,
    /// Bearer tokens; the client authenticates as principal `main`.
    Bearer,
}

pub const BOTH: [Auth; 2] = [Auth::Open, Auth::Bearer];

/// A server in `auth` mode and a client (not yet initialized) for it.
pub fn start_as(auth: Auth, extra: &[&str]) -> (Server, Client) {
    match auth {
        Auth::Open => {
            let s = Server::start(extra);
            let c = Client::new(&s);
            (s, c)
        }
        Auth::Bearer => {
            let s = Server::start_env(extra, &[(TOKENS_ENV, "tok-main main;tok-main-2 main")]);
            let c = Client::new(&s).with_token("tok-main");
            (s, c)
        }
    }
}
