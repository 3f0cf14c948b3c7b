//! The HTTP router's fuzz entry ([`crate::fuzz::http_router`]): requests built from
//! arbitrary bytes, served by the real router of a server whose sessions answer every
//! request.

use std::net::SocketAddr;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use async_trait::async_trait;
use http_body_util::BodyExt;
use mcp_tasks_proto::{ErrorObject, Request};
use serde_json::{Value, json};
use tower::ServiceExt;

use super::{ClientAddr, HttpConfig, HttpServer};
use crate::peer::{Handler, RequestContext};

/// Answers `initialize` as an MCP server would, and every other request with `{}`.
struct Answer;

#[async_trait]
impl Handler for Answer {
    async fn handle_request(
        &self,
        _cx: RequestContext,
        req: Request,
    ) -> Result<Value, ErrorObject> {
        Ok(if req.method == "initialize" {
            json!({"protocolVersion": "2025-11-25", "capabilities": {}, "serverInfo": {"name": "fuzz", "version": "0"}})
        } else {
            json!({})
        })
    }
}

fn runtime() -> &'static tokio::runtime::Runtime {
    static RT: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RT.get_or_init(|| {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a runtime")
    })
}

/// One server for every input (as one process serves many requests): bearer token `t`
/// for `alice`, few sessions, short waits.
fn server() -> &'static HttpServer {
    static SERVER: OnceLock<HttpServer> = OnceLock::new();
    SERVER.get_or_init(|| {
        let mut c = HttpConfig::default();
        c.tokens.insert("t", "alice");
        c.max_sessions = 8;
        c.max_sessions_per_principal = 4;
        c.peek = Duration::from_millis(5);
        c.sse_hold = Duration::from_millis(20);
        c.max_body_bytes = 4096;
        HttpServer::new(c, |_: Option<&str>| Arc::new(Answer) as Arc<dyn Handler>)
    })
}

/// The request of `bytes`: a first line `METHOD PATH`, header lines `Name: value`, a
/// blank line, the body. `None` when it is not a request `http` can represent.
pub(crate) fn request(bytes: &[u8]) -> Option<axum::http::Request<axum::body::Body>> {
    let (head, body) = match bytes.windows(2).position(|w| w == b"\n\n") {
        Some(i) => (&bytes[..i], &bytes[i + 2..]),
        None => (bytes, &[][..]),
    };
    let mut lines = head.split(|&b| b == b'\n');
    let first = lines.next()?;
    let mut parts = first.splitn(2, |&b| b == b' ');
    let method = axum::http::Method::from_bytes(parts.next()?).ok()?;
    let uri = axum::http::Uri::try_from(parts.next().unwrap_or(b"/mcp")).ok()?;
    let mut req = axum::http::Request::builder().method(method).uri(uri);
    for line in lines {
        let i = line.iter().position(|&b| b == b':')?;
        let name = axum::http::HeaderName::from_bytes(&line[..i]).ok()?;
        let value = axum::http::HeaderValue::from_bytes(line[i + 1..].trim_ascii()).ok()?;
        req = req.header(name, value);
    }
    req.body(axum::body::Body::from(body.to_vec())).ok()
}

/// See [`crate::fuzz::http_router`].
pub(crate) fn router(bytes: &[u8]) {
    let Some(mut req) = request(bytes) else {
        return;
    };
    req.extensions_mut()
        .insert(ClientAddr(SocketAddr::from(([127, 0, 0, 1], 4242))));
    let app = server().router();
    runtime().block_on(async move {
        let served = tokio::time::timeout(Duration::from_secs(5), app.oneshot(req)).await;
        let response = match served {
            Ok(Ok(r)) => r,
            Ok(Err(e)) => match e {},
            Err(_) => panic!("the router did not answer within 5 s"),
        };
        let status = response.status();
        assert!(
            !status.is_server_error() || status == axum::http::StatusCode::SERVICE_UNAVAILABLE,
            "{status}"
        );
        // Read a little of the body (an SSE stream may go on): it must not fail.
        let mut body = response.into_body();
        let _ = tokio::time::timeout(Duration::from_millis(30), body.frame()).await;
    });
}
