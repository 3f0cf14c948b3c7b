//! The OAuth 2.1 resource server (MCP 2025-11-25, `basic/authorization`): JWT access
//! tokens checked against the keys of configured issuers, and the protected resource
//! metadata (RFC 9728) that tells clients where to get them.
//!
//! MCP: "MCP servers **MUST** validate access tokens before processing the request,
//! ensuring the access token is issued specifically for the MCP server" and "**MUST**
//! reject tokens that do not include them in the audience claim".
//!
//! Crypto: `jsonwebtoken` with its `rust_crypto` backend (pure Rust RSA, P-256, Ed25519
//! verification), not the default `aws_lc_rs`, which builds a C library (and needs a C
//! toolchain) the default build of this workspace does not otherwise compile; its `use_pem`
//! default is off too, since keys come as JWKs.

mod keys;

use std::net::SocketAddr;
use std::sync::OnceLock;
use std::time::Duration;

use jsonwebtoken::errors::ErrorKind;
use jsonwebtoken::{Algorithm, Validation};
use reqwest::Url;
use serde_json::{Value, json};

use keys::{IssuerKeys, Lookup};

/// The only signature algorithms accepted. `none` and the HMAC family are never
/// accepted: an HMAC "signature" keyed with an issuer's public key proves nothing.
pub const ACCEPTED_ALGORITHMS: [Algorithm; 3] =
    [Algorithm::RS256, Algorithm::ES256, Algorithm::EdDSA];

/// Configuration of the OAuth resource server.
#[non_exhaustive]
#[derive(Debug, Clone)]
pub struct OAuthConfig {
    /// Accepted issuers (`iss`, compared exactly); their keys are found by discovery.
    pub issuers: Vec<String>,
    /// Our canonical resource URI (the `aud` tokens must contain). `None`: derived from
    /// the listening address and the endpoint path when serving starts.
    pub resource: Option<String>,
    /// The JWKS URL, instead of discovery (only with a single issuer).
    pub jwks: Option<String>,
    /// Scopes every request's token must carry (`scope` or `scp` claim).
    pub scopes: Vec<String>,
    /// Least time between two fetches of an issuer's keys (on an unknown `kid`, or after
    /// a failed fetch).
    pub refetch_interval: Duration,
    /// Time limit of one metadata or JWKS request.
    pub fetch_timeout: Duration,
    /// Clock skew allowed on `exp` and `nbf`.
    pub leeway: Duration,
}

impl OAuthConfig {
    /// Tokens of `issuers`; everything else at its default.
    pub fn new(issuers: impl IntoIterator<Item = impl Into<String>>) -> Self {
        Self {
            issuers: issuers.into_iter().map(Into::into).collect(),
            resource: None,
            jwks: None,
            scopes: Vec::new(),
            refetch_interval: Duration::from_secs(30),
            fetch_timeout: Duration::from_secs(5),
            leeway: Duration::from_secs(60),
        }
    }
}

/// Why a request is refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AuthFailure {
    /// No bearer token.
    Missing,
    /// The token is not valid here (the description says why; it never quotes the token).
    Invalid(String),
    /// The token's issuer keys could not be fetched yet.
    Unavailable(String),
    /// Valid, but without the required scopes.
    InsufficientScope,
}

/// The resource server: validates tokens, serves the metadata.
pub struct OAuth {
    issuers: Vec<IssuerKeys>,
    resource: OnceLock<String>,
    scopes: Vec<String>,
    leeway: u64,
}

impl std::fmt::Debug for OAuth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OAuth")
            .field(
                "issuers",
                &self
                    .issuers
                    .iter()
                    .map(IssuerKeys::issuer)
                    .collect::<Vec<_>>(),
            )
            .field("resource", &self.resource.get())
            .field("scopes", &self.scopes)
            .finish_non_exhaustive()
    }
}

fn check_url(what: &str, u: &str) -> Result<Url, String> {
    let url = Url::parse(u).map_err(|e| format!("{what} {u:?} is not a URL: {e}"))?;
    if !matches!(url.scheme(), "http" | "https") || url.host_str().is_none() {
        return Err(format!("{what} {u:?} is not an http(s) URL"));
    }
    if url.scheme() == "https" && !cfg!(feature = "http-client-tls") {
        return Err(format!(
            "{what} {u:?}: https:// needs TLS support, which this build lacks (build with the \
             `tls` feature of mcp-tasks, or `http-client-tls` of mcp-tasks-rpc)"
        ));
    }
    if url.fragment().is_some() {
        return Err(format!("{what} {u:?} must not have a fragment"));
    }
    Ok(url)
}

impl OAuth {
    /// The resource server of `config`.
    ///
    /// # Errors
    /// No issuer, a malformed URL, or a JWKS URL with several issuers.
    pub fn new(config: OAuthConfig) -> Result<Self, String> {
        if config.issuers.is_empty() {
            return Err("no OAuth issuer given".into());
        }
        let jwks = match &config.jwks {
            Some(_) if config.issuers.len() > 1 => {
                return Err(
                    "a JWKS URL can only be given with a single issuer (the others are discovered)"
                        .into(),
                );
            }
            Some(u) => Some(check_url("the JWKS URL", u)?),
            None => None,
        };
        #[cfg(feature = "http-client-tls")]
        crate::install_crypto_provider();
        let http = reqwest::Client::builder()
            .timeout(config.fetch_timeout)
            .connect_timeout(config.fetch_timeout)
            .redirect(reqwest::redirect::Policy::limited(3))
            .build()
            .map_err(|e| format!("could not build the HTTP client: {e}"))?;
        let mut issuers = Vec::new();
        for iss in &config.issuers {
            check_url("the issuer", iss)?;
            issuers.push(IssuerKeys::new(
                iss.clone(),
                jwks.clone(),
                http.clone(),
                config.refetch_interval,
            ));
        }
        let resource = OnceLock::new();
        if let Some(r) = &config.resource {
            let url = Url::parse(r).map_err(|e| format!("the resource URL {r:?}: {e}"))?;
            if !matches!(url.scheme(), "http" | "https") || url.fragment().is_some() {
                return Err(format!(
                    "the resource URL {r:?} must be http(s) without a fragment"
                ));
            }
            let _ = resource.set(r.clone());
        }
        let scopes = config
            .scopes
            .iter()
            .flat_map(|s| s.split_whitespace())
            .map(str::to_owned)
            .collect();
        Ok(Self {
            issuers,
            resource,
            scopes,
            leeway: config.leeway.as_secs(),
        })
    }

    /// Set the resource URI to `{scheme}://{addr}{path}` unless one was configured.
    pub fn default_resource(&self, scheme: &str, addr: SocketAddr, path: &str) {
        let _ = self.resource.set(format!("{scheme}://{addr}{path}"));
    }

    /// Our resource URI, once known.
    pub fn resource(&self) -> Option<&str> {
        self.resource.get().map(String::as_str)
    }

    /// The required scopes.
    pub fn scopes(&self) -> &[String] {
        &self.scopes
    }

    /// The URL of our protected resource metadata: RFC 9728 §3.1, the well-known path
    /// inserted between the host and the resource's path.
    pub fn metadata_url(&self) -> Option<String> {
        let r = Url::parse(self.resource()?).ok()?;
        let path = r.path().trim_end_matches('/');
        let mut u = r.clone();
        u.set_path(&format!("{WELL_KNOWN}{path}"));
        u.set_query(None);
        Some(u.to_string())
    }

    /// The paths the metadata is served at: the root form and the resource path's form
    /// (and the endpoint's, when the resource URI names another path, as behind a proxy).
    pub fn metadata_paths(&self, endpoint: &str) -> Vec<String> {
        let mut out = vec![WELL_KNOWN.to_owned()];
        let mut add = |p: &str| {
            let p = p.trim_end_matches('/');
            if !p.is_empty() {
                let full = format!("{WELL_KNOWN}{p}");
                if !out.contains(&full) {
                    out.push(full);
                }
            }
        };
        add(endpoint);
        if let Some(r) = self.resource().and_then(|r| Url::parse(r).ok()) {
            add(r.path());
        }
        out
    }

    /// The protected resource metadata document (RFC 9728 §2).
    ///
    /// MCP: "The Protected Resource Metadata document returned by the MCP server **MUST**
    /// include the `authorization_servers` field containing at least one authorization
    /// server."
    pub fn metadata(&self) -> Value {
        let mut doc = json!({
            "resource": self.resource(),
            "authorization_servers": self.issuers.iter().map(IssuerKeys::issuer).collect::<Vec<_>>(),
            "bearer_methods_supported": ["header"],
        });
        if !self.scopes.is_empty() {
            doc["scopes_supported"] = json!(self.scopes);
        }
        doc
    }

    /// The `WWW-Authenticate` value for `failure`.
    ///
    /// MCP: servers include "the resource metadata URL in the `WWW-Authenticate` HTTP
    /// header under `resource_metadata` when returning `401 Unauthorized` responses" and
    /// "**SHOULD** include a `scope` parameter"; for insufficient scope "`HTTP 403
    /// Forbidden`" with `error="insufficient_scope"`, the `scope` and `resource_metadata`.
    pub fn challenge(&self, failure: &AuthFailure) -> String {
        let mut params = Vec::new();
        match failure {
            AuthFailure::Missing => {}
            AuthFailure::Invalid(d) | AuthFailure::Unavailable(d) => {
                params.push("error=\"invalid_token\"".to_owned());
                params.push(format!("error_description=\"{}\"", quotable(d)));
            }
            AuthFailure::InsufficientScope => {
                params.push("error=\"insufficient_scope\"".to_owned());
            }
        }
        if !self.scopes.is_empty() {
            params.push(format!("scope=\"{}\"", quotable(&self.scopes.join(" "))));
        }
        if let Some(u) = self.metadata_url() {
            params.push(format!("resource_metadata=\"{}\"", quotable(&u)));
        }
        format!("Bearer {}", params.join(", "))
    }

    /// The principal (`{iss}#{sub}`) of a valid `token`.
    ///
    /// # Errors
    /// Why the token is refused.
    pub async fn authenticate(&self, token: &str) -> Result<String, AuthFailure> {
        let invalid = |d: &str| AuthFailure::Invalid(d.to_owned());
        let header = jsonwebtoken::decode_header(token).map_err(|_| match header_alg(token) {
            // `none` and other algorithms `jsonwebtoken` does not even name.
            Some(alg) => AuthFailure::Invalid(format!(
                "the algorithm {:?} is not accepted (RS256, ES256, EdDSA)",
                quotable(&alg)
            )),
            None => invalid("the token is not a JWT"),
        })?;
        if !ACCEPTED_ALGORITHMS.contains(&header.alg) {
            return Err(AuthFailure::Invalid(format!(
                "the algorithm {:?} is not accepted (RS256, ES256, EdDSA)",
                header.alg
            )));
        }
        // The issuer picks the keys; it is checked again (exactly) once the signature is.
        let unverified = jsonwebtoken::dangerous::insecure_decode::<Value>(token)
            .map_err(|_| invalid("the token's claims are not readable"))?;
        let iss = unverified
            .claims
            .get("iss")
            .and_then(Value::as_str)
            .ok_or_else(|| invalid("the token has no issuer (iss)"))?;
        let Some(issuer) = self.issuers.iter().find(|i| i.issuer() == iss) else {
            return Err(invalid("the token's issuer is not accepted here"));
        };
        let Some(resource) = self.resource() else {
            return Err(AuthFailure::Unavailable(
                "the resource URI of this server is not known yet".into(),
            ));
        };
        let keys = match issuer.lookup(header.kid.as_deref(), header.alg).await {
            Lookup::Found(k) => k,
            Lookup::Unknown => {
                return Err(invalid(
                    "the token's signing key is not among the issuer's keys",
                ));
            }
            Lookup::Unavailable(why) => {
                return Err(AuthFailure::Unavailable(format!(
                    "the issuer's signing keys are unavailable ({why}); try again later"
                )));
            }
        };
        let mut v = Validation::new(header.alg);
        v.leeway = self.leeway;
        v.validate_nbf = true;
        v.set_issuer(&[issuer.issuer()]);
        // `aud` is compared after the signature check, by `for_resource` (normalized URIs).
        v.validate_aud = false;
        v.set_required_spec_claims(&["exp", "iss", "aud", "sub"]);
        let mut last = ErrorKind::InvalidSignature;
        for k in keys {
            match jsonwebtoken::decode::<Value>(token, &k.key, &v) {
                Ok(data) if !for_resource(&data.claims, resource) => {
                    return Err(AuthFailure::Invalid(describe(&ErrorKind::InvalidAudience)));
                }
                Ok(data) => return self.admit(&data.claims),
                Err(e) => last = e.into_kind(),
            }
        }
        Err(AuthFailure::Invalid(describe(&last)))
    }

    /// Principal and scope of verified `claims`.
    fn admit(&self, claims: &Value) -> Result<String, AuthFailure> {
        let iss = claims.get("iss").and_then(Value::as_str);
        let sub = claims.get("sub").and_then(Value::as_str);
        let (Some(iss), Some(sub)) = (iss, sub) else {
            return Err(AuthFailure::Invalid(
                "the token's iss and sub must be strings".into(),
            ));
        };
        if sub.is_empty() {
            return Err(AuthFailure::Invalid("the token's sub is empty".into()));
        }
        let granted = granted_scopes(claims);
        if !self.scopes.iter().all(|s| granted.contains(&s.as_str())) {
            return Err(AuthFailure::InsufficientScope);
        }
        Ok(format!("{iss}#{sub}"))
    }
}

/// The `alg` of a JWS header, read without any other check.
fn header_alg(token: &str) -> Option<String> {
    use base64::Engine;
    let (head, _) = token.split_once('.')?;
    let raw = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(head.trim_end_matches('='))
        .ok()?;
    let v: Value = serde_json::from_slice(&raw).ok()?;
    let alg: String = v.get("alg")?.as_str()?.chars().take(20).collect();
    Some(alg)
}

const WELL_KNOWN: &str = "/.well-known/oauth-protected-resource";

/// Whether the token's `aud` (a string or a list) names `resource`.
///
/// MCP: servers "**MUST** reject tokens that do not include them in the audience claim";
/// and "While the canonical form uses lowercase scheme and host components,
/// implementations **SHOULD** accept uppercase scheme and host components". URIs are
/// compared after parsing (scheme and host lowercased, a default port dropped); anything
/// else must match exactly.
fn for_resource(claims: &Value, resource: &str) -> bool {
    let ours = Url::parse(resource).ok();
    let matches = |a: &str| {
        a == resource
            || ours
                .as_ref()
                .is_some_and(|o| Url::parse(a).is_ok_and(|u| u == *o))
    };
    match claims.get("aud") {
        Some(Value::String(a)) => matches(a),
        Some(Value::Array(list)) => list.iter().filter_map(Value::as_str).any(matches),
        _ => false,
    }
}

/// The scopes of a token: `scope` (RFC 9068: space-separated) or `scp` (a list or a
/// string, as some issuers send).
fn granted_scopes(claims: &Value) -> Vec<&str> {
    let mut out = Vec::new();
    for name in ["scope", "scp"] {
        match claims.get(name) {
            Some(Value::String(s)) => out.extend(s.split_whitespace()),
            Some(Value::Array(a)) => out.extend(a.iter().filter_map(Value::as_str)),
            _ => {}
        }
    }
    out
}

fn describe(kind: &ErrorKind) -> String {
    match kind {
        ErrorKind::ExpiredSignature => "the token has expired (exp)".into(),
        ErrorKind::ImmatureSignature => "the token is not valid yet (nbf)".into(),
        ErrorKind::InvalidAudience => "the token was not issued for this resource (aud)".into(),
        ErrorKind::InvalidIssuer => "the token's issuer is not accepted here".into(),
        ErrorKind::InvalidSignature => "the token's signature is not valid".into(),
        ErrorKind::MissingRequiredClaim(c) => format!("the token has no {c} claim"),
        ErrorKind::InvalidAlgorithm => "the token's algorithm does not fit its key".into(),
        _ => "the token is malformed".into(),
    }
}

/// `s` with the characters an auth-param quoted string cannot hold replaced.
fn quotable(s: &str) -> String {
    s.chars()
        .map(|c| match c {
            '"' | '\\' => '\'',
            c if c.is_control() => ' ',
            c => c,
        })
        .collect()
}

/// The fuzz entry of the token and key parsers (`crate::fuzz::jwt_jwks`): the first `\n`
/// splits `bytes` into a JWKS document and a token.
pub(crate) fn fuzz(bytes: &[u8]) {
    let text = String::from_utf8_lossy(bytes);
    let (doc, token) = text.split_once('\n').unwrap_or((&text, ""));
    if let Ok(doc) = serde_json::from_str::<Value>(doc) {
        if let Ok(found) = keys::parse_jwks(&doc) {
            for k in found {
                assert!(ACCEPTED_ALGORITHMS.contains(&k.alg), "{:?} kept", k.alg);
            }
        }
        let _ = for_resource(&doc, "http://127.0.0.1:8080/mcp");
        let _ = granted_scopes(&doc);
    }
    if let Some(alg) = header_alg(token) {
        assert!(alg.chars().count() <= 20);
    }
    if let Ok(h) = jsonwebtoken::decode_header(token) {
        let _ = ACCEPTED_ALGORITHMS.contains(&h.alg);
    }
    let _ = jsonwebtoken::dangerous::insecure_decode::<Value>(token);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn oauth(scopes: &[&str]) -> OAuth {
        let mut c = OAuthConfig::new(["http://auth.example.com"]);
        c.resource = Some("https://mcp.example.com/public/mcp".into());
        c.scopes = scopes.iter().map(|s| (*s).to_owned()).collect();
        OAuth::new(c).unwrap()
    }

    #[test]
    fn metadata_and_challenges() {
        let o = oauth(&["tasks:rw"]);
        let url = "https://mcp.example.com/.well-known/oauth-protected-resource/public/mcp";
        assert_eq!(o.metadata_url().as_deref(), Some(url));
        assert_eq!(
            o.metadata_paths("/mcp"),
            [
                WELL_KNOWN.to_owned(),
                format!("{WELL_KNOWN}/mcp"),
                format!("{WELL_KNOWN}/public/mcp")
            ]
        );
        let m = o.metadata();
        assert_eq!(m["resource"], "https://mcp.example.com/public/mcp");
        assert_eq!(
            m["authorization_servers"],
            json!(["http://auth.example.com"])
        );
        assert_eq!(m["bearer_methods_supported"], json!(["header"]));
        assert_eq!(m["scopes_supported"], json!(["tasks:rw"]));
        assert_eq!(
            o.challenge(&AuthFailure::Missing),
            format!("Bearer scope=\"tasks:rw\", resource_metadata=\"{url}\"")
        );
        assert_eq!(
            o.challenge(&AuthFailure::InsufficientScope),
            format!(
                "Bearer error=\"insufficient_scope\", scope=\"tasks:rw\", resource_metadata=\"{url}\""
            )
        );
        let c = o.challenge(&AuthFailure::Invalid("a \"quoted\" thing".into()));
        assert!(
            c.starts_with("Bearer error=\"invalid_token\", error_description=\"a 'quoted' thing\""),
            "{c}"
        );
        assert!(oauth(&[]).metadata().get("scopes_supported").is_none());
    }

    #[test]
    fn configuration_errors() {
        assert!(OAuth::new(OAuthConfig::new([""; 0])).is_err());
        assert!(OAuth::new(OAuthConfig::new(["nope"])).is_err());
        let https = OAuth::new(OAuthConfig::new(["https://auth.example.com"]));
        assert_eq!(
            https.is_ok(),
            cfg!(feature = "http-client-tls"),
            "{https:?}"
        );
        let mut c = OAuthConfig::new(["http://a.example", "http://b.example"]);
        c.jwks = Some("http://a.example/jwks".into());
        assert!(OAuth::new(c).is_err());
    }

    #[test]
    fn audience_names_our_resource() {
        let r = "https://mcp.example.com/mcp";
        for ok in [
            json!("https://mcp.example.com/mcp"),
            json!("HTTPS://MCP.Example.COM/mcp"),
            json!("https://mcp.example.com:443/mcp"),
            json!(["https://other.example", "https://mcp.example.com/mcp"]),
        ] {
            assert!(for_resource(&json!({ "aud": ok }), r), "{ok}");
        }
        for bad in [
            json!("https://mcp.example.com/MCP"),
            json!("https://mcp.example.com/mcp/"),
            json!("https://mcp.example.com:8443/mcp"),
            json!("http://mcp.example.com/mcp"),
            json!("https://mcp.example.com.evil/mcp"),
            json!(["https://other.example"]),
            json!([]),
            json!(7),
        ] {
            assert!(!for_resource(&json!({ "aud": bad }), r), "{bad}");
        }
        assert!(!for_resource(&json!({}), r));
    }

    #[test]
    fn scopes_from_either_claim() {
        let c = json!({"scope": "a b", "scp": ["c"]});
        assert_eq!(granted_scopes(&c), ["a", "b", "c"]);
        let o = oauth(&["a c"]);
        assert_eq!(o.scopes(), ["a", "c"]);
        assert_eq!(
            o.admit(&json!({"iss": "i", "sub": "s", "scope": "a"})),
            Err(AuthFailure::InsufficientScope)
        );
        assert_eq!(
            o.admit(&json!({"iss": "i", "sub": "s", "scope": "c a"})),
            Ok("i#s".to_owned())
        );
    }

    #[tokio::test]
    async fn refused_before_any_fetch() {
        let o = oauth(&[]);
        let err = |r: Result<String, AuthFailure>| match r {
            Err(AuthFailure::Invalid(d)) => d,
            other => panic!("{other:?}"),
        };
        assert_eq!(
            err(o.authenticate("not-a-jwt").await),
            "the token is not a JWT"
        );
        // {"alg":"none"} . {"iss":"https://auth.example.com"} . (no signature)
        let none = "eyJhbGciOiJub25lIn0.eyJpc3MiOiJodHRwczovL2F1dGguZXhhbXBsZS5jb20ifQ.";
        assert_eq!(
            err(o.authenticate(none).await),
            "the algorithm \"none\" is not accepted (RS256, ES256, EdDSA)"
        );
        // {"alg":"HS256","typ":"JWT"} . {"iss":"https://auth.example.com"} . x
        let hs = "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJpc3MiOiJodHRwczovL2F1dGguZXhhbXBsZS5jb20ifQ.eA";
        assert!(err(o.authenticate(hs).await).contains("HS256"));
    }
}
