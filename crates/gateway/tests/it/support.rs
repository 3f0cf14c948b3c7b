//! A gateway in front of an upstream, both in process.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use mcp_tasks_client::ClientError;
use mcp_tasks_gateway::GatewayFactory;
use mcp_tasks_gateway::{Connected, Connector};
use mcp_tasks_proto::CallToolResult;
use mcp_tasks_proto::ErrorObject;
use mcp_tasks_rpc::{Handler, Peer};
use mcp_tasks_server::{Server, Tool};
use mcp_tasks_testkit::wire::Wire;
use serde_json::{Value, json};
use tokio::sync::oneshot;

/// What the upstream's `slow` tool saw: calls started, and calls cancelled (dropped)
/// before their time.
#[derive(Default)]
pub(crate) struct SlowCalls {
    pub(crate) started: AtomicUsize,
    pub(crate) cancelled: AtomicUsize,
}

/// Counts a `slow` call dropped before it finished.
struct Unfinished(Option<Arc<SlowCalls>>);

impl Drop for Unfinished {
    fn drop(&mut self) {
        if let Some(slow) = self.0.take() {
            slow.cancelled.fetch_add(1, Ordering::SeqCst);
        }
    }
}

/// The upstream's tools: `echo {text}`, `slow {ms}` (counted in `slow`), `fail` (a
/// JSON-RPC error). The upstream has no task support.
fn upstream_tools(slow: &Arc<SlowCalls>) -> Vec<Tool> {
    let slow = Arc::clone(slow);
    vec![
        Tool::new(
            "echo",
            "Returns its text.",
            json!({"type": "object", "properties": {"text": {"type": "string"}}}),
            |args: Value, _cx| async move {
                let text = args["text"].as_str().unwrap_or_default().to_owned();
                Ok(CallToolResult::text(text))
            },
        ),
        Tool::new(
            "slow",
            "Sleeps.",
            json!({"type": "object", "properties": {"ms": {"type": "integer"}}}),
            move |args: Value, _cx| {
                let slow = Arc::clone(&slow);
                async move {
                    slow.started.fetch_add(1, Ordering::SeqCst);
                    // A cancelled request's handler is dropped: counted by the guard.
                    let mut guard = Unfinished(Some(Arc::clone(&slow)));
                    let ms = args["ms"].as_u64().unwrap_or(0);
                    tokio::time::sleep(Duration::from_millis(ms)).await;
                    guard.0 = None;
                    Ok(CallToolResult::text(format!("slept {ms}")))
                }
            },
        ),
        Tool::new(
            "fail",
            "Always fails.",
            json!({"type": "object"}),
            |_args: Value, _cx| async move {
                Err::<CallToolResult, _>(ErrorObject::new(-32050, "the upstream refuses").into())
            },
        ),
    ]
}

/// Opens each connection to a fresh in-process upstream server; counts them, and the
/// calls of `slow`.
#[derive(Default)]
pub(crate) struct InProcessUpstream {
    pub(crate) connections: AtomicUsize,
    pub(crate) slow: Arc<SlowCalls>,
}

#[async_trait]
impl Connector for InProcessUpstream {
    async fn connect(&self, handler: Arc<dyn Handler>) -> Result<Connected, ClientError> {
        self.connections.fetch_add(1, Ordering::SeqCst);
        let upstream = Server::builder()
            .tools(upstream_tools(&self.slow))
            .no_tasks()
            .build()
            .await
            .map_err(|e| ClientError::Connect(e.to_string()))?;
        let (ours, theirs) = tokio::io::duplex(1 << 20);
        let (ur, uw) = tokio::io::split(theirs);
        tokio::spawn(async move {
            upstream
                .serve(
                    mcp_tasks_server::Transport::io(ur, uw),
                    std::future::pending(),
                )
                .await
        });
        let (peer, outbound) = Peer::new(handler);
        let (tx, ended) = oneshot::channel();
        let serving = peer.clone();
        tokio::spawn(async move {
            let (r, w) = tokio::io::split(ours);
            let r = tokio::io::BufReader::new(r);
            let io = mcp_tasks_rpc::stdio::LineIo::new(r, w).max_line(1 << 20);
            let result = mcp_tasks_rpc::stdio::serve(serving.clone(), outbound, io).await;
            serving.close();
            let _ = tx.send(format!("the in-process upstream ended: {result:?}"));
        });
        Ok(Connected {
            peer,
            ended,
            guard: Box::new(()),
            settled: None,
            session: None,
        })
    }

    fn describe(&self) -> String {
        "in-process upstream".into()
    }
}

/// A gateway (with a memory store) in front of an in-process upstream; the requestor's
/// end of the pipe to it, and the upstream connector.
pub(crate) async fn gateway() -> (Wire, Arc<InProcessUpstream>) {
    let upstream = Arc::new(InProcessUpstream::default());
    let factory = GatewayFactory::new(Arc::clone(&upstream) as Arc<dyn Connector>, BTreeMap::new());
    let server = Server::builder()
        .with_policy(|p| p.poll_interval_ms = 50)
        .extension(Arc::new(factory))
        .build()
        .await
        .expect("a gateway with tasks in memory");
    let (wire, (reader, writer)) = Wire::pair();
    tokio::spawn(async move {
        server
            .serve(
                mcp_tasks_server::Transport::io(reader, writer),
                std::future::pending(),
            )
            .await
    });
    (wire, upstream)
}

/// Wait (up to 10 s) until `count` is at least 1.
///
/// # Panics
/// When it is not.
pub(crate) async fn wait_count(count: &AtomicUsize, what: &str) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while count.load(Ordering::SeqCst) == 0 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "{what}: not within 10 s"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}
