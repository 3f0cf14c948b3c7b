//! Accepting connections: the connection bounds (in total and per client address) and
//! serving each accepted connection over HTTP/1.1 (or TLS), with its read timeouts.

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use tokio_util::sync::CancellationToken;
use tower::ServiceExt;

use super::auth;
use super::handlers::{self, ClientAddr};
use super::metrics::Refusal;
use super::state::Shared;

/// Open connections per client IP address.
#[derive(Default)]
struct PerIp(Mutex<HashMap<IpAddr, usize>>);

/// One connection's place in [`PerIp`], given back on drop.
struct IpSlot(Arc<PerIp>, IpAddr);

impl PerIp {
    fn take(self: &Arc<Self>, ip: IpAddr, max: usize) -> Option<IpSlot> {
        let mut m = self.0.lock();
        let n = m.entry(ip).or_insert(0);
        if *n >= max {
            return None;
        }
        *n += 1;
        Some(IpSlot(Arc::clone(self), ip))
    }
}

impl Drop for IpSlot {
    fn drop(&mut self) {
        let mut m = (self.0).0.lock();
        if let Some(n) = m.get_mut(&self.1) {
            *n -= 1;
            if *n == 0 {
                m.remove(&self.1);
            }
        }
    }
}

/// Whether an accept error concerns only the one connection (the next accept may work).
fn is_connection_error(e: &std::io::Error) -> bool {
    use std::io::ErrorKind;
    matches!(
        e.kind(),
        ErrorKind::ConnectionRefused | ErrorKind::ConnectionAborted | ErrorKind::ConnectionReset
    )
}

/// Accept and serve connections until shutdown; then wait for the open ones to finish.
pub(super) async fn accept_loop(
    shared: &Arc<Shared>,
    listener: tokio::net::TcpListener,
) -> std::io::Result<()> {
    let config = &shared.config;
    let stop = shared.shutdown.clone();
    let permits = Arc::new(tokio::sync::Semaphore::new(config.max_connections.max(1)));
    let per_ip = Arc::new(PerIp::default());
    // Every connection task holds a receiver; `closed()` fires when all are gone.
    let (open_tx, open_rx) = tokio::sync::watch::channel(());
    let app = handlers::router(Arc::clone(shared));
    let plain_cors = Arc::new(handlers::PlainCors::new());
    let mut http1 = hyper::server::conn::http1::Builder::new();
    http1
        .timer(hyper_util::rt::TokioTimer::new())
        .header_read_timeout(config.header_read_timeout)
        .keep_alive(true);
    loop {
        let permit = tokio::select! {
            p = Arc::clone(&permits).acquire_owned() => match p {
                Ok(p) => p,
                Err(_) => break,
            },
            () = stop.cancelled() => break,
        };
        let (tcp, addr) = tokio::select! {
            r = listener.accept() => match r {
                Ok(c) => c,
                Err(e) if is_connection_error(&e) => continue,
                Err(e) => {
                    // Out of file descriptors and the like: wait, do not spin.
                    tracing::warn!(error = %e, "accept failed; retrying in 1 s");
                    tokio::select! {
                        () = tokio::time::sleep(Duration::from_secs(1)) => {}
                        () = stop.cancelled() => break,
                    }
                    continue;
                }
            },
            () = stop.cancelled() => break,
        };
        let Some(slot) = per_ip.take(addr.ip(), config.max_connections_per_ip.max(1)) else {
            tracing::debug!(client = %addr, "connection refused: too many from this address");
            shared.refused(Refusal::Limit);
            // Over TLS a plain-text answer would only be garbage to the client.
            if shared.scheme() == "http" {
                refuse(&tcp, config.max_connections_per_ip);
            }
            continue;
        };
        // Small writes (an SSE event with a task's result, a JSON reply) go out at once:
        // with Nagle's algorithm on, a response written in two pieces waited for the
        // client's delayed ACK, ~40 ms per result (measured by `mcp-tasks bench`
        // result-wait, docs/performance.md).
        if let Err(e) = tcp.set_nodelay(true) {
            tracing::debug!(error = %e, "could not set TCP_NODELAY");
        }
        let conn = Connection {
            app: app.clone(),
            shared: Arc::clone(shared),
            cors: Arc::clone(&plain_cors),
            addr,
            stop: stop.clone(),
            http1: http1.clone(),
        };
        #[cfg(feature = "http-tls")]
        let tls = config
            .tls
            .as_ref()
            .map(|t| (t.acceptor(), config.tls_handshake_timeout));
        let open = open_rx.clone();
        tokio::spawn(async move {
            // Held until the connection ends, the TLS handshake included.
            let _held = (permit, slot, open);
            #[cfg(feature = "http-tls")]
            if let Some((acceptor, timeout)) = tls {
                let handshake = tokio::time::timeout(timeout, acceptor.accept(tcp));
                let stream = tokio::select! {
                    r = handshake => match r {
                        Ok(Ok(s)) => s,
                        Ok(Err(e)) => {
                            tracing::debug!(client = %addr, error = %e, "TLS handshake failed");
                            return;
                        }
                        Err(_) => {
                            tracing::debug!(client = %addr, ?timeout, "TLS handshake timed out");
                            return;
                        }
                    },
                    () = conn.stop.cancelled() => return,
                };
                conn.serve(stream).await;
                return;
            }
            conn.serve(tcp).await;
        });
    }
    // No new connections while the open ones finish.
    drop(listener);
    drop(open_rx);
    open_tx.closed().await;
    Ok(())
}

/// What serving one accepted connection needs.
struct Connection {
    app: axum::Router,
    /// For the POSTs served without the router (`handlers::is_plain_post`).
    shared: Arc<Shared>,
    cors: Arc<handlers::PlainCors>,
    addr: SocketAddr,
    stop: CancellationToken,
    http1: hyper::server::conn::http1::Builder,
}

impl Connection {
    /// Serve HTTP/1.1 on `io` (TCP, or TLS over it) until it ends; on shutdown, finish the
    /// request in progress and close.
    async fn serve<I>(self, io: I)
    where
        I: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
    {
        let Self {
            app,
            shared,
            cors,
            addr,
            stop,
            http1,
        } = self;
        let last_token = Arc::new(auth::LastToken::default());
        let service =
            hyper::service::service_fn(move |req: hyper::Request<hyper::body::Incoming>| {
                let mut req = req.map(axum::body::Body::new);
                req.extensions_mut().insert(ClientAddr(addr));
                // A POST on the endpoint without `Origin` (every message of a non-browser
                // client) is answered as the router would, without its layers.
                if handlers::is_plain_post(&shared, &req) {
                    futures::future::Either::Left(handlers::plain_post(
                        Arc::clone(&shared),
                        Arc::clone(&cors),
                        Arc::clone(&last_token),
                        req,
                    ))
                } else {
                    futures::future::Either::Right(app.clone().oneshot(req))
                }
            });
        let conn = http1.serve_connection(hyper_util::rt::TokioIo::new(io), service);
        let mut conn = std::pin::pin!(conn);
        tokio::select! {
            r = conn.as_mut() => {
                if let Err(e) = r {
                    tracing::debug!(client = %addr, error = %e, "connection ended with an error");
                }
                return;
            }
            () = stop.cancelled() => {}
        }
        conn.as_mut().graceful_shutdown();
        if let Err(e) = conn.await {
            tracing::debug!(client = %addr, error = %e, "connection ended with an error");
        }
    }
}

/// Best effort: tell a refused connection why (one non-blocking write), then close it.
fn refuse(tcp: &tokio::net::TcpStream, max: usize) {
    let body = format!(
        r#"{{"jsonrpc":"2.0","error":{{"code":-32603,"message":"Service Unavailable: at most {max} connections per client address (--max-connections-per-ip)"}}}}"#
    );
    let head = format!(
        "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nRetry-After: 1\r\nConnection: close\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    let _ = tcp.try_write(format!("{head}{body}").as_bytes());
}
