//! OAuth 2.1 resource server (`--oauth-issuer`, `--resource-url`, `--oauth-scope`): JWT
//! access tokens checked against the keys of a test authorization server, RFC 9728
//! metadata, `WWW-Authenticate` challenges, key rotation, an issuer that is down, and
//! tasks bound to `{iss}#{sub}`.

use std::time::Duration;

use mcp_tasks_testkit::oauth::{self, Discovery, SigningKey, TestIssuer};
use serde_json::{Value, json};

use crate::http_common::send;
use crate::http_common::{Client, Server};

const WELL_KNOWN: &str = "/.well-known/oauth-protected-resource";

fn init_body() -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                   "clientInfo": {"name": "x", "version": "0"}}})
}

/// Status, `WWW-Authenticate` and body of an `initialize` with `token`.
async fn try_token(server: &Server, token: Option<&str>) -> (u16, String, Value) {
    let mut c = Client::new(server);
    c.token = token.map(str::to_owned);
    let r = c.post(&init_body()).await;
    let status = r.status;
    let challenge = r.header("www-authenticate").unwrap_or("").to_owned();
    (status, challenge, r.json().await)
}

async fn assert_refused(server: &Server, token: &str, why: &str, case: &str) {
    let (status, challenge, body) = try_token(server, Some(token)).await;
    assert_eq!(status, 401, "{case}: {body}");
    assert!(
        challenge.contains("error=\"invalid_token\""),
        "{case}: {challenge}"
    );
    assert!(
        challenge.contains(&format!(
            "resource_metadata=\"http://{}{WELL_KNOWN}/mcp\"",
            server.addr
        )),
        "{case}: {challenge}"
    );
    let msg = body["error"]["message"].as_str().unwrap_or("");
    assert!(msg.contains(why), "{case}: {msg}");
    assert!(!msg.contains(token) && !challenge.contains(token), "{case}");
}

async fn assert_accepted(server: &Server, token: &str, case: &str) {
    let (status, _, body) = try_token(server, Some(token)).await;
    assert_eq!(status, 200, "{case}: {body}");
}

#[tokio::test]
async fn access_tokens_are_validated() {
    let issuer = TestIssuer::start().await;
    let (ed, ec, rs) = (
        SigningKey::ed25519("ed"),
        SigningKey::p256("ec"),
        SigningKey::rsa("rs"),
    );
    issuer.set_keys(&[&ed, &ec, &rs]);
    let server = Server::start(&["--oauth-issuer", &issuer.issuer]);
    let aud = server.url();

    // Without a token: 401 pointing at the metadata, which is served without one.
    let (status, challenge, _) = try_token(&server, None).await;
    assert_eq!(status, 401);
    assert_eq!(
        challenge,
        format!(
            "Bearer resource_metadata=\"http://{}{WELL_KNOWN}/mcp\"",
            server.addr
        )
    );
    for path in [WELL_KNOWN.to_owned(), format!("{WELL_KNOWN}/mcp")] {
        let r = send(server.addr, "GET", &path, &[], b"").await;
        assert_eq!(r.status, 200, "{path}");
        assert!(r.is_json());
        let m: Value = serde_json::from_slice(&r.bytes().await).unwrap();
        assert_eq!(m["resource"], aud.as_str());
        assert_eq!(m["authorization_servers"], json!([issuer.issuer]));
        assert_eq!(m["bearer_methods_supported"], json!(["header"]));
        assert!(m.get("scopes_supported").is_none());
    }

    // Valid with each algorithm.
    for k in [&ed, &ec, &rs] {
        assert_accepted(
            &server,
            &k.sign(&issuer.claims(&aud, "alice")),
            k.kid.as_str(),
        )
        .await;
    }
    // A small clock skew is tolerated.
    let mut c = issuer.claims(&aud, "alice");
    c["exp"] = json!(oauth::now() - 20);
    assert_accepted(&server, &ed.sign(&c), "expired 20 s ago (leeway 60 s)").await;
    // An audience list naming us is fine.
    let mut c = issuer.claims(&aud, "alice");
    c["aud"] = json!(["https://other.example", aud]);
    assert_accepted(&server, &ed.sign(&c), "aud list").await;
    c["aud"] = json!(aud.replace("http://", "HTTP://"));
    assert_accepted(&server, &ed.sign(&c), "uppercase scheme").await;
    assert_eq!(issuer.jwks_fetches(), 1, "keys are cached");

    let mut cases: Vec<(&str, &str, String)> = Vec::new();
    let mut c = issuer.claims("http://127.0.0.1:1/mcp", "alice");
    cases.push(("wrong audience", "aud", ed.sign(&c)));
    c = issuer.claims(&aud, "alice");
    c["iss"] = json!("http://127.0.0.1:1");
    cases.push(("wrong issuer", "issuer", ed.sign(&c)));
    c = issuer.claims(&aud, "alice");
    c["exp"] = json!(oauth::now() - 120);
    cases.push(("expired", "expired", ec.sign(&c)));
    c = issuer.claims(&aud, "alice");
    c["nbf"] = json!(oauth::now() + 120);
    cases.push(("not yet valid", "not valid yet", rs.sign(&c)));
    // Same kid as a published key, another private key.
    let forged = SigningKey::ed25519("ed").sign(&issuer.claims(&aud, "alice"));
    cases.push(("bad signature", "signature", forged));
    let good = ed.sign(&issuer.claims(&aud, "alice"));
    let (head, rest) = good.split_once('.').unwrap();
    let (_, sig) = rest.split_once('.').unwrap();
    let other_claims = oauth::unsigned(&issuer.claims(&aud, "mallory"));
    let payload = other_claims.split('.').nth(1).unwrap();
    cases.push((
        "claims swapped under a valid signature",
        "signature",
        format!("{head}.{payload}.{sig}"),
    ));
    cases.push((
        "alg none",
        "algorithm",
        oauth::unsigned(&issuer.claims(&aud, "alice")),
    ));
    for k in [&ed, &ec, &rs] {
        cases.push((
            "HS256 keyed with the public key",
            "algorithm",
            oauth::hs256(
                &issuer.claims(&aud, "alice"),
                Some(&k.kid),
                &k.public_bytes(),
            ),
        ));
    }
    c = issuer.claims(&aud, "alice");
    c.as_object_mut().unwrap().remove("sub");
    cases.push(("no sub", "sub", ed.sign(&c)));
    c = issuer.claims(&aud, "alice");
    c.as_object_mut().unwrap().remove("aud");
    cases.push(("no aud", "aud", ed.sign(&c)));
    cases.push(("not a JWT", "not a JWT", "opaque-token".to_owned()));
    for (case, why, token) in &cases {
        assert_refused(&server, token, why, case).await;
    }
    assert!(!server.stderr().contains(&good));
}

#[tokio::test]
async fn an_unknown_key_is_refetched_once_per_interval() {
    let issuer = TestIssuer::start().await;
    let old = SigningKey::ed25519("k1");
    issuer.set_keys(&[&old]);
    let server = Server::start(&[
        "--oauth-issuer",
        &issuer.issuer,
        "--oauth-refetch-interval",
        "1s",
    ]);
    let aud = server.url();
    assert_accepted(&server, &old.sign(&issuer.claims(&aud, "a")), "k1").await;
    assert_eq!(issuer.jwks_fetches(), 1);
    tokio::time::sleep(Duration::from_millis(1100)).await;

    // An unknown kid: exactly one refetch, then refused; again at once: no fetch.
    let new = SigningKey::p256("k2");
    let t = new.sign(&issuer.claims(&aud, "a"));
    assert_refused(&server, &t, "signing key", "unknown kid").await;
    assert_eq!(issuer.jwks_fetches(), 2);
    for _ in 0..3 {
        assert_refused(&server, &t, "signing key", "unknown kid again").await;
    }
    assert_eq!(issuer.jwks_fetches(), 2, "at most one refetch per interval");

    // The issuer rotates: the new key is found by the next refetch; the cache keeps serving.
    issuer.set_keys(&[&old, &new]);
    assert_refused(&server, &t, "signing key", "within the interval").await;
    tokio::time::sleep(Duration::from_millis(1100)).await;
    assert_accepted(&server, &t, "rotated key").await;
    assert_eq!(issuer.jwks_fetches(), 3);
    assert_accepted(&server, &old.sign(&issuer.claims(&aud, "a")), "k1 still").await;
    assert_eq!(issuer.jwks_fetches(), 3);
    assert_eq!(issuer.metadata_fetches(), 1, "discovery is done once");
}

#[tokio::test]
async fn an_issuer_that_is_down() {
    // Cached keys go on working while the issuer is down.
    let issuer = TestIssuer::start().await;
    let key = SigningKey::ed25519("k");
    issuer.set_keys(&[&key]);
    let server = Server::start(&[
        "--oauth-issuer",
        &issuer.issuer,
        "--oauth-refetch-interval",
        "1s",
    ]);
    let aud = server.url();
    assert_accepted(&server, &key.sign(&issuer.claims(&aud, "a")), "up").await;
    issuer.set_down(true);
    tokio::time::sleep(Duration::from_millis(1100)).await;
    assert_accepted(
        &server,
        &key.sign(&issuer.claims(&aud, "b")),
        "down, cached",
    )
    .await;
    let unknown = SigningKey::ed25519("other").sign(&issuer.claims(&aud, "a"));
    assert_refused(&server, &unknown, "signing key", "down, unknown kid").await;
    drop(server);

    // A cold start with the issuer down refuses clearly, and tries again later.
    let addr = oauth::dead_address();
    let iss = format!("http://{addr}");
    let server = Server::start(&["--oauth-issuer", &iss, "--oauth-refetch-interval", "1s"]);
    let aud = server.url();
    let t = key.sign(&oauth::claims(&iss, &aud, "a"));
    assert_refused(&server, &t, "unavailable", "cold start, issuer down").await;
    // The warning reaches us through the child's stderr pipe: wait for it.
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while !server
        .stderr()
        .contains("could not fetch the issuer's signing keys")
    {
        assert!(
            std::time::Instant::now() < deadline,
            "no warning: {}",
            server.stderr()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let listener = tokio::net::TcpListener::bind(addr).await.unwrap();
    let issuer = TestIssuer::on(listener, Discovery::OpenId);
    issuer.set_keys(&[&key]);
    assert_refused(&server, &t, "unavailable", "within the interval").await;
    assert_eq!(issuer.metadata_fetches(), 0);
    tokio::time::sleep(Duration::from_millis(1100)).await;
    assert_accepted(&server, &t, "issuer back (OpenID discovery)").await;
    assert_eq!(issuer.metadata_fetches(), 1);
}

#[tokio::test]
async fn a_required_scope() {
    let issuer = TestIssuer::start().await;
    let key = SigningKey::ed25519("k");
    issuer.set_keys(&[&key]);
    let server = Server::start(&["--oauth-issuer", &issuer.issuer, "--oauth-scope", "tasks"]);
    let aud = server.url();
    let meta = format!(
        "resource_metadata=\"http://{}{WELL_KNOWN}/mcp\"",
        server.addr
    );

    let (status, challenge, _) = try_token(&server, None).await;
    assert_eq!(status, 401);
    assert_eq!(challenge, format!("Bearer scope=\"tasks\", {meta}"));

    let mut c = issuer.claims(&aud, "a");
    c["scope"] = json!("read write");
    let (status, challenge, body) = try_token(&server, Some(&key.sign(&c))).await;
    assert_eq!(status, 403, "{body}");
    assert_eq!(
        challenge,
        format!("Bearer error=\"insufficient_scope\", scope=\"tasks\", {meta}")
    );
    c["scope"] = json!("read tasks");
    assert_accepted(&server, &key.sign(&c), "scope granted").await;
    c.as_object_mut().unwrap().remove("scope");
    c["scp"] = json!(["tasks"]);
    assert_accepted(&server, &key.sign(&c), "scp list").await;

    let r = send(server.addr, "GET", WELL_KNOWN, &[], b"").await;
    let m: Value = serde_json::from_slice(&r.bytes().await).unwrap();
    assert_eq!(m["scopes_supported"], json!(["tasks"]));
}

fn ids(list: &Value) -> Vec<String> {
    list["result"]["tasks"]
        .as_array()
        .unwrap_or_else(|| panic!("{list}"))
        .iter()
        .map(|t| t["taskId"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test]
async fn principals_are_issuer_and_subject() {
    let issuer = TestIssuer::start().await;
    let key = SigningKey::ed25519("k");
    issuer.set_keys(&[&key]);
    let tokens = std::env::temp_dir().join(format!(
        "mcp-tasks-http-oauth-{}.tokens",
        std::process::id()
    ));
    std::fs::write(&tokens, "tok-static carol\n").unwrap();
    // Static tokens and OAuth both on.
    let server = Server::start(&[
        "--oauth-issuer",
        &issuer.issuer,
        "--auth-tokens",
        tokens.to_str().unwrap(),
    ]);
    let aud = server.url();
    let mut alice = Client::new(&server).with_token(&key.sign(&issuer.claims(&aud, "alice")));
    let mut bob = Client::new(&server).with_token(&key.sign(&issuer.claims(&aud, "bob")));
    let mut carol = Client::new(&server).with_token("tok-static");
    for c in [&mut alice, &mut bob, &mut carol] {
        c.initialize().await;
    }
    let ta = alice.start_task("sleep", json!({"ms": 60_000})).await;
    let tb = bob.start_task("sleep", json!({"ms": 60_000})).await;
    let tc = carol.start_task("sleep", json!({"ms": 60_000})).await;
    assert_eq!(
        ids(&alice.rpc("tasks/list", json!({})).await),
        [ta.as_str()]
    );
    assert_eq!(ids(&bob.rpc("tasks/list", json!({})).await), [tb.as_str()]);
    assert_eq!(
        ids(&carol.rpc("tasks/list", json!({})).await),
        [tc.as_str()]
    );

    // Another subject's task is an unknown task, exactly like one that never existed.
    let ghost = "3f2a1c9e-0000-4000-8000-000000000000";
    for method in ["tasks/get", "tasks/result", "tasks/cancel"] {
        let foreign = bob.rpc(method, json!({"taskId": ta})).await;
        let missing = bob.rpc(method, json!({"taskId": ghost})).await;
        let strip = |v: &Value, id: &str| v["error"].to_string().replace(id, "<id>");
        assert!(foreign.get("error").is_some(), "{method}: {foreign}");
        assert_eq!(strip(&foreign, &ta), strip(&missing, ghost), "{method}");
    }
    assert_eq!(alice.task(&ta).await["result"]["status"], "working");
    // A new token of the same subject is the same principal.
    let mut alice2 = Client::new(&server).with_token(&key.sign(&issuer.claims(&aud, "alice")));
    alice2.initialize().await;
    assert_eq!(
        ids(&alice2.rpc("tasks/list", json!({})).await),
        [ta.as_str()]
    );

    for (c, t) in [(&mut alice, &ta), (&mut bob, &tb), (&mut carol, &tc)] {
        c.rpc("tasks/cancel", json!({"taskId": t})).await;
    }
    let _ = std::fs::remove_file(tokens);
}

#[tokio::test]
async fn a_resource_url_is_required_on_every_interface() {
    let err = Server::try_start(
        &[
            "--listen",
            "0.0.0.0:0",
            "--oauth-issuer",
            "http://127.0.0.1:1",
        ],
        &[],
    )
    .err()
    .expect("refuses to start");
    assert!(err.1.contains("--resource-url"), "{}", err.1);
    let err = Server::try_start(&["--oauth-issuer", "not a url"], &[])
        .err()
        .expect("refuses to start");
    assert!(err.1.contains("--oauth-issuer"), "{}", err.1);
}

/// The tasks `token`'s principal sees at `url` (`mcp-tasks tasks list`).
fn tasks_at(url: &str, token: &str) -> Vec<Value> {
    crate::gateway_common::cli_json(&[
        "tasks",
        "list",
        "--url",
        url,
        "--auth-token",
        token,
        "--json",
    ])
    .to_string()
    .matches("\"working\"")
    .map(|_| Value::Null)
    .collect()
}

/// MCP: "The MCP server **MUST NOT** pass through the token it received from the MCP
/// client." A gateway served over HTTP with OAuth: the upstream would accept the
/// client's token too (as another principal), yet the upstream task belongs to the
/// gateway's own credential (`--upstream-header`).
#[tokio::test]
async fn a_gateway_never_passes_the_client_token_upstream() {
    let issuer = TestIssuer::start().await;
    let key = SigningKey::ed25519("k");
    issuer.set_keys(&[&key]);
    // The gateway's resource URI must be known before the token is minted: reserve a port.
    let addr = oauth::dead_address();
    let aud = format!("http://{addr}/mcp");
    let client_token = key.sign(&issuer.claims(&aud, "alice"));
    let up = crate::gateway_common::HttpUpstream::start_with_tokens(
        &[],
        &format!("tok-gw gateway;{client_token} client-at-upstream"),
    );
    let gw = Server::start(&[
        "--listen",
        &addr.to_string(),
        "--oauth-issuer",
        &issuer.issuer,
        "--upstream-url",
        up.url.as_str(),
        "--upstream-header",
        "Authorization: Bearer tok-gw",
    ]);
    let mut alice = Client::new(&gw).with_token(&client_token);
    alice.initialize().await;
    let id = alice.start_task("sleep", json!({"ms": 60_000})).await;
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while tasks_at(&up.url, "tok-gw").is_empty() {
        assert!(std::time::Instant::now() < deadline, "no upstream task");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(tasks_at(&up.url, &client_token).is_empty());
    alice.rpc("tasks/cancel", json!({"taskId": id})).await;
}
