//! Unit tests of a replica loading a copy of a session another replica started.

use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use mcp_tasks_proto::{ErrorObject, Message, Request};
use serde_json::{Value, json};
use tokio::sync::mpsc;

use super::directory::{Ended, SessionDirectory};
use super::fake_directory::OneSession;
use super::listener;
use crate::http::HttpServer;
use crate::http::config::{HttpConfig, SessionFactory};
use crate::peer::{Handler, Outbound, RequestContext, Route};

struct Quiet;

#[async_trait]
impl Handler for Quiet {
    async fn handle_request(&self, _: RequestContext, _: Request) -> Result<Value, ErrorObject> {
        Ok(Value::Null)
    }
}

struct Restoring;

impl SessionFactory for Restoring {
    fn create(&self, _: Option<&str>) -> Arc<dyn Handler> {
        Arc::new(Quiet)
    }
    fn restore(&self, _: Option<&str>, _: &Value) -> Option<Arc<dyn Handler>> {
        Some(Arc::new(Quiet))
    }
}

/// Replica C loads a copy of session "s" (its GET held by replica B) and asks which
/// replica holds the GET only once the copy is registered: the answer, which may come
/// back before the load returns, is applied to registered copies only, and a copy that
/// never learns it keeps the session's standalone messages (a task's progress) where
/// nobody reads them. Answered, the copy passes those messages to B.
///
/// The copy's registration is held back (the server's session table locked) while the
/// load runs: no question may go out meanwhile.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_loaded_copy_asks_for_the_get_holder_once_registered_and_follows_the_answer() {
    let dir = Arc::new(OneSession::default());
    let server = HttpServer::new(
        HttpConfig {
            sessions: Some(Arc::clone(&dir) as Arc<dyn SessionDirectory>),
            ..HttpConfig::default()
        },
        Restoring,
    );
    let shared = Arc::clone(&server.shared);
    let (tx, mut notes) = mpsc::channel(64);
    let relay = listener::Relay {
        me: Arc::from("C"),
        tx,
        dir: Arc::clone(&dir) as Arc<dyn SessionDirectory>,
    };
    assert!(shared.relay.set(relay).is_ok());
    let load = {
        let registering = shared.sessions.lock();
        let shared = Arc::clone(&shared);
        let load = tokio::spawn(async move { shared.load_shared("s", None).await.ok() });
        let start = Instant::now();
        while start.elapsed() < Duration::from_millis(300) {
            if let Ok((_, note)) = notes.try_recv() {
                panic!("asked before the copy is registered (the answer is dropped): {note}");
            }
            std::thread::sleep(Duration::from_millis(2));
        }
        drop(registering);
        load
    };
    let copy = load.await.unwrap().flatten().expect("the copy");
    let registered = shared.session("s").expect("registered");
    assert!(Arc::ptr_eq(&copy, &registered));
    let (session, ask) = tokio::time::timeout(Duration::from_secs(5), notes.recv())
        .await
        .expect("asked")
        .unwrap();
    assert_eq!(session, "s");
    assert!(
        matches!(listener::Note::parse(&ask), Some(listener::Note::Ask)),
        "{ask}"
    );
    // B's answer.
    dir.deliver(Ended::Relayed {
        session: "s".to_owned(),
        message: json!({"mcp-tasks.listener": "B"}),
    });
    copy.route(Outbound {
        message: Message::notification(
            "notifications/progress",
            Some(json!({"progressToken": "p", "progress": 1})),
        ),
        route: Route::Standalone,
    });
    let (_, note) = notes.try_recv().expect("passed to the GET holder");
    assert_eq!(note["mcp-tasks.to"], "B", "{note}");
    assert_eq!(
        note["message"]["method"], "notifications/progress",
        "{note}"
    );
}
