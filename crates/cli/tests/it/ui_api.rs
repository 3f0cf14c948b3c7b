//! The dashboard's JSON API (`/ui/api/...`) and page (`/ui`): the bearer token of the
//! endpoint, a principal's own tasks only (a foreign task is not found, as `tasks/get`),
//! the administrator (`--admin-principal`) sees every task with its owner, cancel goes
//! through the engine, bounded pages and filters, the page's hardening headers, and no
//! dashboard on a non-loopback address without authentication.

use std::net::SocketAddr;

use serde_json::{Value, json};

use crate::http_common::{Client, Server, TOKENS_ENV, send};

const TOKENS: &str = "tok-alice alice;tok-bob bob;tok-root root";

async fn api(addr: SocketAddr, method: &str, path: &str, token: Option<&str>) -> (u16, Value) {
    let mut headers = Vec::new();
    if let Some(t) = token {
        headers.push(("Authorization".to_owned(), format!("Bearer {t}")));
    }
    let r = send(addr, method, &format!("/ui/api/{path}"), &headers, b"").await;
    let status = r.status;
    let body = r.bytes().await;
    let v = serde_json::from_slice(&body).unwrap_or_else(|e| {
        panic!(
            "{method} {path}: not JSON ({e}): {}",
            String::from_utf8_lossy(&body)
        )
    });
    (status, v)
}

fn ids(page: &Value) -> Vec<String> {
    page["tasks"]
        .as_array()
        .expect("tasks")
        .iter()
        .map(|t| t["taskId"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_principal_sees_and_cancels_only_its_own_tasks_and_the_admin_sees_all() {
    let server = Server::start_env(&["--admin-principal", "root"], &[(TOKENS_ENV, TOKENS)]);
    let addr = server.addr;
    let mut alice = Client::new(&server).with_token("tok-alice");
    alice.initialize().await;
    let mut bob = Client::new(&server).with_token("tok-bob");
    bob.initialize().await;
    let a_sleep = alice.start_task("sleep", json!({ "ms": 600_000 })).await;
    let a_echo = alice
        .start_task("progress", json!({ "steps": 1, "ms": 1 }))
        .await;
    alice.wait_status(&a_echo, "completed").await;
    let b_sleep = bob.start_task("sleep", json!({ "ms": 600_000 })).await;

    // No token, or an unknown one: 401, as on /mcp.
    assert_eq!(api(addr, "GET", "tasks", None).await.0, 401);
    assert_eq!(api(addr, "GET", "tasks", Some("nope")).await.0, 401);

    // Alice: her two tasks, newest first, counted by status; never Bob's; no owners.
    let (status, page) = api(addr, "GET", "tasks", Some("tok-alice")).await;
    assert_eq!(status, 200, "{page}");
    assert_eq!(ids(&page), vec![a_echo.clone(), a_sleep.clone()]);
    assert_eq!(page["principal"], "alice");
    assert_eq!(page["seesAll"], false);
    assert_eq!(page["counts"]["working"], 1);
    assert_eq!(page["counts"]["completed"], 1);
    assert_eq!(page["counts"]["cancelled"], 0);
    assert_eq!(page["tools"], json!(["progress", "sleep"]));
    assert!(page["tasks"][0].get("owner").is_none(), "{page}");
    assert_eq!(page["tasks"][1]["tool"], "sleep");
    assert!(page["tasks"][1]["pollInterval"].is_u64(), "{page}");

    // Bob's task does not exist for Alice: detail and cancel are 404, and it runs on.
    let (s, body) = api(addr, "GET", &format!("tasks/{b_sleep}"), Some("tok-alice")).await;
    assert_eq!(s, 404, "{body}");
    let (s, _) = api(
        addr,
        "POST",
        &format!("tasks/{b_sleep}/cancel"),
        Some("tok-alice"),
    )
    .await;
    assert_eq!(s, 404);
    assert_eq!(bob.task(&b_sleep).await["result"]["status"], "working");

    // Alice's detail: the request's arguments, the history, no outcome yet.
    let (s, d) = api(addr, "GET", &format!("tasks/{a_sleep}"), Some("tok-alice")).await;
    assert_eq!(s, 200, "{d}");
    assert_eq!(d["task"]["status"], "working");
    assert_eq!(d["request"]["name"], "sleep");
    assert_eq!(d["request"]["arguments"]["ms"], 600_000);
    assert_eq!(d["history"][0]["status"], "working");
    assert!(d["history"][0]["at"].is_string());
    assert_eq!(d["result"], Value::Null);
    assert_eq!(d["error"], Value::Null);
    let (_, done) = api(addr, "GET", &format!("tasks/{a_echo}"), Some("tok-alice")).await;
    assert_eq!(done["result"]["content"][0]["text"], "done 1", "{done}");
    let statuses: Vec<&str> = done["history"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["status"].as_str().unwrap())
        .collect();
    assert_eq!(statuses, vec!["working", "completed"]);

    // Filters and bounds.
    let (_, working) = api(addr, "GET", "tasks?status=working", Some("tok-alice")).await;
    assert_eq!(ids(&working), vec![a_sleep.clone()]);
    let (_, echo) = api(addr, "GET", "tasks?tool=progress", Some("tok-alice")).await;
    assert_eq!(ids(&echo), vec![a_echo.clone()]);
    let (_, one) = api(addr, "GET", "tasks?limit=1", Some("tok-alice")).await;
    assert_eq!(ids(&one), vec![a_echo.clone()]);
    assert_eq!(one["matching"], 2);
    for bad in [
        "tasks?status=done",
        "tasks?limit=0",
        "tasks?limit=501",
        "tasks?limit=x",
    ] {
        let (s, body) = api(addr, "GET", bad, Some("tok-alice")).await;
        assert_eq!(s, 400, "{bad}: {body}");
        assert!(body["error"]["message"].is_string(), "{body}");
    }
    assert_eq!(api(addr, "GET", "nothing", Some("tok-alice")).await.0, 404);
    assert_eq!(
        api(
            addr,
            "GET",
            &format!("tasks/{a_sleep}/cancel"),
            Some("tok-alice")
        )
        .await
        .0,
        405
    );

    // The administrator sees every task, with its owner.
    let (_, all) = api(addr, "GET", "tasks", Some("tok-root")).await;
    assert_eq!(all["seesAll"], true);
    assert_eq!(all["showsOwners"], true);
    assert_eq!(
        ids(&all),
        vec![b_sleep.clone(), a_echo.clone(), a_sleep.clone()]
    );
    assert_eq!(all["tasks"][0]["owner"], "bob");
    assert_eq!(all["tasks"][2]["owner"], "alice");
    let (s, d) = api(addr, "GET", &format!("tasks/{b_sleep}"), Some("tok-root")).await;
    assert_eq!((s, &d["task"]["owner"]), (200, &json!("bob")));

    // Cancel goes through the engine: cancelled for the owner's tasks/get too, with the
    // cancellation error as the outcome; a second cancel is refused.
    let (s, c) = api(
        addr,
        "POST",
        &format!("tasks/{a_sleep}/cancel"),
        Some("tok-alice"),
    )
    .await;
    assert_eq!(s, 200, "{c}");
    assert_eq!(c["task"]["status"], "cancelled");
    assert_eq!(alice.task(&a_sleep).await["result"]["status"], "cancelled");
    let (_, d) = api(addr, "GET", &format!("tasks/{a_sleep}"), Some("tok-alice")).await;
    assert_eq!(d["task"]["status"], "cancelled");
    assert_eq!(
        d["history"].as_array().unwrap().last().unwrap()["status"],
        "cancelled"
    );
    assert_eq!(d["error"]["code"], -32001, "{d}");
    let (s, _) = api(
        addr,
        "POST",
        &format!("tasks/{a_sleep}/cancel"),
        Some("tok-alice"),
    )
    .await;
    assert_eq!(s, 409);
    // Bob's task still runs (the admin did not cancel it).
    assert_eq!(bob.task(&b_sleep).await["result"]["status"], "working");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_page_is_embedded_hardened_and_behind_the_origin_check() {
    let server = Server::start_env(&[], &[(TOKENS_ENV, TOKENS)]);
    let page = send(server.addr, "GET", "/ui", &[], b"").await;
    assert_eq!(page.status, 200, "{page:?}");
    assert!(page.content_type().starts_with("text/html"), "{page:?}");
    let csp = page
        .header("content-security-policy")
        .unwrap_or("")
        .to_owned();
    assert!(csp.contains("default-src 'self'"), "{csp}");
    assert_eq!(page.header("cache-control"), Some("no-store"));
    let html = String::from_utf8(page.bytes().await).unwrap();
    assert!(html.contains("/ui/app.js"), "{html}");
    for file in ["/ui/app.js", "/ui/app.css", "/ui/"] {
        assert_eq!(
            send(server.addr, "GET", file, &[], b"").await.status,
            200,
            "{file}"
        );
    }
    assert_eq!(
        send(server.addr, "GET", "/ui/nope.js", &[], b"")
            .await
            .status,
        404
    );
    let foreign = vec![("Origin".to_owned(), "http://evil.example".to_owned())];
    assert_eq!(
        send(server.addr, "GET", "/ui", &foreign, b"").await.status,
        403
    );
    let headers = vec![
        ("Origin".to_owned(), "http://evil.example".to_owned()),
        ("Authorization".to_owned(), "Bearer tok-alice".to_owned()),
    ];
    assert_eq!(
        send(server.addr, "GET", "/ui/api/tasks", &headers, b"")
            .await
            .status,
        403
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_auth_on_loopback_every_task_is_shown_as_to_the_stdio_peer() {
    let server = Server::start(&[]);
    let mut one = Client::new(&server);
    one.initialize().await;
    let mut two = one.fresh();
    two.initialize().await;
    let t1 = one.start_task("sleep", json!({ "ms": 600_000 })).await;
    let t2 = two
        .start_task("progress", json!({ "steps": 1, "ms": 1 }))
        .await;
    let (s, page) = api(server.addr, "GET", "tasks", None).await;
    assert_eq!(s, 200, "{page}");
    assert_eq!(page["seesAll"], true);
    assert_eq!(page["principal"], Value::Null);
    assert_eq!(ids(&page), vec![t2, t1.clone()]);
    let (s, c) = api(server.addr, "POST", &format!("tasks/{t1}/cancel"), None).await;
    assert_eq!(s, 200, "{c}");
    assert_eq!(one.task(&t1).await["result"]["status"], "cancelled");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_dashboard_on_a_public_address_without_auth_nor_with_no_ui() {
    let server = Server::start(&["--listen", "0.0.0.0:0", "--allow-unauthenticated"]);
    let addr = SocketAddr::from(([127, 0, 0, 1], server.addr.port()));
    assert_eq!(send(addr, "GET", "/ui", &[], b"").await.status, 404);
    assert_eq!(send(addr, "GET", "/ui/app.js", &[], b"").await.status, 404);
    assert_eq!(
        send(addr, "GET", "/ui/api/tasks", &[], b"").await.status,
        404
    );
    drop(server);

    let server = Server::start_env(&["--no-ui"], &[(TOKENS_ENV, TOKENS)]);
    let auth = vec![("Authorization".to_owned(), "Bearer tok-alice".to_owned())];
    assert_eq!(send(server.addr, "GET", "/ui", &[], b"").await.status, 404);
    assert_eq!(
        send(server.addr, "GET", "/ui/api/tasks", &auth, b"")
            .await
            .status,
        404
    );

    // With authentication a public address serves it.
    let server = Server::start_env(&["--listen", "0.0.0.0:0"], &[(TOKENS_ENV, TOKENS)]);
    let addr = SocketAddr::from(([127, 0, 0, 1], server.addr.port()));
    assert_eq!(send(addr, "GET", "/ui", &[], b"").await.status, 200);
    assert_eq!(
        send(addr, "GET", "/ui/api/tasks", &auth, b"").await.status,
        200
    );
}
