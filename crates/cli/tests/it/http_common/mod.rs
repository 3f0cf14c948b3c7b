//! Drives `mcp-tasks serve` over real HTTP on 127.0.0.1, with a small raw HTTP/1.1 client
//! (so that tests see exactly what goes over the wire: status, headers, SSE framing) and
//! a schema check of every JSON-RPC message received.
#![allow(dead_code, unreachable_pub, missing_docs)]

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex, mpsc};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader as TokioBufReader};
use tokio::net::TcpStream;

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
                    if let Some(rest) = line.strip_prefix("listening on http://")
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
// Raw HTTP/1.1

enum Framing {
    Length(usize),
    Chunked,
    Eof,
    Empty,
}

pub struct BodyReader {
    io: TokioBufReader<TcpStream>,
    framing: Framing,
    done: bool,
}

impl BodyReader {
    /// The next piece of the body, `None` at its end.
    pub async fn chunk(&mut self) -> std::io::Result<Option<Vec<u8>>> {
        if self.done {
            return Ok(None);
        }
        match self.framing {
            Framing::Empty => {
                self.done = true;
                Ok(None)
            }
            Framing::Length(n) => {
                self.done = true;
                let mut buf = vec![0; n];
                self.io.read_exact(&mut buf).await?;
                Ok(Some(buf))
            }
            Framing::Eof => {
                let mut buf = vec![0; 16 * 1024];
                let n = self.io.read(&mut buf).await?;
                if n == 0 {
                    self.done = true;
                    return Ok(None);
                }
                buf.truncate(n);
                Ok(Some(buf))
            }
            Framing::Chunked => {
                let mut line = String::new();
                if self.io.read_line(&mut line).await? == 0 {
                    return Err(std::io::Error::new(
                        std::io::ErrorKind::UnexpectedEof,
                        "connection closed inside a chunked body",
                    ));
                }
                let size = usize::from_str_radix(line.trim().split(';').next().unwrap(), 16)
                    .map_err(|e| std::io::Error::other(format!("bad chunk size {line:?}: {e}")))?;
                if size == 0 {
                    loop {
                        let mut t = String::new();
                        if self.io.read_line(&mut t).await? == 0 || t.trim().is_empty() {
                            break;
                        }
                    }
                    self.done = true;
                    return Ok(None);
                }
                let mut buf = vec![0; size + 2];
                self.io.read_exact(&mut buf).await?;
                buf.truncate(size);
                Ok(Some(buf))
            }
        }
    }

    async fn all(&mut self) -> std::io::Result<Vec<u8>> {
        let mut out = Vec::new();
        while let Some(c) = self.chunk().await? {
            out.extend_from_slice(&c);
        }
        Ok(out)
    }
}

pub struct Resp {
    pub status: u16,
    /// Lower-case names.
    pub headers: Vec<(String, String)>,
    pub body: BodyReader,
}

impl std::fmt::Debug for Resp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Resp")
            .field("status", &self.status)
            .field("headers", &self.headers)
            .finish()
    }
}

async fn read_head(mut io: TokioBufReader<TcpStream>, head_request: bool) -> std::io::Result<Resp> {
    let mut line = String::new();
    io.read_line(&mut line).await?;
    let status: u16 = line
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| std::io::Error::other(format!("bad status line {line:?}")))?;
    let mut headers = Vec::new();
    loop {
        let mut h = String::new();
        io.read_line(&mut h).await?;
        let h = h.trim_end();
        if h.is_empty() {
            break;
        }
        if let Some((k, v)) = h.split_once(':') {
            headers.push((k.trim().to_ascii_lowercase(), v.trim().to_owned()));
        }
    }
    let get = |n: &str| headers.iter().find(|(k, _)| k == n).map(|(_, v)| v.clone());
    let framing = if head_request || status == 204 || status == 304 || (100..200).contains(&status)
    {
        Framing::Empty
    } else if get("transfer-encoding").is_some_and(|v| v.to_ascii_lowercase().contains("chunked")) {
        Framing::Chunked
    } else if let Some(n) = get("content-length") {
        Framing::Length(n.parse().unwrap())
    } else {
        Framing::Eof
    };
    Ok(Resp {
        status,
        headers,
        body: BodyReader {
            io,
            framing,
            done: false,
        },
    })
}

fn encode_request(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(String, String)],
    body: &[u8],
) -> Vec<u8> {
    let mut req = format!("{method} {path} HTTP/1.1\r\nHost: {addr}\r\n");
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    if method != "GET" || !body.is_empty() {
        req.push_str(&format!("Content-Length: {}\r\n", body.len()));
    }
    req.push_str("\r\n");
    let mut bytes = req.into_bytes();
    bytes.extend_from_slice(body);
    bytes
}

/// One request on a fresh connection.
pub async fn send(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(String, String)],
    body: &[u8],
) -> Resp {
    let fut = async {
        let mut stream = TcpStream::connect(addr).await?;
        stream.set_nodelay(true)?;
        stream
            .write_all(&encode_request(addr, method, path, headers, body))
            .await?;
        read_head(TokioBufReader::new(stream), method == "HEAD").await
    };
    tokio::time::timeout(TIMEOUT, fut)
        .await
        .unwrap_or_else(|_| panic!("{method} {path}: no response within {TIMEOUT:?}"))
        .unwrap_or_else(|e| panic!("{method} {path}: {e}"))
}

/// A kept-alive connection for many sequential requests with whole bodies.
pub struct Conn {
    addr: SocketAddr,
    io: Option<TokioBufReader<TcpStream>>,
}

impl Conn {
    pub async fn open(addr: SocketAddr) -> Self {
        let s = TcpStream::connect(addr).await.unwrap();
        s.set_nodelay(true).unwrap();
        Self {
            addr,
            io: Some(TokioBufReader::new(s)),
        }
    }

    pub async fn roundtrip(
        &mut self,
        method: &str,
        headers: &[(String, String)],
        body: &[u8],
    ) -> (u16, Vec<(String, String)>, Vec<u8>) {
        let mut io = self.io.take().unwrap();
        io.get_mut()
            .write_all(&encode_request(self.addr, method, "/mcp", headers, body))
            .await
            .unwrap();
        let mut resp = read_head(io, false).await.unwrap();
        let bytes = tokio::time::timeout(TIMEOUT, resp.body.all())
            .await
            .expect("body in time")
            .unwrap();
        self.io = Some(resp.body.io);
        (resp.status, resp.headers, bytes)
    }
}

impl Resp {
    pub fn header(&self, name: &str) -> Option<&str> {
        let name = name.to_ascii_lowercase();
        self.headers
            .iter()
            .find(|(k, _)| *k == name)
            .map(|(_, v)| v.as_str())
    }

    pub fn content_type(&self) -> &str {
        self.header("content-type").unwrap_or("")
    }

    pub fn is_sse(&self) -> bool {
        self.content_type().starts_with("text/event-stream")
    }

    pub fn is_json(&self) -> bool {
        self.content_type().starts_with("application/json")
    }

    pub async fn bytes(mut self) -> Vec<u8> {
        tokio::time::timeout(TIMEOUT, self.body.all())
            .await
            .expect("body in time")
            .expect("body")
    }

    /// The body as one JSON-RPC message (schema-checked).
    pub async fn json(self) -> Value {
        let status = self.status;
        let b = self.bytes().await;
        let v: Value = serde_json::from_slice(&b).unwrap_or_else(|e| {
            panic!(
                "status {status}: body is not JSON ({e}): {}",
                String::from_utf8_lossy(&b)
            )
        });
        check(&v);
        v
    }

    pub fn sse(self) -> Sse {
        assert!(self.is_sse(), "expected an SSE stream, got {self:?}");
        Sse {
            body: self.body,
            buf: Vec::new(),
            ended: false,
        }
    }
}

/// One SSE event block as sent (a `retry`-only block is reported too).
#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    pub id: Option<String>,
    pub data: Option<String>,
    pub retry: Option<u64>,
}

impl Event {
    /// The data as a JSON-RPC message (schema-checked); `None` for an empty data field.
    pub fn message(&self) -> Option<Value> {
        let d = self.data.as_deref()?;
        if d.is_empty() {
            return None;
        }
        let v: Value =
            serde_json::from_str(d).unwrap_or_else(|e| panic!("event data is not JSON ({e}): {d}"));
        check(&v);
        Some(v)
    }

    /// The priming event: an id and an empty data field.
    pub fn is_priming(&self) -> bool {
        self.id.is_some() && self.data.as_deref() == Some("")
    }

    /// The stream part of the id (`n` of `n-seq`).
    pub fn stream(&self) -> &str {
        self.id.as_deref().unwrap().split('-').next().unwrap()
    }
}

/// The responses among `events` (the messages with an id; a stream's notifications and
/// priming events passed over).
pub fn responses(events: &[Event]) -> Vec<Value> {
    events
        .iter()
        .filter_map(Event::message)
        .filter(|m| m.get("id").is_some())
        .collect()
}

pub struct Sse {
    body: BodyReader,
    buf: Vec<u8>,
    ended: bool,
}

fn parse_block(block: &str) -> Event {
    let mut e = Event {
        id: None,
        data: None,
        retry: None,
    };
    for line in block.split('\n') {
        if line.starts_with(':') || line.is_empty() {
            continue;
        }
        let (field, value) = line.split_once(':').unwrap_or((line, ""));
        let value = value.strip_prefix(' ').unwrap_or(value);
        match field {
            "id" => e.id = Some(value.to_owned()),
            "data" => {
                let d = e.data.get_or_insert_with(String::new);
                if !d.is_empty() {
                    d.push('\n');
                }
                d.push_str(value);
            }
            "retry" => e.retry = Some(value.parse().expect("numeric retry")),
            _ => {}
        }
    }
    e
}

impl Sse {
    /// The next event, or `None` when the response ends. Panics after [`TIMEOUT`].
    pub async fn next(&mut self) -> Option<Event> {
        match self.next_within(TIMEOUT).await {
            Ok(e) => e,
            Err(()) => panic!("no SSE event within {TIMEOUT:?}"),
        }
    }

    /// The next event within `d` (`Err` on timeout; the stream stays usable).
    pub async fn next_within(&mut self, d: Duration) -> Result<Option<Event>, ()> {
        let deadline = tokio::time::Instant::now() + d;
        loop {
            if let Some(pos) = self.buf.windows(2).position(|w| w == b"\n\n") {
                let block: Vec<u8> = self.buf.drain(..pos + 2).collect();
                let text = String::from_utf8(block).expect("utf-8 event");
                let text = text.trim_end_matches('\n');
                if text.lines().all(|l| l.starts_with(':')) {
                    continue;
                }
                return Ok(Some(parse_block(text)));
            }
            if self.ended {
                assert!(
                    self.buf.iter().all(u8::is_ascii_whitespace),
                    "stream ended inside an event: {:?}",
                    String::from_utf8_lossy(&self.buf)
                );
                return Ok(None);
            }
            match tokio::time::timeout_at(deadline, self.body.chunk()).await {
                Err(_) => return Err(()),
                Ok(Ok(Some(c))) => self.buf.extend_from_slice(&c),
                Ok(Ok(None)) => self.ended = true,
                Ok(Err(e)) => panic!("SSE read failed: {e}"),
            }
        }
    }

    /// Every event until the response ends.
    pub async fn rest(&mut self) -> Vec<Event> {
        let mut out = Vec::new();
        while let Some(e) = self.next().await {
            out.push(e);
        }
        out
    }

    /// The next message that is not a notification (a request or a response), passing
    /// over priming events; the notifications passed over are appended to `seen`. `None`
    /// when the response ends first.
    pub async fn next_non_notification(&mut self, seen: &mut Vec<Value>) -> Option<Value> {
        loop {
            let e = self.next().await?;
            let Some(m) = e.message() else { continue };
            if m.get("id").is_some() {
                return Some(m);
            }
            seen.push(m);
        }
    }

    /// Events until one carries a JSON-RPC response (included), or the stream ends.
    pub async fn until_response(&mut self) -> Vec<Event> {
        let mut out = Vec::new();
        while let Some(e) = self.next().await {
            let done = e
                .message()
                .is_some_and(|m| m.get("result").is_some() || m.get("error").is_some());
            out.push(e);
            if done {
                break;
            }
        }
        out
    }
}

// ---------------------------------------------------------------------------------------
// An MCP client over the raw HTTP client

#[derive(Clone)]
pub struct Client {
    pub addr: SocketAddr,
    pub token: Option<String>,
    pub origin: Option<String>,
    pub session: Option<String>,
    pub protocol: Option<String>,
    pub next_id: i64,
}

impl Client {
    pub fn new(server: &Server) -> Self {
        Self {
            addr: server.addr,
            token: None,
            origin: None,
            session: None,
            protocol: None,
            next_id: 1,
        }
    }

    #[must_use]
    pub fn with_token(mut self, token: &str) -> Self {
        self.token = Some(token.to_owned());
        self
    }

    pub fn headers(&self) -> Vec<(String, String)> {
        let mut h = vec![
            ("Content-Type".to_owned(), "application/json".to_owned()),
            (
                "Accept".to_owned(),
                "application/json, text/event-stream".to_owned(),
            ),
        ];
        if let Some(t) = &self.token {
            h.push(("Authorization".into(), format!("Bearer {t}")));
        }
        if let Some(o) = &self.origin {
            h.push(("Origin".into(), o.clone()));
        }
        if let Some(s) = &self.session {
            h.push(("Mcp-Session-Id".into(), s.clone()));
        }
        if let Some(p) = &self.protocol {
            h.push(("MCP-Protocol-Version".into(), p.clone()));
        }
        h
    }

    pub fn id(&mut self) -> i64 {
        let id = self.next_id;
        self.next_id += 1;
        id
    }

    pub async fn post(&self, body: &Value) -> Resp {
        send(
            self.addr,
            "POST",
            "/mcp",
            &self.headers(),
            body.to_string().as_bytes(),
        )
        .await
    }

    pub async fn post_with(&self, extra: &[(&str, &str)], body: &[u8]) -> Resp {
        let mut h = self.headers();
        for (k, v) in extra {
            h.retain(|(n, _)| !n.eq_ignore_ascii_case(k));
            h.push(((*k).to_owned(), (*v).to_owned()));
        }
        send(self.addr, "POST", "/mcp", &h, body).await
    }

    pub async fn get(&self, last_event_id: Option<&str>) -> Resp {
        let mut h = self.headers();
        h.retain(|(k, _)| k != "Content-Type");
        h.retain(|(k, _)| k != "Accept");
        h.push(("Accept".into(), "text/event-stream".into()));
        if let Some(id) = last_event_id {
            h.push(("Last-Event-ID".into(), id.to_owned()));
        }
        send(self.addr, "GET", "/mcp", &h, b"").await
    }

    pub async fn delete(&self) -> Resp {
        let mut h = self.headers();
        h.retain(|(k, _)| k != "Content-Type");
        send(self.addr, "DELETE", "/mcp", &h, b"").await
    }

    /// `initialize` + `notifications/initialized`; returns the `InitializeResult`.
    pub async fn initialize(&mut self) -> Value {
        let id = self.id();
        let resp = self
            .post(&json!({
                "jsonrpc": "2.0", "id": id, "method": "initialize",
                "params": {
                    "protocolVersion": VERSION,
                    "capabilities": { "elicitation": { "form": {} }, "sampling": {} },
                    "clientInfo": { "name": "http-test", "version": "0" },
                },
            }))
            .await;
        assert_eq!(resp.status, 200, "{resp:?}");
        assert!(resp.is_json(), "{resp:?}");
        let sid = resp
            .header("mcp-session-id")
            .expect("Mcp-Session-Id on the InitializeResult")
            .to_owned();
        let msg = resp.json().await;
        check_response("initialize", &msg);
        self.session = Some(sid);
        self.protocol = Some(VERSION.into());
        let r = self
            .post(&json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }))
            .await;
        assert_eq!(r.status, 202);
        msg["result"].clone()
    }

    /// POST a request; the raw response.
    pub async fn request(&mut self, method: &str, params: Value) -> (i64, Resp) {
        let id = self.id();
        let resp = self
            .post(&json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params }))
            .await;
        (id, resp)
    }

    /// POST a request that must be answered `application/json`; the response message.
    pub async fn rpc(&mut self, method: &str, params: Value) -> Value {
        let (id, resp) = self.request(method, params).await;
        assert_eq!(resp.status, 200, "{method}: {resp:?}");
        assert!(
            resp.is_json(),
            "{method} must be answered as JSON: {resp:?}"
        );
        let msg = resp.json().await;
        check_response(method, &msg);
        assert_eq!(msg["id"], json!(id));
        msg
    }

    /// Start `tool` as a task; its id.
    pub async fn start_task(&mut self, tool: &str, args: Value) -> String {
        let msg = self
            .rpc(
                "tools/call",
                json!({ "name": tool, "arguments": args, "task": { "ttl": 600_000 } }),
            )
            .await;
        msg["result"]["task"]["taskId"]
            .as_str()
            .unwrap_or_else(|| panic!("no task in {msg}"))
            .to_owned()
    }

    /// `tasks/get` result.
    pub async fn task(&mut self, task_id: &str) -> Value {
        self.rpc("tasks/get", json!({ "taskId": task_id })).await
    }

    /// Poll `tasks/get` until the status is `status`.
    pub async fn wait_status(&mut self, task_id: &str, status: &str) -> Value {
        let deadline = Instant::now() + TIMEOUT;
        loop {
            let m = self.task(task_id).await;
            if m["result"]["status"] == status {
                return m["result"].clone();
            }
            assert!(
                Instant::now() < deadline,
                "task {task_id} never reached {status}: {m}"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
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

impl Client {
    /// Another client of the same principal, without a session yet.
    pub fn fresh(&self) -> Self {
        Self {
            session: None,
            protocol: None,
            next_id: 1,
            ..self.clone()
        }
    }
}
