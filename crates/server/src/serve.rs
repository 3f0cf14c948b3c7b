//! [`Server::serve`]: serving a server over a [`Transport`] (stdio, any byte streams, or
//! Streamable HTTP) until the transport ends or a shutdown signal.

use std::future::Future;

use tokio::io::{AsyncRead, AsyncWrite};

use crate::Server;

/// Where [`Server::serve`] serves: newline-delimited JSON-RPC on the process's stdio or on
/// any byte streams, or (feature `http`) Streamable HTTP.
#[non_exhaustive]
pub enum Transport {
    /// One client on the process's stdin and stdout (the local peer sees its whole store).
    Stdio,
    /// One client on these streams, read and written as on stdio (an in-process client,
    /// a socket, a pipe): see [`Transport::io`].
    Io(
        Box<dyn AsyncRead + Unpin + Send>,
        Box<dyn AsyncWrite + Unpin + Send>,
    ),
    /// Streamable HTTP on this listener with these options: see [`Transport::http`].
    #[cfg(feature = "http")]
    Http(tokio::net::TcpListener, Box<crate::http::HttpOptions>),
}

mcp_tasks_proto::debug_non_exhaustive!(Transport, |s| {
    kind: match s {
        Transport::Stdio => "stdio",
        Transport::Io(..) => "io",
        #[cfg(feature = "http")]
        Transport::Http(..) => "http",
    },
});

impl Transport {
    /// One client on `reader` and `writer`, as on stdio.
    pub fn io(
        reader: impl AsyncRead + Unpin + Send + 'static,
        writer: impl AsyncWrite + Unpin + Send + 'static,
    ) -> Self {
        Self::Io(Box::new(reader), Box::new(writer))
    }

    /// Streamable HTTP on `listener` (endpoint `/mcp` by default) with `options`.
    #[cfg(feature = "http")]
    pub fn http(listener: tokio::net::TcpListener, options: crate::http::HttpOptions) -> Self {
        Self::Http(listener, Box::new(options))
    }
}

impl Server {
    /// Serve over `transport` until it ends or `shutdown` completes (e.g. Ctrl-C or
    /// SIGTERM). The server's background work is left to [`Server::shutdown`].
    ///
    /// * [`Transport::Stdio`] and [`Transport::Io`]: one client, whose connection sees the
    ///   whole store. At the end of the input nothing more is read; the tasks this process
    ///   runs are failed with [`crate::SHUTDOWN_MESSAGE`] (nobody is left to collect their
    ///   results, and a `tasks/result` waiting on one answers at once), and the requests
    ///   in flight may still answer for [`crate::ServerConfig::shutdown_grace`]; then the
    ///   ones left are cancelled, a task created meanwhile is failed too, and the session
    ///   closes. When `shutdown` completes first, the running tasks are failed the same
    ///   way and serving stops.
    /// * [`Transport::Http`]: Streamable HTTP, shut down gracefully when `shutdown`
    ///   completes (see `http::HttpOptions`): stop accepting, close streams with a `retry`
    ///   field, let running tasks finish for the grace period, fail the ones left, and
    ///   give open connections what is left of the grace.
    ///
    /// # Errors
    /// I/O errors of the streams or of the listener; for HTTP, also
    /// [`std::io::ErrorKind::PermissionDenied`] for a non-loopback address without
    /// authentication and without `HttpOptions::allow_unauthenticated`.
    pub async fn serve(
        &self,
        transport: Transport,
        shutdown: impl Future<Output = ()>,
    ) -> std::io::Result<()> {
        match transport {
            Transport::Stdio => {
                self.serve_lines_until(tokio::io::stdin(), tokio::io::stdout(), shutdown)
                    .await
            }
            Transport::Io(reader, writer) => self.serve_lines_until(reader, writer, shutdown).await,
            #[cfg(feature = "http")]
            Transport::Http(listener, options) => {
                crate::http::serve_http(self, listener, *options, shutdown).await
            }
        }
    }

    /// Serve one client on `reader` and `writer` until the input ends or `shutdown`
    /// completes.
    async fn serve_lines_until<R, W>(
        &self,
        reader: R,
        writer: W,
        shutdown: impl Future<Output = ()>,
    ) -> std::io::Result<()>
    where
        R: AsyncRead + Unpin,
        W: AsyncWrite + Unpin + Send + 'static,
    {
        tokio::select! {
            r = self.serve_lines(reader, writer) => r,
            () = shutdown => {
                tracing::info!("stdio: shutting down");
                self.fail_running_tasks().await;
                Ok(())
            }
        }
    }
}
