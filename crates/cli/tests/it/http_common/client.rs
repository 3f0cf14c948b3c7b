//! An MCP client over the raw HTTP client: sessions, tokens, JSON-RPC requests, tasks.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::raw::{Resp, send};
use super::{Server, TIMEOUT, VERSION, check_response};

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
