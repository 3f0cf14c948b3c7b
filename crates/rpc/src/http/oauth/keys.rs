//! The signing keys of one issuer: found through authorization server metadata (RFC 8414)
//! or OpenID Connect discovery, or at a configured JWKS URL; cached, refetched on an
//! unknown key id at most once per interval, and kept while the issuer is unreachable.

use std::sync::Arc;
use std::time::{Duration, Instant};

use jsonwebtoken::jwk::{AlgorithmParameters, EllipticCurve, Jwk, KeyAlgorithm, PublicKeyUse};
use jsonwebtoken::{Algorithm, DecodingKey};
use parking_lot::Mutex;
use reqwest::Url;

/// Largest metadata or JWKS document read.
const MAX_DOCUMENT: usize = 1 << 20;

/// One usable verification key.
pub(super) struct Key {
    pub(super) kid: Option<String>,
    /// The one algorithm the key may verify (from its type and curve, and its `alg` if
    /// the JWK names one).
    pub(super) alg: Algorithm,
    pub(super) key: DecodingKey,
}

/// What a key lookup found.
pub(super) enum Lookup {
    /// Keys that may verify the token (one with a `kid`; every compatible key without).
    Found(Vec<Arc<Key>>),
    /// The keys are known, and none fits (after at most one refetch per interval).
    Unknown,
    /// The issuer's keys were never fetched: the reason of the last failure.
    Unavailable(String),
}

#[derive(Default)]
struct State {
    /// `None` until a fetch succeeded.
    keys: Option<Arc<Vec<Arc<Key>>>>,
    /// The JWKS URL, once configured or discovered.
    jwks_url: Option<Url>,
    /// When a fetch was last started.
    last_attempt: Option<Instant>,
    /// Why the last fetch failed.
    last_error: Option<String>,
}

/// The keys of one issuer.
pub(super) struct IssuerKeys {
    issuer: String,
    http: reqwest::Client,
    interval: Duration,
    state: Mutex<State>,
    /// One fetch at a time; a request that waited for another's fetch uses its result.
    fetching: tokio::sync::Mutex<()>,
}

impl IssuerKeys {
    pub(super) fn new(
        issuer: String,
        jwks: Option<Url>,
        http: reqwest::Client,
        interval: Duration,
    ) -> Self {
        Self {
            issuer,
            http,
            interval,
            state: Mutex::new(State {
                jwks_url: jwks,
                ..State::default()
            }),
            fetching: tokio::sync::Mutex::new(()),
        }
    }

    pub(super) fn issuer(&self) -> &str {
        &self.issuer
    }

    fn pick(&self, kid: Option<&str>, alg: Algorithm) -> Option<Vec<Arc<Key>>> {
        let keys = self.state.lock().keys.clone()?;
        Some(
            keys.iter()
                .filter(|k| k.alg == alg && kid.is_none_or(|id| k.kid.as_deref() == Some(id)))
                .cloned()
                .collect(),
        )
    }

    /// The keys that may verify a token with header `kid` and `alg`.
    pub(super) async fn lookup(&self, kid: Option<&str>, alg: Algorithm) -> Lookup {
        if let Some(found) = self.pick(kid, alg).filter(|v| !v.is_empty()) {
            return Lookup::Found(found);
        }
        let _one = self.fetching.lock().await;
        // Another request may have fetched while this one waited.
        let cached = self.pick(kid, alg);
        if let Some(found) = cached.clone().filter(|v| !v.is_empty()) {
            return Lookup::Found(found);
        }
        let due = {
            let s = self.state.lock();
            s.last_attempt.is_none_or(|t| t.elapsed() >= self.interval)
        };
        if due {
            self.state.lock().last_attempt = Some(Instant::now());
            match self.fetch().await {
                Ok(keys) => {
                    tracing::debug!(issuer = %self.issuer, keys = keys.len(), "issuer keys fetched");
                    let mut s = self.state.lock();
                    s.keys = Some(Arc::new(keys));
                    s.last_error = None;
                }
                Err(e) => {
                    tracing::warn!(
                        issuer = %self.issuer,
                        error = %e,
                        cached = cached.is_some(),
                        retry_in = ?self.interval,
                        "could not fetch the issuer's signing keys"
                    );
                    self.state.lock().last_error = Some(e);
                }
            }
        }
        match self.pick(kid, alg) {
            Some(found) if !found.is_empty() => Lookup::Found(found),
            Some(_) => Lookup::Unknown,
            None => Lookup::Unavailable(
                self.state
                    .lock()
                    .last_error
                    .clone()
                    .unwrap_or_else(|| "the keys have not been fetched yet".to_owned()),
            ),
        }
    }

    async fn fetch(&self) -> Result<Vec<Arc<Key>>, String> {
        let known = self.state.lock().jwks_url.clone();
        let url = match known {
            Some(u) => u,
            None => {
                let u = self.discover().await?;
                self.state.lock().jwks_url = Some(u.clone());
                u
            }
        };
        let doc = self.get_json(&url).await?;
        let keys = parse_jwks(&doc).map_err(|e| format!("{url}: {e}"))?;
        if keys.is_empty() {
            return Err(format!("{url}: no usable RS256, ES256 or EdDSA key"));
        }
        Ok(keys)
    }

    /// The `jwks_uri` of the issuer's metadata, trying the well-known URLs in the order
    /// of MCP's authorization server metadata discovery.
    ///
    /// RFC 8414 §3.3: "The "issuer" value returned MUST be identical to the authorization
    /// server's issuer identifier value into which the well-known URI string was inserted
    /// to create the URL used to retrieve the metadata."
    async fn discover(&self) -> Result<Url, String> {
        let mut failures = Vec::new();
        for url in discovery_urls(&self.issuer)? {
            let doc = match self.get_json(&url).await {
                Ok(d) => d,
                Err(e) => {
                    failures.push(e);
                    continue;
                }
            };
            let issuer = doc.get("issuer").and_then(|v| v.as_str());
            if issuer != Some(self.issuer.as_str()) {
                failures.push(format!(
                    "{url}: its issuer {issuer:?} is not {:?}",
                    self.issuer
                ));
                continue;
            }
            let Some(jwks) = doc.get("jwks_uri").and_then(|v| v.as_str()) else {
                failures.push(format!("{url}: no jwks_uri"));
                continue;
            };
            return Url::parse(jwks).map_err(|e| format!("{url}: bad jwks_uri: {e}"));
        }
        Err(format!("discovery failed: {}", failures.join("; ")))
    }

    async fn get_json(&self, url: &Url) -> Result<serde_json::Value, String> {
        let r = self
            .http
            .get(url.clone())
            .header("accept", "application/json")
            .send()
            .await
            .map_err(|e| format!("{url}: {}", describe(&e)))?;
        if !r.status().is_success() {
            return Err(format!("{url}: HTTP {}", r.status().as_u16()));
        }
        if r.content_length().is_some_and(|n| n > MAX_DOCUMENT as u64) {
            return Err(format!("{url}: larger than {MAX_DOCUMENT} bytes"));
        }
        let body = r
            .bytes()
            .await
            .map_err(|e| format!("{url}: {}", describe(&e)))?;
        if body.len() > MAX_DOCUMENT {
            return Err(format!("{url}: larger than {MAX_DOCUMENT} bytes"));
        }
        serde_json::from_slice(&body).map_err(|e| format!("{url}: not JSON: {e}"))
    }
}

fn describe(e: &reqwest::Error) -> String {
    if e.is_timeout() {
        "timed out".into()
    } else if e.is_connect() {
        "could not connect".into()
    } else {
        e.to_string()
    }
}

/// The metadata URLs of `issuer`, in order.
///
/// MCP (authorization server metadata discovery): "For issuer URLs with path components
/// [...] clients MUST try endpoints in the following priority order: 1. OAuth 2.0
/// Authorization Server Metadata with path insertion [...] 2. OpenID Connect Discovery 1.0
/// with path insertion [...] 3. OpenID Connect Discovery 1.0 path appending"; without a
/// path, `/.well-known/oauth-authorization-server` then `/.well-known/openid-configuration`.
pub(super) fn discovery_urls(issuer: &str) -> Result<Vec<Url>, String> {
    let base = Url::parse(issuer).map_err(|e| format!("bad issuer URL {issuer:?}: {e}"))?;
    let path = base.path().trim_end_matches('/').to_owned();
    let at = |p: String| {
        let mut u = base.clone();
        u.set_path(&p);
        u.set_query(None);
        u
    };
    Ok(if path.is_empty() {
        vec![
            at("/.well-known/oauth-authorization-server".into()),
            at("/.well-known/openid-configuration".into()),
        ]
    } else {
        vec![
            at(format!("/.well-known/oauth-authorization-server{path}")),
            at(format!("/.well-known/openid-configuration{path}")),
            at(format!("{path}/.well-known/openid-configuration")),
        ]
    })
}

/// The verification keys of a JWKS document. Keys of other types, curves or algorithms,
/// and keys for encryption (`use: enc`), are skipped; symmetric (`oct`) keys never count.
pub(super) fn parse_jwks(doc: &serde_json::Value) -> Result<Vec<Arc<Key>>, String> {
    let Some(list) = doc.get("keys").and_then(|k| k.as_array()) else {
        return Err("not a JWK set (no `keys` array)".into());
    };
    let mut out = Vec::new();
    for raw in list {
        let Ok(jwk) = serde_json::from_value::<Jwk>(raw.clone()) else {
            continue;
        };
        if matches!(jwk.common.public_key_use, Some(ref u) if *u != PublicKeyUse::Signature) {
            continue;
        }
        let Some(alg) = key_algorithm(&jwk) else {
            continue;
        };
        let Ok(key) = DecodingKey::from_jwk(&jwk) else {
            continue;
        };
        out.push(Arc::new(Key {
            kid: jwk.common.key_id.clone(),
            alg,
            key,
        }));
    }
    Ok(out)
}

/// The accepted algorithm a JWK is for: RSA → RS256, P-256 → ES256, Ed25519 → EdDSA;
/// a JWK naming another `alg` is not used.
fn key_algorithm(jwk: &Jwk) -> Option<Algorithm> {
    let by_type = match &jwk.algorithm {
        AlgorithmParameters::RSA(_) => Algorithm::RS256,
        AlgorithmParameters::EllipticCurve(p) if p.curve == EllipticCurve::P256 => Algorithm::ES256,
        AlgorithmParameters::OctetKeyPair(p) if p.curve == EllipticCurve::Ed25519 => {
            Algorithm::EdDSA
        }
        _ => return None,
    };
    match jwk.common.key_algorithm {
        None => Some(by_type),
        Some(KeyAlgorithm::RS256) if by_type == Algorithm::RS256 => Some(by_type),
        Some(KeyAlgorithm::ES256) if by_type == Algorithm::ES256 => Some(by_type),
        Some(KeyAlgorithm::EdDSA) if by_type == Algorithm::EdDSA => Some(by_type),
        Some(_) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn discovery_order_follows_mcp() {
        let s = |v: Vec<Url>| v.iter().map(Url::to_string).collect::<Vec<_>>();
        assert_eq!(
            s(discovery_urls("https://auth.example.com").unwrap()),
            [
                "https://auth.example.com/.well-known/oauth-authorization-server",
                "https://auth.example.com/.well-known/openid-configuration"
            ]
        );
        assert_eq!(
            s(discovery_urls("https://auth.example.com/tenant1").unwrap()),
            [
                "https://auth.example.com/.well-known/oauth-authorization-server/tenant1",
                "https://auth.example.com/.well-known/openid-configuration/tenant1",
                "https://auth.example.com/tenant1/.well-known/openid-configuration"
            ]
        );
        assert!(discovery_urls("not a url").is_err());
    }

    #[test]
    fn only_asymmetric_signature_keys_are_kept() {
        let doc = serde_json::json!({"keys": [
            {"kty": "oct", "k": "c2VjcmV0", "kid": "hmac"},
            {"kty": "OKP", "crv": "Ed25519", "kid": "ed",
             "x": "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"},
            {"kty": "OKP", "crv": "Ed25519", "kid": "enc", "use": "enc",
             "x": "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"},
            {"kty": "OKP", "crv": "Ed25519", "kid": "wrong-alg", "alg": "RS256",
             "x": "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"},
            {"kty": "weird"}
        ]});
        let keys = parse_jwks(&doc).unwrap();
        assert_eq!(keys.len(), 1);
        assert_eq!(keys[0].kid.as_deref(), Some("ed"));
        assert_eq!(keys[0].alg, Algorithm::EdDSA);
        assert!(parse_jwks(&serde_json::json!({})).is_err());
    }
}
