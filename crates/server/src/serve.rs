//! [`serve_stdio`]: serving a server on the process's stdin/stdout until the input ends or
//! a shutdown signal.

use std::future::Future;

use crate::Server;

/// Serve `server` to one client on the process's stdin and stdout (the local peer sees its
/// whole store) until the input ends or `shutdown` completes (e.g. SIGTERM).
///
/// At the end of the input, see [`Server::serve_stdio`]. When `shutdown` completes first,
/// the tasks this process runs are failed with [`crate::SHUTDOWN_MESSAGE`] (nobody would
/// be left to collect their results) and serving stops. The server's background work is
/// left to [`Server::shutdown`].
///
/// # Errors
/// I/O errors of stdin or stdout.
pub async fn serve_stdio(
    server: &Server,
    shutdown: impl Future<Output = ()>,
) -> std::io::Result<()> {
    tokio::select! {
        r = server.serve_stdio(tokio::io::stdin(), tokio::io::stdout()) => r,
        () = shutdown => {
            tracing::info!("stdio: shutting down");
            server.fail_running_tasks().await;
            Ok(())
        }
    }
}
