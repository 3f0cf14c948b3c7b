//! Two principals (bearer tokens) send random interleaved operations in both eras to one
//! server: neither ever sees, waits on, cancels or answers the other's tasks. To each, a
//! task of the other looks exactly like one that does not exist (the same error, in the
//! same era), and an operation on it changes nothing (issue 20).

use std::collections::BTreeSet;

use mcp_tasks_testkit::schema::MODERN;
use mcp_tasks_testkit::wire::modern_meta;
use proptest::prelude::*;
use proptest::strategy::ValueTree;
use proptest::test_runner::{Config, TestRunner};
use serde_json::{Value, json};

use crate::http_common::{Client, Server};

/// A task id no one has.
const GHOST: &str = "3f2a1c9e-0000-4000-8000-000000000000";

/// One operation of a principal (`who`) on the `target`-th task of the case (modulo
/// their number).
#[derive(Debug, Clone, Copy)]
enum Op {
    /// 2025-11-25 `tools/call` of `sleep` with `task`.
    CreateLegacy,
    /// 2026-07-28 `tools/call` of `ask` (task support `required`).
    CreateModern,
    /// 2025-11-25 `tasks/get`.
    Get,
    /// 2026-07-28 `tasks/get`.
    GetModern,
    /// 2025-11-25 `tasks/cancel`.
    Cancel,
    /// 2026-07-28 `tasks/cancel`.
    CancelModern,
    /// 2025-11-25 `tasks/result` (only on the other's tasks and on cancelled ones: it
    /// waits for a running task of one's own).
    Result,
    /// 2025-11-25 `tasks/list`, every page.
    List,
    /// 2026-07-28 `tasks/update` answering an input request (only on the other's
    /// tasks).
    Update,
}

fn op() -> impl Strategy<Value = (Op, usize, usize)> {
    let op = prop_oneof![
        Just(Op::CreateLegacy),
        Just(Op::CreateModern),
        Just(Op::Get),
        Just(Op::GetModern),
        Just(Op::Cancel),
        Just(Op::CancelModern),
        Just(Op::Result),
        Just(Op::List),
        Just(Op::Update),
    ];
    (op, 0..2usize, 0..16usize)
}

/// A task of the case, as its owner made it.
#[derive(Debug)]
struct Tracked {
    id: String,
    owner: usize,
    /// The owner cancelled it.
    cancelled: bool,
}

/// One principal: a 2025-11-25 session, and a sessionless client for 2026-07-28.
struct Principal {
    legacy: Client,
    modern: Client,
}

fn tokens_file() -> std::path::PathBuf {
    let path = std::env::temp_dir().join(format!(
        "mcp-tasks-two-principals-{}.tokens",
        std::process::id()
    ));
    std::fs::write(&path, "tok-alice alice\ntok-bob bob\n").unwrap();
    path
}

/// A 2026-07-28 request (of a client with the tasks extension and form elicitation); the
/// HTTP status and the response.
async fn modern(c: &Client, method: &str, mut params: Value) -> (u16, Value) {
    params["_meta"] = modern_meta(json!({
        "elicitation": {"form": {}},
        "extensions": {"io.modelcontextprotocol/tasks": {}},
    }));
    let name = params
        .get("taskId")
        .or_else(|| params.get("name"))
        .and_then(Value::as_str)
        .map(str::to_owned);
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
    let mut headers = vec![
        ("MCP-Protocol-Version", "2026-07-28"),
        ("Mcp-Method", method),
    ];
    if let Some(n) = &name {
        headers.push(("Mcp-Name", n.as_str()));
    }
    let r = c.post_with(&headers, body.to_string().as_bytes()).await;
    let status = r.status;
    let bytes = r.bytes().await;
    let v: Value = serde_json::from_slice(&bytes)
        .unwrap_or_else(|e| panic!("{method}: {e}: {}", String::from_utf8_lossy(&bytes)));
    MODERN
        .validate_response(method, &v)
        .unwrap_or_else(|e| panic!("{v}: {e}"));
    (status, v)
}

/// The error of a response, with `task` blanked out (to compare with another id's).
fn blanked(m: &Value, task: &str, what: &str) -> Value {
    let e = m
        .get("error")
        .unwrap_or_else(|| panic!("{what} on a foreign task succeeded: {m}"));
    serde_json::from_str(&e.to_string().replace(task, "<id>")).unwrap()
}

/// `method` on `task` in the 2025-11-25 era: the blanked error.
async fn legacy_error(c: &mut Client, method: &str, task: &str) -> Value {
    let m = c.rpc(method, json!({"taskId": task})).await;
    blanked(&m, task, method)
}

/// `method` with `params` on `task` in the 2026-07-28 era: the status and blanked error.
async fn modern_error(c: &Client, method: &str, task: &str, mut params: Value) -> (u16, Value) {
    params["taskId"] = json!(task);
    let (status, m) = modern(c, method, params).await;
    (status, blanked(&m, task, method))
}

/// Every task id `c` lists, following `nextCursor`.
async fn list_all(c: &mut Client) -> BTreeSet<String> {
    let mut ids = BTreeSet::new();
    let mut cursor: Option<String> = None;
    loop {
        let params = cursor.map_or_else(|| json!({}), |c| json!({"cursor": c}));
        let m = c.rpc("tasks/list", params).await;
        for t in m["result"]["tasks"].as_array().expect("tasks") {
            ids.insert(t["taskId"].as_str().unwrap().to_owned());
        }
        match m["result"]["nextCursor"].as_str() {
            Some(next) => cursor = Some(next.to_owned()),
            None => return ids,
        }
    }
}

/// The owner's view of `t`: present, and terminal only when the owner cancelled it.
async fn owner_sees_unchanged(p: &mut Principal, t: &Tracked) {
    let m = p.legacy.task(&t.id).await;
    let status = m["result"]["status"]
        .as_str()
        .unwrap_or_else(|| panic!("the owner lost {}: {m}", t.id));
    if t.cancelled {
        assert_eq!(status, "cancelled", "{}", t.id);
    } else {
        assert!(
            status == "working" || status == "input_required",
            "{} changed to {status} by the other principal",
            t.id
        );
    }
}

/// Run one case; every foreign id ever made is in `foreign[who]`.
async fn run_case(
    ps: &mut [Principal; 2],
    ops: &[(Op, usize, usize)],
    foreign: &mut [BTreeSet<String>; 2],
) {
    let mut tasks: Vec<Tracked> = Vec::new();
    for &(op, who, target) in ops {
        let other = 1 - who;
        match op {
            Op::CreateLegacy => {
                let id = ps[who]
                    .legacy
                    .start_task("sleep", json!({"ms": 60_000}))
                    .await;
                foreign[other].insert(id.clone());
                tasks.push(Tracked {
                    id,
                    owner: who,
                    cancelled: false,
                });
            }
            Op::CreateModern => {
                let (status, m) = modern(
                    &ps[who].modern,
                    "tools/call",
                    json!({"name": "ask", "arguments": {"question": "?"}}),
                )
                .await;
                assert_eq!(status, 200, "{m}");
                assert_eq!(m["result"]["resultType"], "task", "{m}");
                let id = m["result"]["taskId"].as_str().unwrap().to_owned();
                foreign[other].insert(id.clone());
                tasks.push(Tracked {
                    id,
                    owner: who,
                    cancelled: false,
                });
            }
            Op::List => {
                let seen = list_all(&mut ps[who].legacy).await;
                let leaked: Vec<_> = seen.intersection(&foreign[who]).collect();
                assert!(leaked.is_empty(), "principal {who} lists {leaked:?}");
                for t in tasks.iter().filter(|t| t.owner == who) {
                    assert!(
                        seen.contains(&t.id),
                        "{} missing from its owner's list",
                        t.id
                    );
                }
            }
            _ if tasks.is_empty() => {}
            _ => {
                let i = target % tasks.len();
                if tasks[i].owner == who {
                    own(&mut ps[who], op, &mut tasks[i]).await;
                } else {
                    let t = &tasks[i];
                    cross(&mut ps[who], op, t).await;
                    owner_sees_unchanged(&mut ps[t.owner], t).await;
                }
            }
        }
    }
    // Every task of the case, as its owner sees it; then stop what still runs.
    for t in &tasks {
        owner_sees_unchanged(&mut ps[t.owner], t).await;
        if !t.cancelled {
            let m = ps[t.owner]
                .legacy
                .rpc("tasks/cancel", json!({"taskId": t.id}))
                .await;
            assert_eq!(m["result"]["status"], "cancelled", "{m}");
        }
    }
}

/// `op` by the owner of `t`: it sees and controls its task in both eras.
async fn own(p: &mut Principal, op: Op, t: &mut Tracked) {
    match op {
        Op::Get | Op::Update => {
            let m = p.legacy.task(&t.id).await;
            assert_eq!(m["result"]["taskId"], t.id.as_str(), "{m}");
        }
        Op::GetModern => {
            let (status, m) = modern(&p.modern, "tasks/get", json!({"taskId": t.id})).await;
            assert_eq!(status, 200, "{m}");
            assert_eq!(m["result"]["taskId"], t.id.as_str(), "{m}");
        }
        Op::Cancel | Op::CancelModern if !t.cancelled => {
            let m = if matches!(op, Op::Cancel) {
                p.legacy.rpc("tasks/cancel", json!({"taskId": t.id})).await
            } else {
                modern(&p.modern, "tasks/cancel", json!({"taskId": t.id}))
                    .await
                    .1
            };
            assert!(m.get("result").is_some(), "the owner's cancel failed: {m}");
            t.cancelled = true;
            owner_sees_unchanged(p, t).await;
        }
        Op::Result if t.cancelled => {
            // Answered at once (as JSON or on a stream), not waited for.
            let (_, r) = p
                .legacy
                .request("tasks/result", json!({"taskId": t.id}))
                .await;
            assert_eq!(r.status, 200, "{r:?}");
        }
        _ => owner_sees_unchanged(p, t).await,
    }
}

/// `op` by the principal that does not own `t`: the same error as for an unknown id.
async fn cross(p: &mut Principal, op: Op, t: &Tracked) {
    match op {
        Op::Get | Op::Cancel | Op::Result => {
            let method = match op {
                Op::Get => "tasks/get",
                Op::Cancel => "tasks/cancel",
                _ => "tasks/result",
            };
            let foreign = legacy_error(&mut p.legacy, method, &t.id).await;
            let missing = legacy_error(&mut p.legacy, method, GHOST).await;
            assert_eq!(foreign, missing, "{method}");
        }
        Op::GetModern | Op::CancelModern | Op::Update => {
            let (method, params) = match op {
                Op::GetModern => ("tasks/get", json!({})),
                Op::CancelModern => ("tasks/cancel", json!({})),
                _ => (
                    "tasks/update",
                    json!({"inputResponses": {"k": {"action": "accept", "content": {"answer": "x"}}}}),
                ),
            };
            let foreign = modern_error(&p.modern, method, &t.id, params.clone()).await;
            let missing = modern_error(&p.modern, method, GHOST, params).await;
            assert_eq!(foreign, missing, "{method}");
        }
        Op::CreateLegacy | Op::CreateModern | Op::List => {
            unreachable!("not an operation on a task")
        }
    }
}

#[tokio::test]
async fn two_principals_never_reach_each_others_tasks_in_either_era() {
    let path = tokens_file();
    let server = Server::start(&["--auth-tokens", path.to_str().unwrap()]);
    let mut ps = ["tok-alice", "tok-bob"].map(|token| {
        let legacy = Client::new(&server).with_token(token);
        let modern = legacy.fresh();
        Principal { legacy, modern }
    });
    for p in &mut ps {
        p.legacy.initialize().await;
    }
    let mut foreign = [BTreeSet::new(), BTreeSet::new()];
    let mut runner = TestRunner::new(Config {
        cases: 16,
        ..Config::default()
    });
    let strategy = proptest::collection::vec(op(), 6..12);
    for case in 0..16 {
        // Each principal starts with a task, in either era by turns, so that most
        // generated operations reach one.
        let mut ops = vec![
            (Op::CreateLegacy, case % 2, 0),
            (Op::CreateModern, 1 - case % 2, 0),
        ];
        ops.extend(
            strategy
                .new_tree(&mut runner)
                .expect("the strategy generates values")
                .current(),
        );
        eprintln!("case: {ops:?}");
        run_case(&mut ps, &ops, &mut foreign).await;
    }
    let _ = std::fs::remove_file(path);
}
