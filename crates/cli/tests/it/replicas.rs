//! Three `mcp-tasks serve --store postgres://...` replicas on one database behind a
//! round-robin proxy with no stickiness (`mcp_tasks_testkit::proxy`): any replica serves
//! any request (issue 17). Each test makes a database of its own (admin URL
//! `MCP_TASKS_TEST_PG`, default `postgres://postgres@127.0.0.1:5432/postgres`) and drops
//! it at the end.
//!
//! Where a test must say which replica gets a request ("received by B"), it talks to that
//! replica directly with the session the proxy's replicas handed out.

use crate::http_common::{Client, Server, TOKENS_ENV, check_response, responses};

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::common::pg::PgDb;
use mcp_tasks_testkit::proxy::Proxy;
use serde_json::{Value, json};

pub(crate) const TOKENS: &str = "tok-alice alice;tok-bob bob";

/// Three replicas on one database, and the round-robin proxy in front of them (shared by
/// the replicas_* tests).
pub(crate) struct Cluster {
    pub(crate) proxy: Proxy,
    pub(crate) replicas: Vec<Server>,
    _db: PgDb,
}

impl Cluster {
    /// With the principals of [`TOKENS`] and `extra` serve flags.
    pub(crate) async fn start(extra: &[&str]) -> Self {
        Self::start_with(extra, &[(TOKENS_ENV, TOKENS)]).await
    }

    /// With `extra` serve flags and the environment `env` (without tokens: no
    /// authentication).
    pub(crate) async fn start_with(extra: &[&str], env: &[(&str, &str)]) -> Self {
        let db = PgDb::new("replicas");
        let url = db.url("pool=4");
        let mut args = vec!["--store", url.as_str()];
        args.extend_from_slice(extra);
        let replicas: Vec<Server> = (0..3).map(|_| Server::start_env(&args, env)).collect();
        let proxy = Proxy::start(replicas.iter().map(|s| s.addr).collect())
            .await
            .unwrap();
        Self {
            proxy,
            replicas,
            _db: db,
        }
    }

    /// A client of the principal of `token`, talking to the proxy.
    pub(crate) fn client(&self, token: &str) -> Client {
        Client {
            addr: self.proxy.addr(),
            token: Some(token.to_owned()),
            origin: None,
            session: None,
            protocol: None,
            next_id: 1,
        }
    }

    /// `c` (its session, token, ids) talking to replica `i` directly.
    pub(crate) fn at(&self, i: usize, c: &Client) -> Client {
        Client {
            addr: self.replicas[i].addr,
            ..c.clone()
        }
    }
}

fn error_of(msg: &Value) -> Value {
    assert!(msg.get("error").is_some(), "an error expected: {msg}");
    json!({ "code": msg["error"]["code"], "message": msg["error"]["message"] })
}

/// A JSON-RPC request answered as JSON with an error; the error (code and message).
async fn rpc_error(c: &mut Client, method: &str, params: Value) -> Value {
    let (_, r) = c.request(method, params).await;
    assert_eq!(r.status, 200, "{method}: {r:?}");
    error_of(&r.json().await)
}

/// `tasks/result` of `task`, answered as JSON or as an SSE stream; the response.
async fn result(c: &mut Client, task: &str) -> Value {
    let (id, r) = c.request("tasks/result", json!({"taskId": task})).await;
    assert_eq!(r.status, 200, "{r:?}");
    let msg = if r.is_sse() {
        let events = r.sse().until_response().await;
        responses(&events).pop().expect("a response on the stream")
    } else {
        r.json().await
    };
    assert_eq!(msg["id"], json!(id), "{msg}");
    msg
}

fn now_ms() -> i64 {
    i64::try_from(
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_millis(),
    )
    .unwrap()
}

fn ms_of(rfc3339: &str) -> i64 {
    let t = humantime::parse_rfc3339(rfc3339).unwrap_or_else(|e| panic!("{rfc3339}: {e}"));
    i64::try_from(t.duration_since(UNIX_EPOCH).unwrap().as_millis()).unwrap()
}

/// Status of a request to replica `i` naming `c`'s session, polled until it is 404 or
/// `within` passes; how long it took.
async fn until_404(c: &Client, within: Duration) -> Option<Duration> {
    let start = Instant::now();
    loop {
        let r = c
            .post(&json!({"jsonrpc": "2.0", "id": 999, "method": "tools/list"}))
            .await;
        if r.status == 404 {
            return Some(start.elapsed());
        }
        assert_eq!(r.status, 200, "{r:?}");
        if start.elapsed() > within {
            return None;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// Spec (transports): "The server MAY assign a session ID at initialization time" ... "the
/// client MUST include it in the `Mcp-Session-Id` header on all of its subsequent HTTP
/// requests"; "The server MAY terminate the session at any time, after which it MUST
/// respond to requests containing that session ID with HTTP 404 Not Found". Across three
/// replicas with no affinity: a session started on one is served by all, with its
/// negotiated version; a forged id and another principal's session are 404 everywhere;
/// DELETE ends it everywhere.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_is_served_by_every_replica_and_deleted_everywhere() {
    let cluster = Cluster::start(&[]).await;
    let mut alice = cluster.client("tok-alice");
    let init = alice.initialize().await;
    assert_eq!(init["protocolVersion"], "2025-11-25");
    // Round robin, one request each: every replica answers the session.
    for _ in 0..6 {
        let msg = alice.rpc("tools/list", json!({})).await;
        assert!(
            msg["result"]["tools"].as_array().unwrap().len() >= 5,
            "{msg}"
        );
    }
    let hits = cluster.proxy.hits();
    assert!(hits.iter().all(|&n| n >= 2), "round robin: {hits:?}");
    // Each replica knows the session as initialized at 2025-11-25 (tasks on, tasks/list
    // for a principal): an unknown task is "not found", not "not initialized".
    let mut errors = Vec::new();
    for i in 0..3 {
        let mut at = cluster.at(i, &alice);
        errors.push(rpc_error(&mut at, "tasks/get", json!({"taskId": "no-such-task"})).await);
        let listed = at.rpc("tasks/list", json!({})).await;
        assert!(listed["result"]["tasks"].is_array(), "{listed}");
    }
    assert!(errors.windows(2).all(|w| w[0] == w[1]), "{errors:?}");
    assert_eq!(errors[0]["code"], -32602, "{errors:?}");

    // A forged session id, and alice's session with bob's token: 404 on every replica.
    for i in 0..3 {
        let mut forged = cluster.at(i, &alice);
        forged.session = Some("0123456789abcdef0123456789abcdef".into());
        let r = forged
            .post(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}))
            .await;
        assert_eq!(r.status, 404, "replica {i}: {r:?}");
        let mut bob = cluster.at(i, &alice);
        bob.token = Some("tok-bob".into());
        let r = bob
            .post(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}))
            .await;
        assert_eq!(r.status, 404, "replica {i}: {r:?}");
    }

    // DELETE through the proxy (one replica): every replica ends it.
    let r = alice.delete().await;
    assert_eq!(r.status, 204, "{r:?}");
    for i in 0..3 {
        let took = until_404(&cluster.at(i, &alice), Duration::from_secs(2))
            .await
            .unwrap_or_else(|| panic!("replica {i} still serves the deleted session"));
        eprintln!("replica {i}: 404 after DELETE within {took:?}");
    }
    for i in 0..3 {
        assert_eq!(cluster.at(i, &alice).get(None).await.status, 404);
        assert_eq!(cluster.at(i, &alice).delete().await.status, 404);
    }
}

/// The idle expiry holds across replicas: a session used through the proxy (each
/// replica seeing only every third request) stays; left idle, it ends on every replica.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_expiry_holds_across_replicas() {
    let cluster = Cluster::start(&["--session-idle", "1s"]).await;
    let mut alice = cluster.client("tok-alice");
    alice.initialize().await;
    let until = Instant::now() + Duration::from_millis(2500);
    while Instant::now() < until {
        alice.rpc("tools/list", json!({})).await;
        tokio::time::sleep(Duration::from_millis(150)).await;
    }
    for i in 0..3 {
        let r = cluster
            .at(i, &alice)
            .post(&json!({"jsonrpc": "2.0", "id": 5, "method": "tools/list"}))
            .await;
        assert_eq!(r.status, 200, "in use, replica {i}: {r:?}");
    }
    tokio::time::sleep(Duration::from_millis(2500)).await;
    for i in 0..3 {
        let r = cluster
            .at(i, &alice)
            .post(&json!({"jsonrpc": "2.0", "id": 6, "method": "tools/list"}))
            .await;
        assert_eq!(r.status, 404, "idle, replica {i}: {r:?}");
    }
}

/// `tasks/get`, `tasks/list` and `tasks/result` answered by any replica; another
/// principal's task id gets the error of an unknown one everywhere; a `tasks/result`
/// waiting on B wakes when the task finishes on A (LISTEN/NOTIFY), measured.
///
/// Spec: "When a receiver receives a `tasks/result` request for a task in any other
/// non-terminal status (`working` or `input_required`), it MUST block the response until
/// the task reaches a terminal status."
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tasks_are_read_on_any_replica_and_a_result_wakes_across_replicas() {
    let cluster = Cluster::start(&[]).await;
    let mut alice = cluster.client("tok-alice");
    alice.initialize().await;
    let mut bob = cluster.client("tok-bob");
    bob.initialize().await;
    let task = alice.start_task("sleep", json!({"ms": 300})).await;
    let mut seen = Vec::new();
    for i in 0..3 {
        let mut at = cluster.at(i, &alice);
        let got = at.task(&task).await;
        assert_eq!(got["result"]["taskId"], task.as_str(), "{got}");
        seen.push(got["result"]["createdAt"].clone());
        let listed = at.rpc("tasks/list", json!({})).await;
        assert!(
            listed["result"]["tasks"]
                .as_array()
                .unwrap()
                .iter()
                .any(|t| t["taskId"] == task.as_str()),
            "replica {i}: {listed}"
        );
    }
    assert!(seen.windows(2).all(|w| w[0] == w[1]), "{seen:?}");
    // Bob: alice's task is unknown on every replica, with the error of an unknown id.
    let unknown = rpc_error(&mut bob, "tasks/get", json!({"taskId": "no-such-task"})).await;
    for i in 0..3 {
        let mut at = cluster.at(i, &bob);
        for method in ["tasks/get", "tasks/result", "tasks/cancel"] {
            let e = rpc_error(&mut at, method, json!({"taskId": task})).await;
            assert_eq!(e["code"], unknown["code"], "{method} on replica {i}: {e}");
        }
    }
    // tasks/result on each replica returns the same result.
    let mut results = Vec::new();
    for i in 0..3 {
        let msg = result(&mut cluster.at(i, &alice), &task).await;
        results.push(msg["result"].clone());
    }
    assert_eq!(results[0]["content"][0]["text"], "slept 300", "{results:?}");
    assert!(results.windows(2).all(|w| w[0] == w[1]), "{results:?}");

    // The wake-up: created on A (replica 0), waited for on B (replica 1).
    let mut a = cluster.at(0, &alice);
    let mut b = cluster.at(1, &alice);
    let mut wakes = Vec::new();
    for _ in 0..15 {
        let id = a.start_task("sleep", json!({"ms": 150})).await;
        let msg = result(&mut b, &id).await;
        let received = now_ms();
        assert_eq!(msg["result"]["content"][0]["text"], "slept 150", "{msg}");
        let done = a.task(&id).await;
        assert_eq!(done["result"]["status"], "completed");
        let finished = ms_of(done["result"]["lastUpdatedAt"].as_str().unwrap());
        wakes.push(received - finished);
    }
    wakes.sort_unstable();
    let p50 = wakes[wakes.len() / 2];
    eprintln!(
        "tasks/result wake-up across replicas (ms, completion on A to the response from B): \
         p50 {p50}, all {wakes:?}"
    );
    assert!(p50 < 100, "p50 {p50} ms: {wakes:?}");
}

/// `tasks/cancel` received by B stops the tool running on A within a second: A learns of
/// the cancellation through the store's notifications, stops the tool (its progress
/// stops) and tells the client on its stream on A.
///
/// Spec: "Upon receiving a valid cancellation request, receivers SHOULD attempt to stop
/// the task's execution and MUST transition the task to cancelled status before sending
/// the response."
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancel_received_by_one_replica_stops_the_tool_on_another() {
    let cluster = Cluster::start(&[]).await;
    let mut alice = cluster.client("tok-alice");
    alice.initialize().await;
    let mut a = cluster.at(0, &alice);
    let mut b = cluster.at(1, &alice);
    let get = a.get(None).await;
    assert_eq!(get.status, 200, "{get:?}");
    let mut stream = get.sse();
    let msg = a
        .rpc(
            "tools/call",
            json!({
                "name": "progress", "arguments": {"steps": 400, "ms": 50},
                "task": {"ttl": 600_000}, "_meta": {"progressToken": "p1"},
            }),
        )
        .await;
    let task = msg["result"]["task"]["taskId"].as_str().unwrap().to_owned();
    // The tool runs on A: its progress comes on A's stream.
    loop {
        let e = stream.next().await.expect("the GET stream stays open");
        if e.message()
            .is_some_and(|m| m["method"] == "notifications/progress")
        {
            break;
        }
    }
    let cancelled = b.rpc("tasks/cancel", json!({"taskId": task})).await;
    check_response("tasks/cancel", &cancelled);
    assert_eq!(cancelled["result"]["status"], "cancelled", "{cancelled}");
    let at = Instant::now();
    let mut status_after = None;
    let mut last_progress = None;
    while at.elapsed() < Duration::from_millis(2000) {
        let Ok(Some(e)) = stream.next_within(Duration::from_millis(100)).await else {
            continue;
        };
        let Some(m) = e.message() else { continue };
        if m["method"] == "notifications/progress" {
            last_progress = Some(at.elapsed());
        }
        if m["method"] == "notifications/tasks/status" && m["params"]["status"] == "cancelled" {
            status_after.get_or_insert(at.elapsed());
        }
    }
    let status_after = status_after.expect("A tells its client the task was cancelled");
    eprintln!(
        "cancel on B: A stopped the tool and notified within {status_after:?} (last progress at {last_progress:?})"
    );
    assert!(status_after < Duration::from_secs(1), "{status_after:?}");
    assert!(
        last_progress.is_none_or(|t| t < Duration::from_secs(1)),
        "the tool still reported progress {last_progress:?} after the cancel"
    );
    let got = cluster.at(2, &alice).task(&task).await;
    assert_eq!(got["result"]["status"], "cancelled");
    let e = rpc_error(&mut a, "tasks/cancel", json!({"taskId": task})).await;
    assert_eq!(e["code"], -32602, "cancelling a terminal task, on A: {e}");
}

const TS_SCRIPT: &str = r#"
import assert from 'node:assert/strict';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CallToolResultSchema, CreateTaskResultSchema, ElicitRequestSchema, ListTasksResultSchema } from '@modelcontextprotocol/sdk/types.js';

const [url, token] = process.argv.slice(1);
const transport = new StreamableHTTPClientTransport(new URL(url),
  { requestInit: { headers: { Authorization: `Bearer ${token}` } } });
const client = new Client({ name: 'ts-sdk-replicas', version: '0' },
  { capabilities: { elicitation: { form: {} } } });
const asked = [];
client.setRequestHandler(ElicitRequestSchema, async request => {
  asked.push(request.params);
  return { action: 'accept', content: { answer: `answer ${asked.length}` } };
});
const errors = [];
client.onerror = e => errors.push(String(e?.message ?? e));
await client.connect(transport);
assert.ok(transport.sessionId, 'a session id');

async function last(stream) {
  let out;
  for await (const m of stream) out = m;
  return out;
}
for (let i = 0; i < 3; i++) {
  const r = await last(client.experimental.tasks.callToolStream(
    { name: 'sleep', arguments: { ms: 100 } }, CallToolResultSchema, { task: { ttl: 60000 } }));
  assert.equal(r.type, 'result', JSON.stringify(r));
  assert.equal(r.result.content[0].text, 'slept 100');
}
console.log('ok task calls');

// input_required through the proxy: the tool runs on one replica, tasks/result and the
// client's answer land on whichever the proxy picks. (The SDK makes a required tool a
// task once it has listed the tools.)
await client.listTools();
for (let i = 1; i <= 3; i++) {
  const r = await last(client.experimental.tasks.callToolStream(
    { name: 'ask', arguments: { question: `question ${i}` } }, CallToolResultSchema));
  assert.equal(r.type, 'result', JSON.stringify(r));
  assert.equal(r.result.content[0].text, `answer ${i}`);
  assert.equal(asked[i - 1].message, `question ${i}`);
}
assert.equal(asked.length, 3, JSON.stringify(asked));
console.log('ok elicitation');

const slow = await client.request({ method: 'tools/call', params: {
  name: 'sleep', arguments: { ms: 600000 }, task: {} } }, CreateTaskResultSchema);
for (let i = 0; i < 3; i++) {
  const listed = await client.request({ method: 'tasks/list', params: {} }, ListTasksResultSchema);
  assert.ok(listed.tasks.some(t => t.taskId === slow.task.taskId), JSON.stringify(listed));
}
console.log('ok list');

const cancelled = await client.experimental.tasks.cancelTask(slow.task.taskId);
assert.equal(cancelled.status, 'cancelled');
for (let i = 0; i < 3; i++) {
  const t = await client.experimental.tasks.getTask(slow.task.taskId);
  assert.equal(t.status, 'cancelled');
}
console.log('ok cancel');

await transport.terminateSession();
await client.close();
const real = errors.filter(e => !/abort/i.test(e));
assert.deepEqual(real, [], 'transport errors');
console.log('ALL OK');
"#;

/// The official TypeScript SDK client (1.32.2, `npm ci --prefix interop`) through the
/// proxy: task calls, `ask` through `input_required` with the elicitation answered,
/// `tasks/list` and `tasks/cancel`, each request on the next replica.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_typescript_sdk_client_through_the_proxy() {
    let interop = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../interop");
    if !interop
        .join("node_modules/@modelcontextprotocol/sdk")
        .exists()
    {
        eprintln!("SKIPPED: the TypeScript SDK is not installed (run `npm ci --prefix interop`)");
        assert!(
            std::env::var_os("MCP_TASKS_REQUIRE_INTEROP").is_none(),
            "the npm packages of interop/ are required (MCP_TASKS_REQUIRE_INTEROP is set)"
        );
        return;
    }
    let cluster = Cluster::start(&[]).await;
    let url = format!("http://{}/mcp", cluster.proxy.addr());
    let out = tokio::process::Command::new("node")
        .args(["--input-type=module", "-e", TS_SCRIPT, &url, "tok-alice"])
        .current_dir(&interop)
        .kill_on_drop(true)
        .output();
    let out = tokio::time::timeout(Duration::from_secs(90), out)
        .await
        .expect("node finishes in time")
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    eprintln!("{stdout}\n{stderr}");
    assert!(out.status.success(), "node failed: {stderr}");
    assert!(stdout.contains("ALL OK"), "{stdout}");
    let hits = cluster.proxy.hits();
    assert!(
        hits.iter().all(|&n| n >= 3),
        "every replica served: {hits:?}"
    );
}
