//! A small OAuth authorization server for tests: RFC 8414 metadata (or only the OpenID
//! Connect form), a JWKS of keys generated in the test, and tokens signed with them.
//! It issues no token over HTTP: tests mint them with [`SigningKey::sign`].

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use axum::Router;
use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::Response;
use axum::routing::get;
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use jsonwebtoken::jwk::Jwk;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use parking_lot::Mutex;
use serde_json::{Value, json};

/// A private signing key and its public JWK.
#[derive(Clone)]
pub struct SigningKey {
    /// Its key id (`kid`).
    pub kid: String,
    /// The algorithm it signs with.
    pub alg: Algorithm,
    encoding: EncodingKey,
    /// The public key as a JWK (with `kid`, `alg` and `use: sig`).
    pub jwk: Value,
}

mcp_tasks_proto::debug_non_exhaustive!(SigningKey, |s| { kid: s.kid, alg: s.alg });

fn random32() -> [u8; 32] {
    let mut b = [0u8; 32];
    getrandom_rng::fill(&mut b).expect("system randomness");
    b
}

impl SigningKey {
    fn from_encoding(kid: &str, alg: Algorithm, encoding: EncodingKey) -> Self {
        let mut jwk = serde_json::to_value(
            Jwk::from_encoding_key(&encoding, alg).expect("a public JWK of a fresh key"),
        )
        .expect("a JWK is JSON");
        jwk["kid"] = json!(kid);
        jwk["use"] = json!("sig");
        Self {
            kid: kid.to_owned(),
            alg,
            encoding,
            jwk,
        }
    }

    /// A fresh Ed25519 key (EdDSA).
    pub fn ed25519(kid: &str) -> Self {
        // PKCS#8 v1 of an Ed25519 seed (RFC 8410): the fixed prefix, then the 32 bytes.
        let mut der = vec![
            0x30, 0x2e, 0x02, 0x01, 0x00, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x04, 0x22,
            0x04, 0x20,
        ];
        der.extend_from_slice(&random32());
        Self::from_encoding(kid, Algorithm::EdDSA, EncodingKey::from_ed_der(&der))
    }

    /// A fresh P-256 key (ES256).
    pub fn p256(kid: &str) -> Self {
        // PKCS#8 of a SEC1 ECPrivateKey (RFC 5915) without the optional public key; 32
        // random bytes are a valid scalar but with probability ~2^-32.
        let mut der = vec![
            0x30, 0x41, 0x02, 0x01, 0x00, 0x30, 0x13, 0x06, 0x07, 0x2a, 0x86, 0x48, 0xce, 0x3d,
            0x02, 0x01, 0x06, 0x08, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07, 0x04, 0x27,
            0x30, 0x25, 0x02, 0x01, 0x01, 0x04, 0x20,
        ];
        der.extend_from_slice(&random32());
        Self::from_encoding(kid, Algorithm::ES256, EncodingKey::from_ec_der(&der))
    }

    /// A fresh 2048-bit RSA key (RS256). Takes a moment: generate it once per test.
    pub fn rsa(kid: &str) -> Self {
        use rsa::pkcs1::EncodeRsaPrivateKey;
        let key = rsa::PrivateKey::new(&mut getrandom_rng::SysRng, 2048).expect("RSA key");
        let der = key.to_pkcs1_der().expect("PKCS#1 DER");
        Self::from_encoding(
            kid,
            Algorithm::RS256,
            EncodingKey::from_rsa_der(der.as_bytes()),
        )
    }

    /// A JWT of `claims` signed with this key, its `kid` in the header.
    pub fn sign(&self, claims: &Value) -> String {
        let mut h = Header::new(self.alg);
        h.kid = Some(self.kid.clone());
        jsonwebtoken::encode(&h, claims, &self.encoding).expect("signing")
    }

    /// The public key's bytes as the JWKS publishes them (`x`, or `n` for RSA), decoded:
    /// what an attacker would use as an HMAC secret.
    pub fn public_bytes(&self) -> Vec<u8> {
        let field = self.jwk.get("x").or_else(|| self.jwk.get("n"));
        URL_SAFE_NO_PAD
            .decode(field.and_then(Value::as_str).unwrap_or(""))
            .expect("base64url")
    }
}

/// An unsigned token (`alg: none`) of `claims`.
pub fn unsigned(claims: &Value) -> String {
    let h = URL_SAFE_NO_PAD.encode(br#"{"alg":"none","typ":"JWT"}"#);
    let c = URL_SAFE_NO_PAD.encode(claims.to_string());
    format!("{h}.{c}.")
}

/// A token of `claims` "signed" HS256 with `secret` (say a public key's bytes).
pub fn hs256(claims: &Value, kid: Option<&str>, secret: &[u8]) -> String {
    let mut h = Header::new(Algorithm::HS256);
    h.kid = kid.map(str::to_owned);
    jsonwebtoken::encode(
        &h,
        claims,
        &EncodingKey::from_secret(secret).expect("an HMAC key"),
    )
    .expect("signing")
}

/// Seconds since the epoch.
pub fn now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
}

/// Claims of an access token of `iss` for `aud` and `sub`, valid for 5 minutes.
pub fn claims(iss: &str, aud: &str, sub: &str) -> Value {
    let t = now();
    json!({"iss": iss, "aud": aud, "sub": sub, "iat": t, "nbf": t - 1, "exp": t + 300})
}

/// Which discovery document the test issuer serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Discovery {
    /// `/.well-known/oauth-authorization-server` (RFC 8414).
    OAuth,
    /// Only `/.well-known/openid-configuration`.
    OpenId,
}

#[derive(Default)]
struct IssuerState {
    keys: Mutex<Vec<Value>>,
    jwks_fetches: AtomicUsize,
    metadata_fetches: AtomicUsize,
    down: AtomicBool,
    issuer: Mutex<String>,
    discovery: Mutex<Option<Discovery>>,
}

/// A running test authorization server on 127.0.0.1. Stops when dropped.
pub struct TestIssuer {
    /// Its issuer identifier (`http://127.0.0.1:PORT`).
    pub issuer: String,
    /// Its address.
    pub addr: SocketAddr,
    state: Arc<IssuerState>,
    task: tokio::task::JoinHandle<()>,
}

mcp_tasks_proto::debug_non_exhaustive!(TestIssuer, |s| { issuer: s.issuer });

fn json_response(status: StatusCode, v: &Value) -> Response {
    let mut r = Response::new(Body::from(v.to_string()));
    *r.status_mut() = status;
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    r
}

fn unavailable() -> Response {
    json_response(
        StatusCode::SERVICE_UNAVAILABLE,
        &json!({"error": "temporarily_unavailable"}),
    )
}

async fn metadata(State(s): State<Arc<IssuerState>>, which: Discovery) -> Response {
    if s.down.load(Ordering::SeqCst) || *s.discovery.lock() != Some(which) {
        return if s.down.load(Ordering::SeqCst) {
            unavailable()
        } else {
            json_response(StatusCode::NOT_FOUND, &json!({"error": "not_found"}))
        };
    }
    s.metadata_fetches.fetch_add(1, Ordering::SeqCst);
    let iss = s.issuer.lock().clone();
    json_response(
        StatusCode::OK,
        &json!({
            "issuer": iss,
            "jwks_uri": format!("{iss}/jwks"),
            "authorization_endpoint": format!("{iss}/authorize"),
            "token_endpoint": format!("{iss}/token"),
            "response_types_supported": ["code"],
            "code_challenge_methods_supported": ["S256"],
        }),
    )
}

async fn jwks(State(s): State<Arc<IssuerState>>) -> Response {
    if s.down.load(Ordering::SeqCst) {
        return unavailable();
    }
    s.jwks_fetches.fetch_add(1, Ordering::SeqCst);
    let keys = s.keys.lock().clone();
    json_response(StatusCode::OK, &json!({ "keys": keys }))
}

impl TestIssuer {
    /// An issuer on a free loopback port serving RFC 8414 metadata.
    pub async fn start() -> Self {
        let l = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        Self::on(l, Discovery::OAuth)
    }

    /// An issuer serving `discovery` on `listener`.
    pub fn on(listener: tokio::net::TcpListener, discovery: Discovery) -> Self {
        let addr = listener.local_addr().expect("local address");
        let issuer = format!("http://{addr}");
        let state = Arc::new(IssuerState::default());
        *state.issuer.lock() = issuer.clone();
        *state.discovery.lock() = Some(discovery);
        let app = Router::new()
            .route(
                "/.well-known/oauth-authorization-server",
                get(|s| metadata(s, Discovery::OAuth)),
            )
            .route(
                "/.well-known/openid-configuration",
                get(|s| metadata(s, Discovery::OpenId)),
            )
            .route("/jwks", get(jwks))
            .with_state(Arc::clone(&state));
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Self {
            issuer,
            addr,
            state,
            task,
        }
    }

    /// Publish `key` in the JWKS.
    pub fn publish(&self, key: &SigningKey) {
        self.state.keys.lock().push(key.jwk.clone());
    }

    /// Publish exactly `keys`.
    pub fn set_keys(&self, keys: &[&SigningKey]) {
        *self.state.keys.lock() = keys.iter().map(|k| k.jwk.clone()).collect();
    }

    /// How many times the JWKS was fetched.
    pub fn jwks_fetches(&self) -> usize {
        self.state.jwks_fetches.load(Ordering::SeqCst)
    }

    /// How many times the metadata was fetched.
    pub fn metadata_fetches(&self) -> usize {
        self.state.metadata_fetches.load(Ordering::SeqCst)
    }

    /// Take the issuer down (every request gets 503) or bring it back.
    pub fn set_down(&self, down: bool) {
        self.state.down.store(down, Ordering::SeqCst);
    }

    /// Claims of a token of this issuer for `aud` and `sub`.
    pub fn claims(&self, aud: &str, sub: &str) -> Value {
        claims(&self.issuer, aud, sub)
    }
}

impl Drop for TestIssuer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// A loopback address nothing listens on (for an issuer that is down from the start).
pub fn dead_address() -> SocketAddr {
    let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    l.local_addr().expect("local address")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_sign_tokens_their_public_jwk_verifies() {
        for key in [
            SigningKey::ed25519("e"),
            SigningKey::p256("p"),
            SigningKey::rsa("r"),
        ] {
            let t = key.sign(&claims("https://i", "https://r", "s"));
            let jwk: Jwk = serde_json::from_value(key.jwk.clone()).unwrap();
            let dk = jsonwebtoken::DecodingKey::from_jwk(&jwk).unwrap();
            let mut v = jsonwebtoken::Validation::new(key.alg);
            v.set_audience(&["https://r"]);
            let d = jsonwebtoken::decode::<Value>(&t, &dk, &v).unwrap();
            assert_eq!(d.claims["sub"], "s");
            assert!(!key.public_bytes().is_empty());
        }
    }
}
