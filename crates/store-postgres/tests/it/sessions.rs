//! The shared sessions table (issue 17): insert, find, renew, the per-owner bound, expiry
//! sweeps, and the notification every replica gets when a session ends.

use std::time::Duration;

use mcp_tasks_store_postgres::{SessionEnded, SessionRow};
use tokio::sync::mpsc;

use crate::common::{TestDb, two_listening_directories};

fn row(id: &str, owner: &str, expires_ms: i64) -> SessionRow {
    SessionRow::new(
        id.to_owned(),
        Some("alice".to_owned()),
        owner.to_owned(),
        br#"{"protocolVersion":"2025-11-25"}"#.to_vec(),
        expires_ms,
    )
}

async fn ended(rx: &mut mpsc::UnboundedReceiver<SessionEnded>, id: &str) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    loop {
        let e = tokio::time::timeout_at(deadline, rx.recv())
            .await
            .unwrap_or_else(|_| panic!("no end of {id} notified within 5 s"))
            .expect("the listener stays");
        if e == SessionEnded::Id(id.to_owned()) {
            return;
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sessions_are_shared_bounded_swept_and_their_end_is_notified() {
    let db = TestDb::new().await;
    let url = db.url("pool=2");
    // The listener says when it listens (a resync), before anything is missed.
    let (a, b, mut rx) = two_listening_directories(&url).await;

    // Written on a, read on b; expired rows are not found.
    assert!(
        a.insert(&row("s1", "principal:alice", 10_000), 3)
            .await
            .unwrap()
            .is_empty()
    );
    let got = b.find("s1", 5_000).await.unwrap().expect("found");
    assert_eq!(got, row("s1", "principal:alice", 10_000));
    assert_eq!(b.find("s1", 10_000).await.unwrap(), None, "expired");
    assert_eq!(b.find("forged", 0).await.unwrap(), None);
    // Renewal only moves the expiry forward; a missing session says so.
    assert!(b.touch("s1", 20_000).await.unwrap());
    assert!(b.touch("s1", 15_000).await.unwrap());
    assert_eq!(a.find("s1", 0).await.unwrap().unwrap().expires_ms, 20_000);
    assert!(!b.touch("forged", 20_000).await.unwrap());

    // The per-owner bound (3): the fourth ends the one closest to expiry, everywhere.
    a.insert(&row("s2", "principal:alice", 30_000), 3)
        .await
        .unwrap();
    a.insert(&row("s3", "principal:alice", 40_000), 3)
        .await
        .unwrap();
    a.insert(&row("o1", "principal:bob", 1_000), 3)
        .await
        .unwrap();
    let replaced = a
        .insert(&row("s4", "principal:alice", 50_000), 3)
        .await
        .unwrap();
    assert_eq!(replaced, vec!["s1".to_owned()]);
    ended(&mut rx, "s1").await;
    let live = b
        .existing(&[
            "s1".into(),
            "s2".into(),
            "s3".into(),
            "s4".into(),
            "o1".into(),
        ])
        .await
        .unwrap();
    assert_eq!(live.len(), 4, "{live:?}");

    // DELETE on a: b hears of it.
    a.remove("s2").await.unwrap();
    ended(&mut rx, "s2").await;
    // The sweep ends what expired, once, whichever replica runs it.
    assert_eq!(b.sweep(35_000).await.unwrap(), vec!["o1".to_owned()]);
    ended(&mut rx, "o1").await;
    assert!(a.sweep(35_000).await.unwrap().is_empty());
    let mut left = a.existing(&["s3".into(), "s4".into()]).await.unwrap();
    left.sort();
    assert_eq!(left, vec!["s3".to_owned(), "s4".to_owned()]);
}

/// A message relayed on one store reaches the listener of another (session id and text
/// intact), carried by the notification up to `MAX_RELAYED_BYTES` (a NOTIFY payload is at
/// most 8000 bytes; larger ones go through the table: `relay.rs`).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn relayed_messages_reach_every_listener_within_the_payload_bound() {
    use mcp_tasks_store_postgres::MAX_RELAYED_BYTES;
    let db = TestDb::new().await;
    let url = db.url("pool=2");
    let (a, _b, mut rx) = two_listening_directories(&url).await;
    let msg = r#"{"jsonrpc":"2.0","id":1,"result":{}}"#;
    a.relay("s1", msg).await.expect("relayed");
    let got = tokio::time::timeout(Duration::from_secs(5), rx.recv())
        .await
        .expect("the relayed message arrives")
        .unwrap();
    assert_eq!(
        got,
        SessionEnded::Message {
            session: "s1".to_owned(),
            message: msg.to_owned()
        }
    );
    let fits = format!(r#"{{"x":"{}"}}"#, "a".repeat(MAX_RELAYED_BYTES - 100));
    a.relay("s2", &fits).await.expect("under the bound");
    let got = tokio::time::timeout(Duration::from_secs(5), rx.recv())
        .await
        .expect("the large message arrives")
        .unwrap();
    assert_eq!(
        got,
        SessionEnded::Message {
            session: "s2".to_owned(),
            message: fits
        }
    );
}
