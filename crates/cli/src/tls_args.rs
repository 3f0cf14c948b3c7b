//! `serve`'s TLS flags (`--tls-cert`, `--tls-key`, `--tls-handshake-timeout`), and the
//! reload of the certificate on SIGHUP.

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;

/// TLS flags of `serve` over HTTP.
#[derive(Args, Debug)]
pub(crate) struct TlsArgs {
    /// Serve HTTPS with this certificate chain (PEM: the server's certificate first, then
    /// its intermediates). Read again, with --tls-key, on SIGHUP: new connections get the
    /// new certificate; if it cannot be loaded, an error is logged and the old one stays.
    #[arg(long, value_name = "FILE", requires = "tls_key")]
    tls_cert: Option<PathBuf>,
    /// The private key of --tls-cert (PEM: PKCS#8, PKCS#1 or SEC1).
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    tls_key: Option<PathBuf>,
    /// Time a client has to complete the TLS handshake; then its connection is closed.
    #[arg(long, value_name = "DURATION", default_value = "10s", value_parser = crate::duration::parse)]
    pub(crate) tls_handshake_timeout: Duration,
}

/// The certificate served, when TLS is on.
#[cfg(feature = "tls")]
pub(crate) type Served = std::sync::Arc<mcp_tasks_server::http::TlsFiles>;
/// Without the `tls` feature nothing can be served over TLS.
#[cfg(not(feature = "tls"))]
pub(crate) type Served = std::convert::Infallible;

impl TlsArgs {
    /// The certificate and key, loaded; `None` without --tls-cert. The SIGHUP reload is
    /// started by [`reload_on_hangup`].
    pub(crate) fn load(&self) -> anyhow::Result<Option<Served>> {
        if self.tls_handshake_timeout.is_zero() {
            anyhow::bail!("--tls-handshake-timeout: must be longer than 0");
        }
        let (Some(cert), Some(key)) = (&self.tls_cert, &self.tls_key) else {
            return Ok(None);
        };
        crate::private_file::warn_if_loose(key, "--tls-key");
        #[cfg(feature = "tls")]
        {
            let files = mcp_tasks_server::http::TlsFiles::load(cert, key)
                .map_err(|e| anyhow::anyhow!("--tls-cert/--tls-key: {e}"))?;
            Ok(Some(std::sync::Arc::new(files)))
        }
        #[cfg(not(feature = "tls"))]
        {
            let _ = (cert, key);
            anyhow::bail!("--tls-cert: this build has no TLS support (the `tls` feature)")
        }
    }
}

/// Reload `files` on every SIGHUP, for as long as the process runs. Registered before it
/// returns, so a SIGHUP after it never ends the process.
///
/// # Errors
/// The signal handler could not be installed.
#[cfg(feature = "tls")]
pub(crate) fn reload_on_hangup(files: &Served) -> anyhow::Result<()> {
    #[cfg(unix)]
    {
        use anyhow::Context;
        use tokio::signal::unix::{SignalKind, signal};
        let mut hangups = signal(SignalKind::hangup()).context("cannot handle SIGHUP")?;
        let files = std::sync::Arc::clone(files);
        tokio::spawn(async move {
            while hangups.recv().await.is_some() {
                match files.reload() {
                    Ok(()) => tracing::info!(
                        fingerprint = %files.fingerprint(),
                        "SIGHUP: TLS certificate reloaded; new connections use it"
                    ),
                    Err(e) => tracing::error!(
                        error = %e,
                        fingerprint = %files.fingerprint(),
                        "SIGHUP: TLS certificate reload failed; still serving the previous one"
                    ),
                }
            }
        });
    }
    let _ = files;
    Ok(())
}

/// Without TLS there is nothing to reload.
#[cfg(not(feature = "tls"))]
pub(crate) fn reload_on_hangup(files: &Served) -> anyhow::Result<()> {
    match *files {}
}
