//! Drives `mcp-tasks serve --stdio` as a child process, line by line.
#![allow(dead_code, unreachable_pub, missing_docs)]

pub mod pg;

use std::collections::{HashMap, VecDeque};
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

pub const TIMEOUT: Duration = Duration::from_secs(15);

pub fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_mcp-tasks")
}

pub struct Stdio {
    pub child: Child,
    stdin: Option<ChildStdin>,
    rx: mpsc::Receiver<Option<String>>,
    backlog: VecDeque<Value>,
    next_id: i64,
    /// Methods of the requests we sent, to validate their results against the schema.
    methods: HashMap<String, String>,
    pub eof: bool,
}

impl Stdio {
    pub fn spawn(extra: &[&str]) -> Self {
        let mut args = vec!["serve", "--stdio"];
        if !extra.contains(&"--store") {
            args.extend(["--store", "memory"]);
        }
        args.extend_from_slice(extra);
        Self::spawn_args(&args, &[])
    }

    /// `mcp-tasks ARGS` with these environment variables too (nothing added to `args`).
    pub fn spawn_args(args: &[&str], env: &[(&str, &str)]) -> Self {
        let mut child = Command::new(bin())
            .args(args)
            .envs(env.iter().copied())
            .env("RUST_LOG", "warn")
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::inherit())
            .spawn()
            .expect("spawn mcp-tasks");
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let mut r = BufReader::new(stdout);
            loop {
                let mut line = String::new();
                match r.read_line(&mut line) {
                    Ok(0) | Err(_) => {
                        let _ = tx.send(None);
                        return;
                    }
                    Ok(_) => {
                        if tx.send(Some(line)).is_err() {
                            return;
                        }
                    }
                }
            }
        });
        let stdin = child.stdin.take();
        Self {
            child,
            stdin,
            rx,
            backlog: VecDeque::new(),
            next_id: 1,
            methods: HashMap::new(),
            eof: false,
        }
    }

    pub fn send_raw(&mut self, text: &str) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        stdin.write_all(text.as_bytes()).unwrap();
        stdin.write_all(b"\n").unwrap();
        stdin.flush().unwrap();
    }

    pub fn send(&mut self, v: &Value) {
        if let (Some(id), Some(m)) = (v.get("id"), v.get("method").and_then(Value::as_str)) {
            self.methods.insert(id.to_string(), m.to_owned());
        }
        self.send_raw(&v.to_string());
    }

    pub fn close_stdin(&mut self) {
        self.stdin.take();
    }

    /// The next message from the server (backlog first), schema-checked.
    pub fn recv_timeout(&mut self, timeout: Duration) -> Option<Value> {
        if let Some(v) = self.backlog.pop_front() {
            return Some(v);
        }
        self.read_one(timeout)
    }

    fn read_one(&mut self, timeout: Duration) -> Option<Value> {
        if self.eof {
            return None;
        }
        match self.rx.recv_timeout(timeout) {
            Ok(Some(line)) => {
                let v: Value = serde_json::from_str(&line)
                    .unwrap_or_else(|e| panic!("server wrote non-JSON {line:?}: {e}"));
                self.check(&v);
                Some(v)
            }
            Ok(None) => {
                self.eof = true;
                None
            }
            Err(_) => None,
        }
    }

    fn check(&self, v: &Value) {
        mcp_tasks_testkit::schema::validate_message(v)
            .unwrap_or_else(|e| panic!("schema violation in {v}: {e}"));
        if let (Some(id), Some(result)) = (v.get("id"), v.get("result"))
            && let Some(method) = self.methods.get(&id.to_string())
        {
            mcp_tasks_testkit::schema::validate_result(method, result)
                .unwrap_or_else(|e| panic!("schema violation in the {method} result {v}: {e}"));
        }
    }

    pub fn recv(&mut self) -> Value {
        self.recv_timeout(TIMEOUT)
            .expect("a message from the server in time")
    }

    /// Wait for the first message matching `pred`; others stay queued in order.
    pub fn wait_for(&mut self, what: &str, pred: impl Fn(&Value) -> bool) -> Value {
        if let Some(i) = self.backlog.iter().position(&pred) {
            return self.backlog.remove(i).unwrap();
        }
        let deadline = Instant::now() + TIMEOUT;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let v = self.read_one(left).unwrap_or_else(|| {
                panic!("timed out waiting for {what}; backlog: {:?}", self.backlog)
            });
            if pred(&v) {
                return v;
            }
            self.backlog.push_back(v);
        }
    }

    /// Messages that arrive within `d` (after the backlog).
    pub fn drain_for(&mut self, d: Duration) -> Vec<Value> {
        let mut out: Vec<Value> = self.backlog.drain(..).collect();
        let deadline = Instant::now() + d;
        while let Some(v) = self.read_one(deadline.saturating_duration_since(Instant::now())) {
            out.push(v);
        }
        out
    }

    pub fn response_to(&mut self, id: &Value) -> Value {
        let id = id.clone();
        self.wait_for(&format!("the response to {id}"), move |v| {
            v.get("id") == Some(&id) && v.get("method").is_none()
        })
    }

    pub fn next_id(&mut self) -> Value {
        self.next_id += 1;
        json!(self.next_id)
    }

    /// Send a request; return its id.
    pub fn start(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id();
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        id
    }

    /// Send a request and return the whole response message.
    pub fn call(&mut self, method: &str, params: Value) -> Value {
        let id = self.start(method, params);
        self.response_to(&id)
    }

    /// Send a request and return its `result`, panicking on an error.
    pub fn ok(&mut self, method: &str, params: Value) -> Value {
        let r = self.call(method, params);
        r.get("result")
            .cloned()
            .unwrap_or_else(|| panic!("{method} failed: {r}"))
    }

    /// Send a request and return its `error`, panicking on a result.
    pub fn err(&mut self, method: &str, params: Value) -> Value {
        let r = self.call(method, params);
        r.get("error")
            .cloned()
            .unwrap_or_else(|| panic!("{method} should have failed: {r}"))
    }

    pub fn initialize_with(&mut self, version: &str, capabilities: Value) -> Value {
        let r = self.ok(
            "initialize",
            json!({"protocolVersion": version, "capabilities": capabilities, "clientInfo": {"name": "e2e", "version": "0"}}),
        );
        self.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        r
    }

    pub fn initialize(&mut self) -> Value {
        self.initialize_with(
            "2025-11-25",
            json!({"elicitation": {"form": {}}, "sampling": {}}),
        )
    }

    /// Start a tool as a task; return the CreateTaskResult's task.
    pub fn create_task(&mut self, tool: &str, args: Value) -> Value {
        let r = self.ok(
            "tools/call",
            json!({"name": tool, "arguments": args, "task": {}}),
        );
        r["task"].clone()
    }

    pub fn get_task(&mut self, id: &str) -> Value {
        self.ok("tasks/get", json!({"taskId": id}))
    }

    /// Poll tasks/get until `pred` holds.
    pub fn poll_until(&mut self, id: &str, what: &str, pred: impl Fn(&Value) -> bool) -> Value {
        let deadline = Instant::now() + TIMEOUT;
        loop {
            let t = self.get_task(id);
            if pred(&t) {
                return t;
            }
            assert!(
                Instant::now() < deadline,
                "task {id} never became {what}; last: {t}"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    pub fn wait_exit(&mut self, timeout: Duration) -> Option<std::process::ExitStatus> {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(s) = self.child.try_wait().unwrap() {
                return Some(s);
            }
            if Instant::now() > deadline {
                return None;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

impl Drop for Stdio {
    /// End of input first, as a host closing the server would (the server exits and stops
    /// what it started, a gateway's upstream included); killed if it has not left in 3 s.
    fn drop(&mut self) {
        self.stdin.take();
        let deadline = Instant::now() + Duration::from_secs(3);
        while matches!(self.child.try_wait(), Ok(None)) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub fn text_of(result: &Value) -> &str {
    result["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("no text content in {result}"))
}

pub fn is_rfc3339_utc(s: &str) -> bool {
    s.ends_with('Z') && humantime::parse_rfc3339(s).is_ok()
}
