//! Lines typed on stdin.
//!
//! One thread reads stdin (started on the first prompt) and hands each line over a
//! channel, so that a prompt given up on (Ctrl-C, a cancelled task) leaves no blocked
//! read behind that would swallow the answer to the next one. The terminal stays in its
//! normal (cooked) mode: it echoes and edits the line, and Ctrl-C raises SIGINT.

use std::io::BufRead;
use std::sync::OnceLock;

use tokio::sync::{Mutex, mpsc};

/// The lines of stdin; `None` once it ends.
pub(crate) struct Lines {
    rx: Mutex<mpsc::UnboundedReceiver<String>>,
}

impl Lines {
    /// The process's stdin.
    pub(crate) fn get() -> &'static Self {
        static LINES: OnceLock<Lines> = OnceLock::new();
        LINES.get_or_init(|| {
            let (tx, rx) = mpsc::unbounded_channel();
            std::thread::spawn(move || {
                let stdin = std::io::stdin();
                let mut lock = stdin.lock();
                let mut line = String::new();
                loop {
                    line.clear();
                    match lock.read_line(&mut line) {
                        Ok(0) | Err(_) => return,
                        Ok(_) => {
                            let l = line.trim_end_matches(['\n', '\r']).to_owned();
                            if tx.send(l).is_err() {
                                return;
                            }
                        }
                    }
                }
            });
            Self { rx: Mutex::new(rx) }
        })
    }

    /// The next line (without its end), or `None` at the end of input.
    pub(crate) async fn next(&self) -> Option<String> {
        self.rx.lock().await.recv().await
    }
}
