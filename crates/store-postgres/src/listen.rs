//! Cross-process wake-ups: one listener connection per store, `LISTEN`ing on the channel
//! of the store's schema, and the safety-net poll.
//!
//! Every committed change of a task sends a notification with the task id (the store
//! announces it right after the commit: `announce`). The listener wakes that task's waiters in this
//! process. When its connection is lost it reconnects by itself, with backoff; once it
//! listens again it wakes every waiter (notifications sent while it was away are gone), and
//! the safety-net poll wakes every waiter every [`crate::PgOptions::fallback_poll`] in any
//! case. A waiter re-reads its task after a wake-up: a spurious one costs a read, a lost
//! one would block a `tasks/result` until the poll.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use backon::BackoffBuilder;
use futures::StreamExt;
use mcp_tasks_core::wake::WakeMap;
use tokio_postgres::{AsyncMessage, NoTls};

use crate::options::PgConfig;

/// What the listener shares with its store.
pub(crate) struct Listener {
    pub(crate) wake: Arc<WakeMap>,
    /// Whether the listener connection is up and `LISTEN`ing.
    pub(crate) listening: AtomicBool,
}

/// Run the listener and the safety-net poll until the task is aborted (when the store is
/// dropped).
pub(crate) async fn run(cfg: PgConfig, shared: Arc<Listener>) {
    let poll = {
        let shared = Arc::clone(&shared);
        let every = cfg.options.fallback_poll;
        async move {
            let mut tick = tokio::time::interval(every);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            tick.tick().await;
            loop {
                tick.tick().await;
                shared.wake.notify_all();
            }
        }
    };
    tokio::select! {
        () = poll => {}
        () = listen_forever(&cfg, &shared) => {}
    }
}

async fn listen_forever(cfg: &PgConfig, shared: &Listener) {
    let mut backoff = new_backoff();
    loop {
        match listen_once(cfg, shared).await {
            Ok(()) => {
                tracing::warn!(store = %cfg.description(), "the listener connection closed; reconnecting")
            }
            Err(e) => {
                tracing::warn!(store = %cfg.description(), error = %e, "the listener connection failed; reconnecting")
            }
        }
        let was = shared.listening.swap(false, Ordering::SeqCst);
        if was {
            backoff = new_backoff();
        }
        let delay = backoff.next().unwrap_or(std::time::Duration::from_secs(5));
        tokio::time::sleep(delay).await;
    }
}

/// The backoff between a listener's reconnections: from 50 ms, doubling, up to 5 s.
pub(crate) fn new_backoff() -> backon::ExponentialBackoff {
    backon::ExponentialBuilder::new()
        .with_min_delay(std::time::Duration::from_millis(50))
        .with_max_delay(std::time::Duration::from_secs(5))
        .without_max_times()
        .build()
}

/// One listener connection: connect, wake every waiter (whatever changed while nobody
/// listened) once it `LISTEN`s, then wake the waiters of each notified task until the
/// connection ends.
async fn listen_once(cfg: &PgConfig, shared: &Listener) -> Result<(), tokio_postgres::Error> {
    let listening = || {
        shared.listening.store(true, Ordering::SeqCst);
        shared.wake.notify_all();
        tracing::debug!(store = %cfg.description(), "listening for task changes");
    };
    listen_on(cfg, &cfg.options.schema, listening, |id| {
        shared.wake.notify(id)
    })
    .await
}

/// One connection `LISTEN`ing on `channel`: connect, `LISTEN`, call `listening`, then hand
/// the payload of each notification to `deliver` until the connection ends (`Ok`) or
/// fails.
pub(crate) async fn listen_on(
    cfg: &PgConfig,
    channel: &str,
    listening: impl FnOnce(),
    deliver: impl Fn(&str),
) -> Result<(), tokio_postgres::Error> {
    let (client, mut conn) = cfg.pg.connect(NoTls).await?;
    let mut messages = futures::stream::poll_fn(move |cx| conn.poll_message(cx));
    let notified = |m: &AsyncMessage| {
        if let AsyncMessage::Notification(n) = m {
            deliver(n.payload());
        }
    };
    let sql = format!("LISTEN {channel}");
    let listen = client.batch_execute(&sql);
    tokio::pin!(listen);
    // The connection is driven by polling `messages`: drive it while LISTEN runs.
    loop {
        tokio::select! {
            r = &mut listen => { r?; break; }
            m = messages.next() => match m {
                Some(Ok(m)) => notified(&m),
                Some(Err(e)) => return Err(e),
                None => return Ok(()),
            },
        }
    }
    listening();
    while let Some(m) = messages.next().await {
        notified(&m?);
    }
    Ok(())
}
