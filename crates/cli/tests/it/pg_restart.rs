//! PostgreSQL going away under a running server, without restarting the shared test
//! cluster: the server reaches the database through a TCP proxy of the test, which the
//! test cuts (every connection closed, new ones refused) and restores. During the outage
//! requests get -32603 naming the store, `/readyz` answers 503 with the reason; once the
//! database is back the server reconnects by itself and every state it acknowledged
//! before is still there. A statement that times out fails its own request only.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::net::{TcpListener, TcpStream};

use crate::http_common::{Client, Server, TIMEOUT, send};
use crate::replicas_failover::{PgDb, admin_url};

/// A TCP proxy to the test PostgreSQL, on its own thread and runtime.
pub(crate) struct PgProxy {
    pub(crate) addr: SocketAddr,
    state: Arc<Mutex<ProxyState>>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
}

#[derive(Default)]
struct ProxyState {
    cut: bool,
    conns: Vec<tokio::task::AbortHandle>,
}

fn upstream_addr() -> String {
    let url = admin_url();
    let rest = url.split_once("://").map_or(url.as_str(), |(_, r)| r);
    let authority = rest.split(['/', '?']).next().unwrap_or(rest);
    let hostport = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    if hostport.contains(':') {
        hostport.to_owned()
    } else {
        format!("{hostport}:5432")
    }
}

impl PgProxy {
    pub(crate) fn start() -> Self {
        let state = Arc::new(Mutex::new(ProxyState::default()));
        let (addr_tx, addr_rx) = std::sync::mpsc::channel();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let shared = Arc::clone(&state);
        let target = upstream_addr();
        std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            rt.block_on(async move {
                let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
                addr_tx.send(listener.local_addr().unwrap()).unwrap();
                let accept = async {
                    loop {
                        let Ok((mut down, _)) = listener.accept().await else {
                            continue;
                        };
                        if shared.lock().unwrap().cut {
                            drop(down);
                            continue;
                        }
                        let target = target.clone();
                        let h = tokio::spawn(async move {
                            if let Ok(mut up) = TcpStream::connect(&target).await {
                                let _ = tokio::io::copy_bidirectional(&mut down, &mut up).await;
                            }
                        });
                        shared.lock().unwrap().conns.push(h.abort_handle());
                    }
                };
                tokio::select! {
                    () = accept => {}
                    _ = stopped => {}
                }
            });
        });
        Self {
            addr: addr_rx.recv().unwrap(),
            state,
            stop: Some(stop),
        }
    }

    /// Close every connection and refuse new ones.
    pub(crate) fn cut(&self) {
        let mut s = self.state.lock().unwrap();
        s.cut = true;
        for h in s.conns.drain(..) {
            h.abort();
        }
    }

    pub(crate) fn restore(&self) {
        self.state.lock().unwrap().cut = false;
    }
}

impl Drop for PgProxy {
    fn drop(&mut self) {
        self.cut();
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

/// `/readyz`: status and body.
async fn readyz(addr: SocketAddr) -> (u16, String) {
    let r = send(addr, "GET", "/readyz", &[], b"").await;
    let status = r.status;
    (
        status,
        String::from_utf8_lossy(&r.bytes().await).into_owned(),
    )
}

/// A request answered with a JSON-RPC error: the error.
async fn rpc_error(c: &mut Client, method: &str, params: Value) -> Value {
    let (id, resp) = c.request(method, params).await;
    assert_eq!(resp.status, 200, "{method}: {resp:?}");
    let m = resp.json().await;
    assert_eq!(m["id"], json!(id), "{m}");
    assert!(
        m.get("result").is_none(),
        "{method} succeeded during the outage: {m}"
    );
    m["error"].clone()
}

/// Spec (2025-11-25, tasks): "Internal errors: -32603"; and the server's own rules: a
/// store outage fails the requests made during it (never hangs them past the statement
/// timeout), `/readyz` says 503 with the reason, and the server reconnects by itself.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_database_outage_fails_requests_clearly_and_loses_nothing() {
    let db = PgDb::new("outage");
    let proxy = PgProxy::start();
    let url = db.url_at(
        Some(&proxy.addr.to_string()),
        "pool=4&statement_timeout=2s&connect_timeout=2",
    );
    let server = Server::start(&["--store", &url]);
    let mut c = Client::new(&server);
    c.initialize().await;
    // Acknowledged before the outage: a finished task and its result, a task running.
    let done = c.start_task("sleep", json!({ "ms": 10 })).await;
    c.wait_status(&done, "completed").await;
    let result = c.rpc("tasks/result", json!({ "taskId": done })).await["result"].clone();
    let slow = c.start_task("sleep", json!({ "ms": 1500 })).await;
    let before = c.task(&done).await["result"].clone();
    assert_eq!(readyz(server.addr).await.0, 200);

    proxy.cut();
    let cut = Instant::now();
    for (method, params) in [
        ("tasks/get", json!({ "taskId": done })),
        ("tasks/result", json!({ "taskId": done })),
        (
            "tools/call",
            json!({ "name": "sleep", "arguments": { "ms": 1 }, "task": {} }),
        ),
    ] {
        let e = rpc_error(&mut c, method, params).await;
        assert_eq!(e["code"], -32603, "{method}: {e}");
        let msg = e["message"].as_str().unwrap();
        assert!(msg.contains("task store unavailable"), "{method}: {msg}");
        assert!(
            msg.contains(&db.0),
            "{method}: the message names the database: {msg}"
        );
    }
    assert!(
        cut.elapsed() < Duration::from_secs(10),
        "{:?}",
        cut.elapsed()
    );
    let (status, body) = readyz(server.addr).await;
    assert_eq!(status, 503, "{body}");
    assert!(body.contains("task store"), "{body}");
    // The running task finishes during the outage; its outcome waits for the database.
    tokio::time::sleep(Duration::from_millis(2000)).await;

    proxy.restore();
    let deadline = Instant::now() + TIMEOUT;
    while readyz(server.addr).await.0 != 200 {
        assert!(Instant::now() < deadline, "the server never reconnected");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(c.task(&done).await["result"], before);
    let again = c.rpc("tasks/result", json!({ "taskId": done })).await;
    assert_eq!(again["result"], result);
    c.wait_status(&slow, "completed").await;
    let r = c.rpc("tasks/result", json!({ "taskId": slow })).await;
    assert_eq!(r["result"]["content"][0]["text"], "slept 1500", "{r}");
    let id = c.start_task("sleep", json!({ "ms": 10 })).await;
    c.wait_status(&id, "completed").await;
}

/// A statement that runs past `statement_timeout` (here: a cancel waiting for a row
/// another transaction holds) fails its request with -32603; the other requests, made
/// meanwhile, are served; once the row is free the same request succeeds.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_statement_that_times_out_fails_its_request_only() {
    let db = PgDb::new("stmt_timeout");
    let url = db.url("pool=4&statement_timeout=300ms");
    let server = Server::start(&["--store", &url]);
    let mut c = Client::new(&server);
    c.initialize().await;
    let held = c.start_task("sleep", json!({ "ms": 600_000 })).await;
    let other = c.start_task("sleep", json!({ "ms": 600_000 })).await;

    let (pg, conn) = tokio_postgres::connect(&db.url(""), tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(conn);
    pg.batch_execute(&format!(
        "BEGIN; SELECT 1 FROM mcp_tasks.tasks WHERE task_id = '{held}' FOR UPDATE"
    ))
    .await
    .unwrap();

    let t0 = Instant::now();
    let e = rpc_error(&mut c, "tasks/cancel", json!({ "taskId": held })).await;
    assert_eq!(e["code"], -32603, "{e}");
    assert!(e["message"].as_str().unwrap().contains("timed out"), "{e}");
    assert!(t0.elapsed() < Duration::from_secs(5), "{:?}", t0.elapsed());
    // Meanwhile everything else is served.
    assert_eq!(c.task(&held).await["result"]["status"], "working");
    let m = c.rpc("tasks/cancel", json!({ "taskId": other })).await;
    assert_eq!(m["result"]["status"], "cancelled", "{m}");
    assert_eq!(readyz(server.addr).await.0, 200);

    pg.batch_execute("ROLLBACK").await.unwrap();
    let m = c.rpc("tasks/cancel", json!({ "taskId": held })).await;
    assert_eq!(m["result"]["status"], "cancelled", "{m}");
}
