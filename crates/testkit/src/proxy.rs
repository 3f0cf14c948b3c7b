//! A round-robin HTTP/1.1 reverse proxy for tests of several replicas behind a load
//! balancer with no session affinity.
//!
//! Every HTTP request, on any client connection, goes to the next backend in turn: two
//! requests on one keep-alive connection reach two different replicas. Each request is
//! forwarded on a fresh connection to its backend; request and response bodies are
//! streamed through as they come (an SSE stream is never buffered), and a client that goes
//! away closes its backend connection. A backend that refuses the connection is passed over
//! for the next one; when none can be reached the answer is 502.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use hyper::body::Incoming;
use hyper::header::{HeaderName, HeaderValue};
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;

/// The body of a proxied response: the backend's, or a short error text.
pub type ProxyBody = http_body_util::Either<Incoming, http_body_util::Full<bytes::Bytes>>;

/// Hop-by-hop headers (RFC 9110, section 7.6.1): never forwarded.
const HOP_BY_HOP: &[&str] = &[
    "connection",
    "keep-alive",
    "proxy-connection",
    "proxy-authenticate",
    "proxy-authorization",
    "te",
    "trailer",
    "upgrade",
];

struct State {
    backends: Vec<SocketAddr>,
    next: AtomicUsize,
    hits: Vec<AtomicUsize>,
}

/// A running proxy; stops when dropped.
pub struct Proxy {
    addr: SocketAddr,
    state: Arc<State>,
    task: tokio::task::JoinHandle<()>,
}

mcp_tasks_proto::debug_non_exhaustive!(Proxy, |s| { addr: s.addr, backends: s.state.backends });

impl Drop for Proxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Proxy {
    /// Listen on a free loopback port and send each request to the next of `backends`.
    ///
    /// # Errors
    /// The listener cannot be bound.
    ///
    /// # Panics
    /// With no backend.
    pub async fn start(backends: Vec<SocketAddr>) -> std::io::Result<Self> {
        assert!(!backends.is_empty(), "a proxy needs at least one backend");
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let state = Arc::new(State {
            hits: backends.iter().map(|_| AtomicUsize::new(0)).collect(),
            backends,
            next: AtomicUsize::new(0),
        });
        let task = tokio::spawn(accept(listener, Arc::clone(&state)));
        Ok(Self { addr, state, task })
    }

    /// Where clients connect.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// How many requests each backend got, in the order of the backends.
    pub fn hits(&self) -> Vec<usize> {
        self.state
            .hits
            .iter()
            .map(|h| h.load(Ordering::Relaxed))
            .collect()
    }
}

async fn accept(listener: tokio::net::TcpListener, state: Arc<State>) {
    loop {
        let Ok((tcp, _)) = listener.accept().await else {
            continue;
        };
        let _ = tcp.set_nodelay(true);
        let state = Arc::clone(&state);
        tokio::spawn(async move {
            let service = hyper::service::service_fn(move |req| {
                let state = Arc::clone(&state);
                async move { Ok::<_, Infallible>(forward(&state, req).await) }
            });
            let _ = hyper::server::conn::http1::Builder::new()
                .keep_alive(true)
                .serve_connection(TokioIo::new(tcp), service)
                .await;
        });
    }
}

fn text(status: StatusCode, message: String) -> Response<ProxyBody> {
    let mut r = Response::new(http_body_util::Either::Right(http_body_util::Full::new(
        bytes::Bytes::from(message),
    )));
    *r.status_mut() = status;
    r
}

/// Send `req` to the next backend on a connection of its own; its response, streamed.
async fn forward(state: &State, mut req: Request<Incoming>) -> Response<ProxyBody> {
    let first = state.next.fetch_add(1, Ordering::Relaxed);
    let count = state.backends.len();
    // A backend that refuses the connection (a replica that died) is passed over, as a
    // balancer's health check would: nothing of the request was sent to it yet.
    let mut failure = None;
    let mut connected = None;
    for k in 0..count {
        let n = (first + k) % count;
        let backend = state.backends[n];
        match tokio::net::TcpStream::connect(backend).await {
            Ok(t) => {
                state.hits[n].fetch_add(1, Ordering::Relaxed);
                connected = Some((backend, t));
                break;
            }
            Err(e) => failure = Some(format!("backend {backend} unreachable: {e}")),
        }
    }
    let Some((backend, tcp)) = connected else {
        return text(
            StatusCode::BAD_GATEWAY,
            failure.unwrap_or_else(|| "no backend".to_owned()),
        );
    };
    let _ = tcp.set_nodelay(true);
    let (mut sender, conn) = match hyper::client::conn::http1::handshake(TokioIo::new(tcp)).await {
        Ok(h) => h,
        Err(e) => return text(StatusCode::BAD_GATEWAY, format!("backend {backend}: {e}")),
    };
    // Driven until the response body ends or is dropped (the client went away).
    tokio::spawn(conn);
    strip_hop_by_hop(req.headers_mut());
    req.headers_mut().insert(
        hyper::header::HOST,
        HeaderValue::from_str(&backend.to_string()).unwrap_or(HeaderValue::from_static("backend")),
    );
    req.headers_mut().insert(
        HeaderName::from_static("x-forwarded-for"),
        HeaderValue::from_static("127.0.0.1"),
    );
    match sender.send_request(req).await {
        Ok(mut resp) => {
            strip_hop_by_hop(resp.headers_mut());
            resp.map(http_body_util::Either::Left)
        }
        Err(e) => text(StatusCode::BAD_GATEWAY, format!("backend {backend}: {e}")),
    }
}

fn strip_hop_by_hop(h: &mut hyper::HeaderMap) {
    let named: Vec<HeaderName> = h
        .get_all(hyper::header::CONNECTION)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .filter_map(|n| HeaderName::from_bytes(n.trim().as_bytes()).ok())
        .collect();
    for n in named {
        h.remove(n);
    }
    for n in HOP_BY_HOP {
        h.remove(*n);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// A backend answering every request with its own name, and an SSE-like response for
    /// `/stream` whose second chunk comes only after the test saw the first.
    async fn backend(name: &'static str, gate: Arc<tokio::sync::Notify>) -> SocketAddr {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move {
            loop {
                let (mut tcp, _) = listener.accept().await.unwrap();
                let gate = Arc::clone(&gate);
                tokio::spawn(async move {
                    let mut buf = vec![0u8; 4096];
                    let n = tcp.read(&mut buf).await.unwrap();
                    let head = String::from_utf8_lossy(&buf[..n]).to_string();
                    if head.starts_with("GET /stream") {
                        let _ = tcp
                            .write_all(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n7\r\ndata: 1\r\n")
                            .await;
                        gate.notified().await;
                        let _ = tcp.write_all(b"7\r\ndata: 2\r\n0\r\n\r\n").await;
                    } else {
                        let body = name;
                        let r = format!(
                            "HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n{body}",
                            body.len()
                        );
                        let _ = tcp.write_all(r.as_bytes()).await;
                    }
                });
            }
        });
        addr
    }

    #[tokio::test]
    async fn each_request_on_one_connection_goes_to_the_next_backend_and_streams_pass_unbuffered() {
        let gate = Arc::new(tokio::sync::Notify::new());
        let a = backend("a", Arc::clone(&gate)).await;
        let b = backend("b", Arc::clone(&gate)).await;
        let proxy = Proxy::start(vec![a, b]).await.unwrap();
        let mut tcp = tokio::net::TcpStream::connect(proxy.addr()).await.unwrap();
        let mut seen = String::new();
        for _ in 0..4 {
            tcp.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
                .await
                .unwrap();
            let mut buf = vec![0u8; 1024];
            let n = tcp.read(&mut buf).await.unwrap();
            let r = String::from_utf8_lossy(&buf[..n]).to_string();
            seen.push_str(r.rsplit("\r\n\r\n").next().unwrap());
        }
        assert_eq!(
            seen, "abab",
            "one keep-alive connection, round robin per request"
        );
        assert_eq!(proxy.hits(), vec![2, 2]);

        let mut tcp = tokio::net::TcpStream::connect(proxy.addr()).await.unwrap();
        tcp.write_all(b"GET /stream HTTP/1.1\r\nHost: x\r\n\r\n")
            .await
            .unwrap();
        let mut got = String::new();
        let mut buf = vec![0u8; 1024];
        while !got.contains("data: 1") {
            let n = tokio::time::timeout(std::time::Duration::from_secs(5), tcp.read(&mut buf))
                .await
                .expect("the first event arrives before the stream ends")
                .unwrap();
            assert!(n > 0);
            got.push_str(&String::from_utf8_lossy(&buf[..n]));
        }
        assert!(!got.contains("data: 2"));
        gate.notify_one();
        while !got.contains("data: 2") {
            let n = tcp.read(&mut buf).await.unwrap();
            assert!(n > 0);
            got.push_str(&String::from_utf8_lossy(&buf[..n]));
        }
    }

    #[tokio::test]
    async fn an_unreachable_backend_is_502() {
        let dead = {
            let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            l.local_addr().unwrap()
        };
        let proxy = Proxy::start(vec![dead]).await.unwrap();
        let mut tcp = tokio::net::TcpStream::connect(proxy.addr()).await.unwrap();
        tcp.write_all(b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            .await
            .unwrap();
        let mut r = String::new();
        tcp.read_to_string(&mut r).await.unwrap();
        assert!(r.starts_with("HTTP/1.1 502"), "{r}");
    }
}
