//! Helpers of the terminal tests (`term_*.rs`): the CLI in a pseudo-terminal, driven by
//! a script of expectations and keystrokes, and a small scripted MCP server for what our demo server does not send.
//!
//! The pseudo-terminal is Python's `pty` module (`python3`, on every machine of this
//! project): the CLI is the session leader of a real terminal, so Ctrl-C is the byte
//! 0x03 typed on it, turned into SIGINT by the terminal's line discipline, and Enter is
//! a real line. The tests skip (saying so) only where `python3` is missing.
#![allow(dead_code, unreachable_pub, missing_docs)]

use std::process::Command;

use serde_json::{Value, json};

pub use crate::client_support::*;

/// Runs `argv` in a pseudo-terminal (40x120) and plays `steps` (a JSON list):
/// `{"expect": TEXT, "timeout": S}` waits for TEXT in the output after the previous
/// match (ANSI sequences removed, an erased line read as a line break), `{"send": TEXT}` types it, `{"ctrl_c": true}` types
/// Ctrl-C, `{"sleep": S}`. Then waits for the exit. Prints one JSON object:
/// `{exit, signal, failed, transcript, raw}`.
const DRIVER: &str = r#"
import fcntl, json, os, pty, re, select, signal, struct, sys, termios, time

steps = json.loads(sys.argv[1])
argv = sys.argv[2:]
pid, fd = pty.fork()
if pid == 0:
    os.execvp(argv[0], argv)
fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
raw = b""
pos = 0
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")

def text():
    # An erased line is gone from the screen: a line break in the transcript.
    return ANSI.sub("", raw.decode("utf-8", "replace").replace("\r\x1b[2K", "\n"))

def pump(timeout):
    global raw
    r, _, _ = select.select([fd], [], [], timeout)
    if not r:
        return True
    try:
        data = os.read(fd, 65536)
    except OSError:
        data = b""
    if not data:
        return False
    raw += data
    return True

failed = None
for i, step in enumerate(steps):
    if "expect" in step:
        want = step["expect"]
        deadline = time.time() + step.get("timeout", 20)
        while True:
            found = text().find(want, pos)
            if found >= 0:
                pos = found + len(want)
                break
            left = deadline - time.time()
            if left <= 0 or not pump(min(left, 0.2)):
                if text().find(want, pos) >= 0:
                    pos = text().find(want, pos) + len(want)
                    break
                failed = {"step": i, "expect": want}
                break
        if failed:
            break
    elif "send" in step:
        os.write(fd, step["send"].encode())
    elif step.get("ctrl_c"):
        os.write(fd, b"\x03")
    elif "sleep" in step:
        end = time.time() + step["sleep"]
        while time.time() < end and pump(max(0, min(0.1, end - time.time()))):
            pass

status = None
deadline = time.time() + 20
while time.time() < deadline:
    done, st = os.waitpid(pid, os.WNOHANG)
    if done:
        status = st
        break
    pump(0.1)
while pump(0.05):
    pass
if status is None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except OSError:
        pass
    _, status = os.waitpid(pid, 0)
    failed = failed or {"exit": "timed out"}
code = os.WEXITSTATUS(status) if os.WIFEXITED(status) else None
sig = os.WTERMSIG(status) if os.WIFSIGNALED(status) else None
print(json.dumps({"exit": code, "signal": sig, "failed": failed, "transcript": text(), "raw": raw.decode("utf-8", "replace")}))
"#;

/// What a pseudo-terminal run gave.
#[derive(Debug)]
pub struct PtyRun {
    pub exit: Option<i32>,
    pub transcript: String,
    pub raw: String,
}

/// Whether `python3` can run the driver; says why not otherwise.
pub fn have_python() -> bool {
    let ok = Command::new("python3")
        .args(["-c", "import pty, termios"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        eprintln!("SKIPPED: python3 (with its pty module) is needed for the terminal tests");
    }
    ok
}

/// Run `argv` in a pseudo-terminal through `steps`; panics (with the transcript) when an
/// expectation is not met.
pub fn pty(argv: &[&str], steps: &Value) -> PtyRun {
    let out = Command::new("python3")
        .arg("-c")
        .arg(DRIVER)
        .arg(steps.to_string())
        .args(argv)
        .env("RUST_LOG", "warn")
        .env_remove("MCP_TASKS_TOKEN")
        .output()
        .expect("run python3");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let v: Value = serde_json::from_str(stdout.trim()).unwrap_or_else(|e| {
        panic!(
            "the pty driver failed ({e}): {stdout}\n{}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    let run = PtyRun {
        exit: v["exit"].as_i64().and_then(|c| i32::try_from(c).ok()),
        transcript: v["transcript"].as_str().unwrap_or("").to_owned(),
        raw: v["raw"].as_str().unwrap_or("").to_owned(),
    };
    assert!(
        v["failed"].is_null(),
        "pty step failed: {}\n--- transcript ---\n{}",
        v["failed"],
        run.transcript
    );
    run
}

pub fn expect(text: &str) -> Value {
    json!({ "expect": text })
}

pub fn send(text: &str) -> Value {
    json!({ "send": text })
}

pub fn ctrl_c() -> Value {
    json!({ "ctrl_c": true })
}

/// `mcp-tasks serve --stdio --store memory` after `--`.
pub fn our_server() -> Vec<&'static str> {
    vec!["--", bin(), "serve", "--stdio", "--store", "memory"]
}

/// A scripted MCP server (stdio), for requests our demo server does not make:
///
/// * `form` (plain call): sends `elicitation/create` with a boolean, a single-choice enum
///   and an integer with a default; returns the `ElicitResult` as JSON text;
/// * `task_form` (plain call): sends the same elicitation *task-augmented*, polls the
///   client's task with `tasks/get` until it ends, fetches it with `tasks/result`, and
///   returns `{created, statuses, result}` as JSON text;
/// * `hang` (as a task): a task that never ends, whose `tasks/cancel` is never answered.
pub const FAKE_SERVER: &str = r#"
import json, sys, threading, time

lock = threading.Lock()
pending = {}
next_id = [0]

def send(msg):
    with lock:
        sys.stdout.write(json.dumps(msg) + "\n")
        sys.stdout.flush()

def request(method, params):
    with lock:
        next_id[0] += 1
        rid = "s%d" % next_id[0]
        ev = threading.Event()
        pending[rid] = [ev, None]
    send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
    ev.wait()
    return pending.pop(rid)[1]

FORM = {
    "mode": "form",
    "message": "Order a pizza?",
    "requestedSchema": {
        "type": "object",
        "properties": {
            "confirm": {"type": "boolean", "title": "Confirm the order"},
            "size": {"type": "string", "enum": ["s", "m", "l"], "enumNames": ["Small", "Medium", "Large"]},
            "count": {"type": "integer", "minimum": 1, "maximum": 5, "default": 1},
        },
        "required": ["confirm", "size"],
    },
}
NOW = "2025-11-25T10:00:00.000Z"
HANG = {"taskId": "hang-1", "status": "working", "createdAt": NOW, "lastUpdatedAt": NOW, "ttl": 60000, "pollInterval": 100}

def text(obj):
    return {"content": [{"type": "text", "text": json.dumps(obj, sort_keys=True)}]}

def call(rid, params):
    name = params.get("name")
    if name == "form":
        r = request("elicitation/create", FORM)
        send({"jsonrpc": "2.0", "id": rid, "result": text(r.get("result", r))})
    elif name == "task_form":
        p = dict(FORM)
        p["task"] = {"ttl": 60000}
        created = request("elicitation/create", p)["result"]["task"]
        statuses = []
        while True:
            t = request("tasks/get", {"taskId": created["taskId"]})["result"]
            statuses.append(t["status"])
            if t["status"] in ("completed", "failed", "cancelled"):
                break
            time.sleep(0.2)
        result = request("tasks/result", {"taskId": created["taskId"]})
        send({"jsonrpc": "2.0", "id": rid, "result": text({"created": created, "statuses": statuses, "result": result.get("result", result)})})
    elif name == "hang" and "task" in params:
        send({"jsonrpc": "2.0", "id": rid, "result": {"task": HANG}})
    else:
        send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32602, "message": "unknown tool"}})

TOOLS = [
    {"name": "form", "inputSchema": {"type": "object"}},
    {"name": "task_form", "inputSchema": {"type": "object"}},
    {"name": "hang", "inputSchema": {"type": "object"}, "execution": {"taskSupport": "optional"}},
]

for line in sys.stdin:
    msg = json.loads(line)
    if "method" not in msg:
        with lock:
            entry = pending.get(msg.get("id"))
        if entry:
            entry[1] = msg
            entry[0].set()
        continue
    if "id" not in msg:
        continue
    rid, method, params = msg["id"], msg["method"], msg.get("params") or {}
    if method == "initialize":
        send({"jsonrpc": "2.0", "id": rid, "result": {
            "protocolVersion": "2025-11-25",
            "capabilities": {"tools": {}, "tasks": {"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}}},
            "serverInfo": {"name": "fake", "version": "0"}}})
    elif method == "tools/list":
        send({"jsonrpc": "2.0", "id": rid, "result": {"tools": TOOLS}})
    elif method == "tools/call":
        threading.Thread(target=call, args=(rid, params), daemon=True).start()
    elif method == "tasks/get":
        send({"jsonrpc": "2.0", "id": rid, "result": HANG})
    elif method in ("tasks/result", "tasks/cancel"):
        pass  # never answered
    elif method == "tasks/list":
        send({"jsonrpc": "2.0", "id": rid, "result": {"tasks": [HANG]}})
    else:
        send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": method}})
"#;

/// The scripted server as a file, removed on drop.
pub fn fake_server() -> TempFile {
    TempFile::new("fake_server.py", FAKE_SERVER)
}
