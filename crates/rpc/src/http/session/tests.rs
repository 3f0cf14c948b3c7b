//! Unit tests of the session's routing and replay buffers.

use super::*;
use crate::http::stream::Next;
use crate::peer::{Handler, RequestContext, Route};
use async_trait::async_trait;
use mcp_tasks_proto::{ErrorObject, Request};
use serde_json::{Value, json};

/// `chatty` notifies on its own route before answering; `quiet` just answers.
struct Chatty;

#[async_trait]
impl Handler for Chatty {
    async fn handle_request(&self, cx: RequestContext, req: Request) -> Result<Value, ErrorObject> {
        let method = req.method;
        if method == "chatty" {
            cx.notify("notifications/message", Some(json!({"n": 1})))
                .await;
            cx.peer
                .notify("notifications/elsewhere", None, Route::Standalone)
                .await;
        }
        Ok(json!({"ok": method}))
    }
}

const LIMITS: SessionLimits = SessionLimits {
    buffer: BufferLimits {
        events: 100,
        bytes: 1 << 20,
    },
    total_bytes: 1 << 30,
    keep: Duration::from_secs(60),
    ack: Duration::from_secs(5),
    hold: Duration::from_secs(60),
    retry: Duration::from_secs(1),
};

fn session() -> Arc<HttpSession> {
    let (peer, outbound) = Peer::new(Arc::new(Chatty));
    HttpSession::start("s".into(), None, peer, outbound, LIMITS, Arc::default())
}

fn text(session: &HttpSession, stream: u64) -> String {
    let mut st = session.state.lock();
    match st.streams.get_mut(&stream).unwrap().next(0, usize::MAX) {
        Next::Events(b, _) => String::from_utf8(b.to_vec()).unwrap(),
        Next::Wait | Next::End => String::new(),
    }
}

async fn wait(session: &Arc<HttpSession>, id: i64, method: &str, upgrade: bool) -> First {
    let (tx, rx) = oneshot::channel();
    session.state.lock().pending.insert(
        id.into(),
        Pending::Waiting {
            tx,
            upgrade,
            tag: None,
        },
    );
    session
        .peer
        .receive(Message::request(id.into(), method, None))
        .await;
    tokio::time::timeout(Duration::from_secs(5), rx)
        .await
        .unwrap()
        .unwrap()
}

/// Sends request `id` of `method` and checks that it is answered with a plain JSON
/// response (no stream), `{"ok": method}`.
async fn expect_response(session: &Arc<HttpSession>, id: i64, method: &str, upgrade: bool) {
    let First::Response(m) = wait(session, id, method, upgrade).await else {
        panic!("expected the response")
    };
    assert_eq!(m, Message::reply(id.into(), Ok(json!({"ok": method}))));
}

#[tokio::test]
async fn a_message_before_the_response_upgrades_to_a_stream() {
    let s = session();
    let First::Upgraded(n) = wait(&s, 1, "chatty", true).await else {
        panic!("expected an upgrade")
    };
    // Wait for the response to land on the stream.
    for _ in 0..100 {
        if s.state.lock().streams[&n].is_finished() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let t = text(&s, n);
    assert!(t.starts_with(&format!("id: {n}-0\ndata:\n\n")), "{t}");
    assert!(t.contains("notifications/message"), "{t}");
    assert!(t.contains(r#""ok":"chatty""#), "{t}");
    assert!(!t.contains("elsewhere"), "{t}");
    assert!(text(&s, STANDALONE).contains("notifications/elsewhere"));
    assert!(s.state.lock().pending.is_empty());
}

#[tokio::test]
async fn json_only_requests_send_other_messages_to_the_standalone_stream() {
    let s = session();
    expect_response(&s, 2, "chatty", false).await;
    let t = text(&s, STANDALONE);
    assert!(t.contains("notifications/message"), "{t}");
    assert!(t.contains("notifications/elsewhere"), "{t}");
    assert_eq!(s.state.lock().streams.len(), 1);
}

#[tokio::test]
async fn a_response_first_stays_json() {
    let s = session();
    expect_response(&s, 3, "quiet", true).await;
    assert_eq!(s.state.lock().streams.len(), 1);
}

/// The replay accounting: every held byte counted for the session and the server;
/// delivered events go when the session's bound is exceeded; an event larger than the
/// bound is delivered once and never kept; a stream read to its end goes at the next
/// request; ending the session gives every byte back.
#[tokio::test]
async fn replay_bytes_are_counted_and_bounded() {
    const BOUND: usize = 8 * 1024;
    let limits = SessionLimits {
        buffer: BufferLimits {
            events: 100,
            bytes: BOUND,
        },
        ..LIMITS
    };
    let global = Arc::new(AtomicUsize::new(0));
    let (peer, outbound) = Peer::new(Arc::new(Chatty));
    let s = HttpSession::start(
        "s".into(),
        None,
        peer,
        outbound,
        limits,
        Arc::clone(&global),
    );
    let meter = Arc::clone(&s.state.lock().meter);
    let held =
        |s: &HttpSession| -> usize { s.state.lock().streams.values().map(StreamBuf::bytes).sum() };
    let base = meter.session();
    assert_eq!(base, held(&s));
    assert_eq!(global.load(Ordering::Relaxed), base);

    // Three 2.5 KiB events on one request stream, 1 KiB on the standalone one.
    let n = {
        let mut st = s.state.lock();
        HttpSession::new_request_stream(&mut st, 1.into(), None)
    };
    let big = |k: usize| Message::notification("n", Some(json!({ "pad": "x".repeat(k) })));
    for _ in 0..3 {
        s.route(Outbound {
            message: big(2560),
            route: Route::Request(1.into()),
        });
    }
    s.route(Outbound {
        message: big(1024),
        route: Route::Standalone,
    });
    // Not yet delivered: kept although over the bound (they are the client's).
    assert!(meter.session() > BOUND);
    assert_eq!(meter.session(), held(&s));
    let Connect::Reader(mut r) = s.connect(n, None, CancellationToken::new()) else {
        panic!("stream exists")
    };
    let bytes = r.next_chunk().await.unwrap();
    assert_eq!(
        String::from_utf8_lossy(&bytes).matches("\"pad\"").count(),
        3
    );
    // Delivered: replay copies, cut back to the bound.
    assert!(meter.session() <= BOUND, "{}", meter.session());
    assert_eq!(meter.session(), held(&s));
    assert_eq!(global.load(Ordering::Relaxed), meter.session());

    // An event larger than the bound: delivered, then not kept.
    s.route(Outbound {
        message: big(4 * BOUND),
        route: Route::Request(1.into()),
    });
    assert!(meter.session() > 4 * BOUND);
    let bytes = r.next_chunk().await.unwrap();
    assert!(bytes.len() > 4 * BOUND);
    assert!(meter.session() <= BOUND, "{}", meter.session());

    // The response ends the stream; read to its end, it goes at the next request.
    s.route(Outbound {
        message: Message::reply(1.into(), Ok(json!({}))),
        route: Route::Request(1.into()),
    });
    assert!(r.next_chunk().await.is_some());
    assert!(r.next_chunk().await.is_none());
    drop(r);
    assert!(s.state.lock().streams.contains_key(&n));
    s.ack_completed();
    assert!(!s.state.lock().streams.contains_key(&n));
    assert_eq!(meter.session(), held(&s));

    // The server-wide bound applies too: with another session's bytes filling it, a
    // delivered event is not kept.
    global.fetch_add(LIMITS.total_bytes, Ordering::Relaxed);
    let m = {
        let mut st = s.state.lock();
        HttpSession::new_request_stream(&mut st, 2.into(), None)
    };
    s.route(Outbound {
        message: big(1024),
        route: Route::Request(2.into()),
    });
    let Connect::Reader(mut r) = s.connect(m, None, CancellationToken::new()) else {
        panic!("stream exists")
    };
    assert!(r.next_chunk().await.is_some());
    assert_eq!(s.state.lock().streams[&m].bytes(), 0);
    drop(r);
    global.fetch_sub(LIMITS.total_bytes, Ordering::Relaxed);

    s.end();
    assert_eq!(meter.session(), 0);
    assert_eq!(global.load(Ordering::Relaxed), 0);
}

#[tokio::test]
async fn ending_a_session_drops_its_streams_and_waiters() {
    let s = session();
    let (tx, rx) = oneshot::channel();
    s.state.lock().pending.insert(
        9.into(),
        Pending::Waiting {
            tx,
            upgrade: true,
            tag: None,
        },
    );
    s.end();
    assert!(rx.await.is_err());
    assert!(s.state.lock().streams.is_empty());
    assert!(s.peer.is_closed());
}

/// A copy of a shared session as replica `me`; the notes it relays.
fn shared_copy(me: &str) -> (Arc<HttpSession>, mpsc::Receiver<(String, Value)>) {
    let s = session();
    let (tx, rx) = mpsc::channel(1024);
    s.set_relay(listener::Relay {
        me: Arc::from(me),
        tx,
        dir: Arc::new(super::fake_directory::OneSession::default()),
    });
    (s, rx)
}

fn progress_of(task: &str, n: u64) -> Message {
    Message::notification(
        "notifications/progress",
        Some(json!({"progressToken": "p", "progress": n,
                    "_meta": {"io.modelcontextprotocol/related-task": {"taskId": task}}})),
    )
}

fn status_of(task: &str, status: &str) -> Message {
    Message::notification(
        "notifications/tasks/status",
        Some(json!({"taskId": task, "status": status})),
    )
}

/// Replica A (running the tasks) follows where the `tasks/result` of at most
/// `MAX_FOLLOWED` tasks is: past it the oldest is forgotten, and its notifications stay on
/// A's standalone stream; those of a followed task go to the replica serving its
/// `tasks/result`, once (moved, never copied), and its terminal status ends the following.
#[tokio::test]
async fn the_running_replica_follows_a_bounded_number_of_tasks_result_streams() {
    let (a, mut notes) = shared_copy("A");
    let n = listener::MAX_FOLLOWED + 6;
    for i in 0..n {
        let note = json!({"mcp-tasks.result": "B", "mcp-tasks.task": format!("t{i}")});
        a.noted(&listener::Note::parse(&note).unwrap());
    }
    assert_eq!(a.followed.lock().len(), listener::MAX_FOLLOWED);
    // The newest task: its messages go to B.
    let newest = format!("t{}", n - 1);
    for m in [progress_of(&newest, 1), status_of(&newest, "completed")] {
        a.route(Outbound {
            message: m,
            route: Route::Standalone,
        });
    }
    for expected in ["notifications/progress", "notifications/tasks/status"] {
        let (_, note) = notes.try_recv().expect("relayed to B");
        assert_eq!(note["mcp-tasks.to"], "B", "{note}");
        assert_eq!(note["mcp-tasks.task"], newest.as_str(), "{note}");
        assert_eq!(note["message"]["method"], expected, "{note}");
    }
    assert!(!text(&a, STANDALONE).contains(&newest));
    // Its terminal status ended the following; the oldest was forgotten: both stay here.
    for task in [newest.as_str(), "t0"] {
        a.route(Outbound {
            message: progress_of(task, 2),
            route: Route::Standalone,
        });
        assert!(notes.try_recv().is_err(), "{task} is not relayed");
    }
    let t = text(&a, STANDALONE);
    assert!(
        t.contains(&format!(r#""taskId":"{newest}""#)) && t.contains(r#""taskId":"t0""#),
        "{t}"
    );
}

/// Replica B serves `tasks/result` of task T running on A: at most `MAX_FOLLOWED` such
/// requests are announced; T's relayed progress goes on the request's stream, and its
/// response waits there until T's relayed terminal status is on the stream.
#[tokio::test]
async fn the_serving_replica_holds_the_response_for_the_relayed_terminal_status() {
    let (b, mut notes) = shared_copy("B");
    let n = listener::MAX_FOLLOWED + 3;
    let mut streams = Vec::new();
    for i in 0..n {
        let id = RequestId::Number(i64::try_from(i).unwrap() + 1);
        let stream = HttpSession::new_request_stream(&mut b.state.lock(), id.clone(), None);
        streams.push(stream);
        b.follow_task(&format!("t{i}"), &id);
    }
    assert_eq!(b.state.lock().follows.len(), listener::MAX_FOLLOWED);
    let mut announced = 0;
    while let Ok((_, note)) = notes.try_recv() {
        assert_eq!(note["mcp-tasks.result"], "B", "{note}");
        announced += 1;
    }
    assert_eq!(announced, listener::MAX_FOLLOWED);
    let relayed = |m: Message| {
        json!({"mcp-tasks.to": "B", "mcp-tasks.task": "t0",
                                      "message": serde_json::from_str::<Value>(&m.to_json()).unwrap()})
    };
    let note = relayed(progress_of("t0", 1));
    b.noted(&listener::Note::parse(&note).unwrap());
    b.route(Outbound {
        message: Message::reply(RequestId::Number(1), Ok(json!({"content": []}))),
        route: Route::Request(RequestId::Number(1)),
    });
    let t = text(&b, streams[0]);
    assert!(t.contains("notifications/progress"), "{t}");
    assert!(!t.contains(r#""content""#), "the response waits: {t}");
    let note = relayed(status_of("t0", "completed"));
    b.noted(&listener::Note::parse(&note).unwrap());
    let t = text(&b, streams[0]);
    let status = t.find("notifications/tasks/status").expect(&t);
    let response = t.find(r#""content""#).expect(&t);
    assert!(status < response, "{t}");
    assert!(b.state.lock().streams[&streams[0]].is_finished());
}

/// Replica C learns that B holds the GET while it routes a standalone message: the
/// messages kept before (passed on by the note) and the one routed meanwhile reach B in
/// the order C routed them. The routing holds the session's state while the note comes.
#[tokio::test]
async fn a_listener_note_keeps_the_order_of_the_standalone_messages() {
    let (c, mut notes) = shared_copy("C");
    c.route(Outbound {
        message: progress_of("t", 1),
        route: Route::Standalone,
    });
    let st = c.state.lock();
    let noting = {
        let c = Arc::clone(&c);
        std::thread::spawn(move || {
            let note = json!({"mcp-tasks.listener": "B"});
            c.noted(&listener::Note::parse(&note).unwrap());
        })
    };
    std::thread::sleep(Duration::from_millis(100));
    let mut st = st;
    c.to_standalone(&mut st.streams, &progress_of("t", 2));
    drop(st);
    noting.join().unwrap();
    for n in [1, 2] {
        let (_, note) = notes.try_recv().expect("passed to B");
        assert_eq!(note["mcp-tasks.to"], "B", "{note}");
        assert_eq!(note["message"]["params"]["progress"], n, "{note}");
    }
}
