//! Bearer authentication (`--auth-tokens FILE` and `MCP_TASKS_AUTH_TOKENS`): 401 with
//! `WWW-Authenticate` without a valid token; tasks bound to their principal across its
//! sessions, another principal's task looking exactly like a missing one.

use crate::http_common;

use http_common::{Client, Server, TOKENS_ENV};
use serde_json::{Value, json};

fn tokens_file(name: &str, text: &str) -> std::path::PathBuf {
    let path = std::env::temp_dir().join(format!(
        "mcp-tasks-http-auth-{}-{name}.tokens",
        std::process::id()
    ));
    std::fs::write(&path, text).unwrap();
    path
}

fn start() -> (Server, std::path::PathBuf) {
    let path = tokens_file(
        "main",
        "# TOKEN PRINCIPAL\ntok-alice alice\n\ntok-bob   bob\n",
    );
    let server = Server::start_env(
        &["--auth-tokens", path.to_str().unwrap()],
        &[(TOKENS_ENV, "tok-carol carol;tok-alice-2 alice")],
    );
    (server, path)
}

#[tokio::test]
async fn requests_without_a_valid_token_get_401() {
    let (server, path) = start();
    let anonymous = Client::new(&server);
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "x", "version": "0"}}});
    let r = anonymous.post(&init).await;
    assert_eq!(r.status, 401);
    let challenge = r.header("www-authenticate").unwrap().to_owned();
    assert!(challenge.starts_with("Bearer"), "{challenge}");
    let body = r.json().await;
    assert!(body.get("id").is_none());

    let wrong = Client::new(&server).with_token("tok-alicf");
    let r = wrong.post(&init).await;
    assert_eq!(r.status, 401);
    assert!(
        r.header("www-authenticate")
            .unwrap()
            .contains("invalid_token")
    );
    let r = anonymous
        .post_with(
            &[("Authorization", "Basic dG9rLWFsaWNlOg==")],
            init.to_string().as_bytes(),
        )
        .await;
    assert_eq!(r.status, 401);

    // Tokens from the file and from the environment both work.
    for t in ["tok-alice", "tok-bob", "tok-carol", "tok-alice-2"] {
        let mut c = Client::new(&server).with_token(t);
        let caps = c.initialize().await["capabilities"].clone();
        assert!(
            caps["tasks"]["list"].is_object(),
            "tasks.list is declared with authentication: {caps}"
        );
        // GET and DELETE need the token too.
        let mut bare = c.clone();
        bare.token = None;
        assert_eq!(bare.get(None).await.status, 401);
        assert_eq!(bare.delete().await.status, 401);
        assert_eq!(c.delete().await.status, 204);
    }
    let _ = std::fs::remove_file(path);
}

/// The error of `method` on `task`, with the task id blanked out.
async fn error_of(c: &mut Client, method: &str, task: &str) -> Value {
    let m = c.rpc(method, json!({"taskId": task})).await;
    let mut e = m
        .get("error")
        .unwrap_or_else(|| panic!("{method} on a foreign task succeeded: {m}"))
        .clone();
    let text = e.to_string().replace(task, "<id>");
    e = serde_json::from_str(&text).unwrap();
    e
}

#[tokio::test]
async fn tasks_belong_to_their_principal_across_sessions() {
    let (server, path) = start();
    let mut alice1 = Client::new(&server).with_token("tok-alice");
    alice1.initialize().await;
    let mut alice2 = Client::new(&server).with_token("tok-alice-2");
    alice2.initialize().await;
    let mut bob = Client::new(&server).with_token("tok-bob");
    bob.initialize().await;

    let t1 = alice1.start_task("sleep", json!({"ms": 60_000})).await;
    let t2 = alice2.start_task("sleep", json!({"ms": 60_000})).await;
    let tb = bob.start_task("sleep", json!({"ms": 60_000})).await;

    // Alice sees both her tasks from either session; Bob only his.
    let list: Vec<String> = alice1.rpc("tasks/list", json!({})).await["result"]["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["taskId"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(list.len(), 2, "{list:?}");
    assert!(list.contains(&t1) && list.contains(&t2));
    let bobs = bob.rpc("tasks/list", json!({})).await;
    assert_eq!(bobs["result"]["tasks"].as_array().unwrap().len(), 1);
    assert_eq!(bobs["result"]["tasks"][0]["taskId"], tb.as_str());
    alice2.task(&t1).await;

    // To Bob, Alice's task looks exactly like one that does not exist.
    let ghost = "3f2a1c9e-0000-4000-8000-000000000000";
    for method in ["tasks/get", "tasks/result", "tasks/cancel"] {
        let foreign = error_of(&mut bob, method, &t1).await;
        let missing = error_of(&mut bob, method, ghost).await;
        assert_eq!(foreign, missing, "{method}");
    }
    // And Bob's cancel did nothing.
    assert_eq!(alice1.task(&t1).await["result"]["status"], "working");

    // Alice's session cannot be used with Bob's token.
    let mut hijack = alice1.clone();
    hijack.token = Some("tok-bob".into());
    let r = hijack
        .post(&json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}))
        .await;
    assert_eq!(r.status, 404);

    for (c, t) in [(&mut alice1, &t1), (&mut alice2, &t2), (&mut bob, &tb)] {
        c.rpc("tasks/cancel", json!({"taskId": t})).await;
    }
    let _ = std::fs::remove_file(path);
}

#[tokio::test]
async fn a_bad_tokens_file_refuses_to_start() {
    let path = tokens_file("bad", "only-a-token\n");
    let err = Server::try_start(&["--auth-tokens", path.to_str().unwrap()], &[])
        .err()
        .expect("refuses to start");
    assert!(err.1.contains("TOKEN PRINCIPAL"), "{}", err.1);
    let _ = std::fs::remove_file(path);
    let err = Server::try_start(&["--auth-tokens", "/nonexistent/tokens"], &[])
        .err()
        .expect("refuses to start");
    assert!(err.1.contains("--auth-tokens"), "{}", err.1);
}
