//! TLS termination for [`super::HttpServer`]: a certificate chain and private key read
//! from PEM files, with rustls and its `ring` provider, reloadable while serving.
//!
//! A reload ([`TlsFiles::reload`], on SIGHUP in `mcp-tasks serve`) reads both files again:
//! connections accepted after it present the new certificate; those already open keep
//! theirs. A reload that fails (unreadable file, no certificate, no key, a key that does not
//! match the certificate) changes nothing: the previous certificate stays in use.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use parking_lot::RwLock;
use rustls::ServerConfig;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use sha2::{Digest, Sha256};

/// Why a certificate or key could not be loaded.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct TlsError(String);

/// The server's certificate chain and key, from PEM files; [`Self::reload`] reads them
/// again. Shared (in an `Arc`) by the server and whoever triggers reloads.
pub struct TlsFiles {
    cert: PathBuf,
    key: PathBuf,
    current: RwLock<Loaded>,
}

struct Loaded {
    config: Arc<ServerConfig>,
    fingerprint: String,
}

impl std::fmt::Debug for TlsFiles {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TlsFiles")
            .field("cert", &self.cert)
            .field("key", &"<file>")
            .field("fingerprint", &self.current.read().fingerprint)
            .finish()
    }
}

impl TlsFiles {
    /// Read the certificate chain (`cert`: PEM, the server's certificate first, then its
    /// intermediates) and the private key (`key`: PEM, PKCS#8, PKCS#1 or SEC1).
    ///
    /// # Errors
    /// An unreadable file, no certificate or no key in it, or a key that does not belong
    /// to the certificate. The message names the file, never the key's content.
    pub fn load(cert: impl Into<PathBuf>, key: impl Into<PathBuf>) -> Result<Self, TlsError> {
        let cert = cert.into();
        let key = key.into();
        let current = load(&cert, &key)?;
        Ok(Self {
            cert,
            key,
            current: RwLock::new(current),
        })
    }

    /// Read both files again; new connections use what was read. On error the previous
    /// certificate stays in use.
    ///
    /// # Errors
    /// As [`Self::load`].
    pub fn reload(&self) -> Result<(), TlsError> {
        let loaded = load(&self.cert, &self.key)?;
        *self.current.write() = loaded;
        Ok(())
    }

    /// The SHA-256 fingerprint (hex) of the certificate served now.
    pub fn fingerprint(&self) -> String {
        self.current.read().fingerprint.clone()
    }

    /// The acceptor for a new connection, with the certificate current now.
    pub(crate) fn acceptor(&self) -> tokio_rustls::TlsAcceptor {
        tokio_rustls::TlsAcceptor::from(Arc::clone(&self.current.read().config))
    }
}

fn load(cert_path: &Path, key_path: &Path) -> Result<Loaded, TlsError> {
    let read = |what: &str, p: &Path| {
        std::fs::read(p)
            .map_err(|e| TlsError(format!("cannot read the TLS {what} {}: {e}", p.display())))
    };
    let cert_pem = read("certificate", cert_path)?;
    let key_pem = read("key", key_path)?;
    let certs = CertificateDer::pem_slice_iter(&cert_pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| {
            TlsError(format!(
                "the TLS certificate {}: not valid PEM: {e}",
                cert_path.display()
            ))
        })?;
    let Some(leaf) = certs.first() else {
        return Err(TlsError(format!(
            "the TLS certificate {} holds no certificate (expected PEM `BEGIN CERTIFICATE`)",
            cert_path.display()
        )));
    };
    let fingerprint = hex(&Sha256::digest(leaf.as_ref()));
    // The parser's error is not quoted: it might show a piece of the key.
    let key = PrivateKeyDer::from_pem_slice(&key_pem).map_err(|_| {
        TlsError(format!(
            "the TLS key {}: no usable private key (PKCS#8, PKCS#1 or SEC1 PEM)",
            key_path.display()
        ))
    })?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| TlsError(format!("TLS protocol versions: {e}")))?
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .map_err(|e| {
            TlsError(format!(
                "the TLS certificate {} and key {}: {e}",
                cert_path.display(),
                key_path.display()
            ))
        })?;
    // HTTP/1.1 only, as the server speaks.
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Loaded {
        config: Arc::new(config),
        fingerprint,
    })
}

fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write;
    bytes.iter().fold(String::new(), |mut s, b| {
        let _ = write!(s, "{b:02x}");
        s
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_and_empty_files_are_refused_with_their_names() {
        let dir = std::env::temp_dir().join(format!("mcp-tasks-tls-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let empty = dir.join("empty.pem");
        std::fs::write(&empty, "").unwrap();
        let e = TlsFiles::load(dir.join("nope.pem"), &empty).unwrap_err();
        assert!(e.to_string().contains("nope.pem"), "{e}");
        let e = TlsFiles::load(&empty, &empty).unwrap_err();
        assert!(e.to_string().contains("holds no certificate"), "{e}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
