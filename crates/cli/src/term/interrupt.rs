//! Ctrl-C, counted.
//!
//! One listener for the whole process (installed on first use) counts SIGINTs; any
//! number of waiters see each new one. The first Ctrl-C on a task cancels it, the second
//! leaves at once ([`crate::call::follow`]); a prompt on screen gives up on the first.

use std::sync::OnceLock;

use tokio::sync::watch;

fn counter() -> &'static watch::Sender<u64> {
    static COUNT: OnceLock<watch::Sender<u64>> = OnceLock::new();
    COUNT.get_or_init(|| {
        let (tx, _) = watch::channel(0);
        let counting = tx.clone();
        tokio::spawn(async move {
            #[cfg(unix)]
            {
                use tokio::signal::unix::{SignalKind, signal};
                let Ok(mut sigint) = signal(SignalKind::interrupt()) else {
                    return;
                };
                while sigint.recv().await.is_some() {
                    counting.send_modify(|n| *n += 1);
                }
            }
            #[cfg(not(unix))]
            while tokio::signal::ctrl_c().await.is_ok() {
                counting.send_modify(|n| *n += 1);
            }
        });
        tx
    })
}

/// Sees the Ctrl-Cs that come after it was made.
pub(crate) struct Interrupts {
    rx: watch::Receiver<u64>,
}

impl Interrupts {
    /// Start counting (the first call installs the process's SIGINT listener: from then
    /// on Ctrl-C no longer kills the process by itself).
    pub(crate) fn new() -> Self {
        let mut rx = counter().subscribe();
        rx.mark_unchanged();
        Self { rx }
    }

    /// Counting what is sent on `counter` instead of the process's Ctrl-Cs (tests: each
    /// `send_modify(|n| *n += 1)` is one Ctrl-C); like [`Self::new`], only the changes
    /// that come after it.
    #[cfg(test)]
    pub(crate) fn from_counter(mut counter: watch::Receiver<u64>) -> Self {
        counter.mark_unchanged();
        Self { rx: counter }
    }

    /// Wait for the next Ctrl-C.
    pub(crate) async fn next(&mut self) {
        if self.rx.changed().await.is_err() {
            std::future::pending::<()>().await;
        }
    }
}
