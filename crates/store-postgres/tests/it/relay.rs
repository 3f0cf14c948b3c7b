//! Relayed messages too large for a notification go through the table
//! `relayed_messages` (issue 17): they reach every listener intact, within the bounds (1
//! MiB per message, 16 MiB stored at once, 30 s), and a relay over a bound is refused
//! with a message saying which, never lost silently.

use std::time::Duration;

use mcp_tasks_store_postgres::{
    MAX_PENDING_REQUESTS_PER_SESSION, MAX_RELAYED_BYTES, MAX_RELAYED_MESSAGE_BYTES,
    MAX_RELAYED_OWNER_BYTES, MAX_RELAYED_TOTAL_BYTES, PENDING_REQUEST_TTL, PgStore, RELAYED_TTL,
    RelayError, RelayLimits, SessionEnded, SessionRow,
};

use crate::common::{TestDb, two_listening_directories};

/// A JSON message of exactly `len` bytes.
fn message(len: usize) -> String {
    let head = r#"{"x":""#;
    let fill = len - head.len() - 2;
    format!(r#"{head}{}"}}"#, "a".repeat(fill))
}

async fn rows(db: &TestDb) -> (i64, i64) {
    let c = db.client().await;
    let r = c
        .query_one(
            "SELECT count(*), coalesce(sum(octet_length(message)), 0)::bigint \
             FROM mcp_tasks.relayed_messages",
            &[],
        )
        .await
        .unwrap();
    (r.get(0), r.get(1))
}

#[test]
fn the_documented_defaults() {
    let d = RelayLimits::default();
    assert_eq!(d.max_message, 1024 * 1024);
    assert_eq!(d.max_total, 16 * 1024 * 1024);
    assert_eq!(d.max_per_owner, 4 * 1024 * 1024);
    assert_eq!(MAX_RELAYED_OWNER_BYTES, d.max_per_owner);
    assert_eq!(d.ttl, Duration::from_secs(30));
    assert_eq!(
        (
            MAX_RELAYED_MESSAGE_BYTES,
            MAX_RELAYED_TOTAL_BYTES,
            RELAYED_TTL
        ),
        (d.max_message, d.max_total, d.ttl)
    );
}

/// A 100 KB message and one of exactly 1 MiB reach the other store's listener intact
/// through the table; 1 MiB + 1 byte is refused naming the bound, and nothing is stored
/// for it.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn large_messages_go_through_the_table_up_to_the_per_message_bound() {
    let db = TestDb::new().await;
    let url = db.url("pool=2");
    let (a, _b, mut rx) = two_listening_directories(&url).await;
    for len in [MAX_RELAYED_BYTES + 1, 100_000, MAX_RELAYED_MESSAGE_BYTES] {
        let msg = message(len);
        a.relay("s1", &msg)
            .await
            .expect("relayed through the table");
        let got = tokio::time::timeout(Duration::from_secs(5), rx.recv())
            .await
            .expect("the large message arrives")
            .unwrap();
        assert_eq!(
            got,
            SessionEnded::Message {
                session: "s1".to_owned(),
                message: msg
            },
            "{len} bytes"
        );
    }
    let before = rows(&db).await;
    assert_eq!(before.0, 3, "three rows stored");
    let e = a
        .relay("s1", &message(MAX_RELAYED_MESSAGE_BYTES + 1))
        .await
        .unwrap_err();
    let RelayError::Refused(why) = e else {
        panic!("refused expected: {e:?}")
    };
    assert!(
        why.contains(&format!("{} bytes", MAX_RELAYED_MESSAGE_BYTES + 1))
            && why.contains(&format!("over the {MAX_RELAYED_MESSAGE_BYTES} bytes")),
        "{why}"
    );
    assert_eq!(rows(&db).await, before, "nothing stored for it");
}

/// The total bound holds across stores (replicas): 16 MiB of 1 MiB messages fit, the next
/// byte is refused saying how much is in use; once the stored ones pass their TTL (short
/// here) they are swept by the next relay, which fits again, and by `sweep`.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_total_bound_refuses_until_the_ttl_sweeps_the_stored_messages() {
    let db = TestDb::new().await;
    let url = db.url("pool=2");
    let ttl = Duration::from_millis(1500);
    let limits = RelayLimits::new(MAX_RELAYED_MESSAGE_BYTES, MAX_RELAYED_TOTAL_BYTES, ttl);
    let a = PgStore::connect(&url)
        .await
        .expect("store a")
        .sessions()
        .with_relay_limits(limits);
    let b = PgStore::connect(&url)
        .await
        .expect("store b")
        .sessions()
        .with_relay_limits(limits);
    let mib = message(MAX_RELAYED_MESSAGE_BYTES);
    // Sixteen sessions without a shared record: each its own owner, within its share.
    for i in 0..16 {
        let s = if i % 2 == 0 { &a } else { &b };
        s.relay(&format!("s{i}"), &mib)
            .await
            .expect("within the total bound");
    }
    let used = i64::try_from(MAX_RELAYED_TOTAL_BYTES).unwrap();
    assert_eq!(rows(&db).await, (16, used));
    let e = b
        .relay("s", &message(MAX_RELAYED_BYTES + 1))
        .await
        .unwrap_err();
    let RelayError::Refused(why) = e else {
        panic!("refused expected: {e:?}")
    };
    assert!(
        why.contains(&format!("{used} of the {MAX_RELAYED_TOTAL_BYTES} bytes")),
        "{why}"
    );
    tokio::time::sleep(ttl + Duration::from_millis(200)).await;
    // The next relay sweeps the expired rows first, then fits.
    b.relay("s", &message(MAX_RELAYED_BYTES + 1))
        .await
        .expect("fits after the TTL");
    assert_eq!(rows(&db).await.0, 1);
    tokio::time::sleep(ttl + Duration::from_millis(200)).await;
    let now = i64::try_from(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_millis(),
    )
    .unwrap();
    a.sweep(now).await.expect("sweep");
    assert_eq!(
        rows(&db).await,
        (0, 0),
        "the periodic sweep deletes them too"
    );
}

/// One owner (all its sessions together) holds at most its share of the stored relayed
/// messages: past it its relays are refused naming the share, while another owner's large
/// message is still stored and delivered.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn one_owner_flooding_the_table_leaves_room_for_the_others() {
    let db = TestDb::new().await;
    let url = db.url("pool=2");
    let (a, b, mut rx) = two_listening_directories(&url).await;
    let far = i64::MAX / 2;
    for (id, owner) in [
        ("f1", "ip:10.0.0.9"),
        ("f2", "ip:10.0.0.9"),
        ("real", "principal:alice"),
    ] {
        let row = SessionRow::new(id.into(), None, owner.into(), b"{}".to_vec(), far);
        a.insert(&row, 100).await.expect("session recorded");
    }
    let mib = message(MAX_RELAYED_MESSAGE_BYTES);
    let share = MAX_RELAYED_OWNER_BYTES / MAX_RELAYED_MESSAGE_BYTES;
    for i in 0..share {
        // Both sessions of the flooding owner count together.
        let s = if i % 2 == 0 { "f1" } else { "f2" };
        a.relay(s, &mib).await.expect("within the owner's share");
    }
    let e = b.relay("f2", &mib).await.unwrap_err();
    let RelayError::Refused(why) = e else {
        panic!("refused expected: {e:?}")
    };
    assert!(
        why.contains(&format!(
            "{MAX_RELAYED_OWNER_BYTES} bytes one client may hold"
        )),
        "{why}"
    );
    let used = i64::try_from(MAX_RELAYED_OWNER_BYTES).unwrap();
    assert_eq!(rows(&db).await, (i64::try_from(share).unwrap(), used));
    // Another owner's 200 KB answer is stored and reaches the listeners.
    while tokio::time::timeout(Duration::from_millis(300), rx.recv())
        .await
        .is_ok()
    {}
    let answer = message(200_000);
    b.relay("real", &answer).await.expect("another owner fits");
    let got = loop {
        let m = tokio::time::timeout(Duration::from_secs(5), rx.recv())
            .await
            .expect("the answer arrives")
            .unwrap();
        if matches!(&m, SessionEnded::Message { session, .. } if session == "real") {
            break m;
        }
    };
    assert_eq!(
        got,
        SessionEnded::Message {
            session: "real".to_owned(),
            message: answer
        }
    );
}

async fn pending_requests(db: &TestDb, session: &str) -> Vec<i64> {
    let c = db.client().await;
    c.query(
        "SELECT request_id FROM mcp_tasks.session_requests WHERE session = $1 \
         ORDER BY request_id",
        &[&session],
    )
    .await
    .unwrap()
    .iter()
    .map(|r| r.get(0))
    .collect()
}

/// Issue 28: only an answer to a request some replica's copy of the session recorded as
/// pending is relayed, small (in the notification) or large (through the table): one to
/// an id pending nowhere is refused with `Ok(false)`, nothing notified or stored; one to a
/// pending id is relayed once and ends its pending state (a second answer to it is
/// dropped). A request answered where it was sent, or cancelled, is no longer pending;
/// the rows of a session are at most 128 (the newest kept) and go with the session.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn only_answers_to_pending_requests_are_relayed() {
    assert_eq!(MAX_PENDING_REQUESTS_PER_SESSION, 128);
    assert_eq!(PENDING_REQUEST_TTL, Duration::from_secs(3600));
    let db = TestDb::new().await;
    let url = db.url("pool=2");
    let (a, b, mut rx) = two_listening_directories(&url).await;
    let row = SessionRow::new(
        "s1".into(),
        None,
        "ip:x".into(),
        b"{}".to_vec(),
        i64::MAX / 2,
    );
    a.insert(&row, 100).await.expect("session recorded");
    let small = message(100);
    let large = message(200_000);
    for (id, msg) in [(7, &small), (8, &large)] {
        assert!(
            !b.relay_answer("s1", id, msg).await.expect("no failure"),
            "{id} is pending nowhere"
        );
    }
    assert_eq!(rows(&db).await, (0, 0), "nothing stored");
    assert!(
        tokio::time::timeout(Duration::from_millis(300), rx.recv())
            .await
            .is_err(),
        "nothing relayed"
    );
    a.request_sent("s1", 7).await.unwrap();
    a.request_sent("s1", 8).await.unwrap();
    a.request_sent("s1", 9).await.unwrap();
    // A session the table does not hold records nothing.
    a.request_sent("gone", 1).await.unwrap();
    assert_eq!(pending_requests(&db, "gone").await, Vec::<i64>::new());
    assert_eq!(pending_requests(&db, "s1").await, [7, 8, 9]);
    for (id, msg) in [(7, &small), (8, &large)] {
        assert!(
            b.relay_answer("s1", id, msg).await.expect("relayed"),
            "{id} is pending"
        );
        let got = tokio::time::timeout(Duration::from_secs(5), rx.recv())
            .await
            .expect("the answer arrives")
            .unwrap();
        assert_eq!(
            got,
            SessionEnded::Message {
                session: "s1".to_owned(),
                message: msg.clone()
            }
        );
        assert!(
            !b.relay_answer("s1", id, msg).await.unwrap(),
            "{id} was answered: no longer pending"
        );
    }
    assert_eq!(rows(&db).await.0, 1, "the large answer stored once");
    // Another session's id is not this one's.
    a.request_sent("s1", 10).await.unwrap();
    assert!(!b.relay_answer("s2", 10, &small).await.unwrap());
    // Answered where it was sent (or cancelled): done.
    a.request_done("s1", 9).await.unwrap();
    assert_eq!(pending_requests(&db, "s1").await, [10]);
    // At most 128 per session, the newest kept.
    for id in 100..100 + 130 {
        a.request_sent("s1", id).await.unwrap();
    }
    let kept = pending_requests(&db, "s1").await;
    assert_eq!(kept.len(), MAX_PENDING_REQUESTS_PER_SESSION, "{kept:?}");
    assert_eq!(kept.last(), Some(&229));
    assert!(!kept.contains(&100) && !kept.contains(&10), "{kept:?}");
    // The session ends: its rows go.
    a.remove("s1").await.unwrap();
    assert_eq!(pending_requests(&db, "s1").await, Vec::<i64>::new());
}
