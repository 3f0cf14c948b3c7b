//! Helpers of the terminal tests (`term_*.rs`): the CLI in a pseudo-terminal, driven by
//! a script of expectations and keystrokes, and a small scripted MCP server
//! (`client_fixtures/scripted_server.mjs`) for what our demo server does not send.
//!
//! The pseudo-terminal comes from `rexpect` (its `PtyProcess`: a fork on a new pty, the
//! child the session leader of it): Ctrl-C is the byte 0x03 typed on the terminal,
//! turned into SIGINT by its line discipline, and Enter is a real line. The matching is
//! ours, on a transcript of everything the CLI drew, because the live line redraws in
//! place: ANSI sequences are removed and an erased line reads as a line break.
#![allow(dead_code, unreachable_pub, missing_docs)]

use std::io::{Read, Write};
use std::process::Command;
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use rexpect::process::{PtyProcess, Signal, WaitStatus};

pub use crate::client_support::*;

/// How long an expectation waits by default.
const EXPECT_TIMEOUT: Duration = Duration::from_secs(20);
/// How long the program has to exit after the last step.
const EXIT_TIMEOUT: Duration = Duration::from_secs(20);

/// One step of a terminal script.
#[derive(Debug, Clone)]
pub enum Step {
    /// Wait for the text in the transcript, after the previous match.
    Expect(String),
    /// Type the text (`\r` is Enter).
    Send(String),
    /// Type Ctrl-C.
    CtrlC,
    /// Let the program run (its output is still collected).
    Sleep(Duration),
    /// Wait for the text, at most this long (for what comes late: a table row another
    /// process makes).
    ExpectWithin(String, Duration),
    /// Tell the test that this point was reached (it goes on with what it does beside).
    Notify(std::sync::mpsc::Sender<()>),
}

pub fn expect(text: &str) -> Step {
    Step::Expect(text.to_owned())
}

pub fn send(text: &str) -> Step {
    Step::Send(text.to_owned())
}

pub fn ctrl_c() -> Step {
    Step::CtrlC
}

pub fn sleep(seconds: f64) -> Step {
    Step::Sleep(Duration::from_secs_f64(seconds))
}

pub fn expect_within(text: &str, seconds: u64) -> Step {
    Step::ExpectWithin(text.to_owned(), Duration::from_secs(seconds))
}

pub fn notify(tx: &std::sync::mpsc::Sender<()>) -> Step {
    Step::Notify(tx.clone())
}

/// What a pseudo-terminal run gave.
#[derive(Debug)]
pub struct PtyRun {
    /// The exit code (`None` when a signal ended the program).
    pub exit: Option<i32>,
    /// What the program drew, ANSI sequences removed, an erased line as a line break.
    pub transcript: String,
    /// What the program wrote, as it wrote it.
    pub raw: String,
}

/// The program's output so far, filled by a reader thread.
#[derive(Default)]
struct Output {
    bytes: Vec<u8>,
    /// The terminal gave end of file (everyone holding it closed it).
    closed: bool,
}

type Shared = Arc<(Mutex<Output>, Condvar)>;

/// The transcript of raw output: an erased line (`\r` then erase-line) becomes a line
/// break, and every CSI sequence (`ESC [ params letter`) goes.
pub fn transcript(raw: &str) -> String {
    let text = raw.replace("\r\x1b[2K", "\n");
    let mut out = String::with_capacity(text.len());
    let mut rest = text.as_str();
    while let Some(at) = rest.find("\x1b[") {
        out.push_str(&rest[..at]);
        let seq = &rest[at + 2..];
        let params = seq
            .find(|c: char| !(c.is_ascii_digit() || c == ';' || c == '?'))
            .unwrap_or(seq.len());
        match seq[params..].chars().next() {
            Some(c) if c.is_ascii_alphabetic() => rest = &seq[params + 1..],
            // Not a complete sequence: kept as it is.
            _ => {
                out.push_str("\x1b[");
                rest = seq;
            }
        }
    }
    out.push_str(rest);
    out
}

fn text_of(shared: &Shared) -> (String, bool) {
    let out = shared.0.lock().unwrap();
    (transcript(&String::from_utf8_lossy(&out.bytes)), out.closed)
}

/// Wait until the output changes (or `timeout` passes).
fn wait_for_output(shared: &Shared, seen: usize, timeout: Duration) {
    let (lock, cv) = &**shared;
    let out = lock.lock().unwrap();
    let _ = cv
        .wait_timeout_while(out, timeout, |o| o.bytes.len() == seen && !o.closed)
        .unwrap();
}

fn output_len(shared: &Shared) -> usize {
    shared.0.lock().unwrap().bytes.len()
}

/// Runs `argv` in a pseudo-terminal (40 rows, 120 columns) and plays `steps`, then waits
/// for the program to exit. Panics (with the transcript) when an expectation is not met
/// or the program does not exit. The CLI speaks 2025-11-25 (`MCP_TASKS_PROTOCOL=legacy`:
/// the terminal tests show that era's tasks).
pub fn pty(argv: &[&str], steps: &[Step]) -> PtyRun {
    pty_with(argv, steps, true)
}

/// [`pty`] with the CLI's defaults: neither `MCP_TASKS_PROTOCOL` nor `MCP_TASKS_TOKEN`
/// set (as a user's shell would not, unless the command line sets them).
pub fn pty_defaults(argv: &[&str], steps: &[Step]) -> PtyRun {
    pty_with(argv, steps, false)
}

fn pty_with(argv: &[&str], steps: &[Step], legacy: bool) -> PtyRun {
    // `stty` sizes the terminal from inside it; `exec` keeps the program the session leader.
    let mut cmd = Command::new("sh");
    cmd.arg("-c")
        .arg(r#"stty rows 40 cols 120 && exec "$@""#)
        .arg("sh")
        .args(argv)
        .env("RUST_LOG", "warn")
        .env_remove("MCP_TASKS_PROTOCOL")
        .env_remove("MCP_TASKS_TOKEN");
    if legacy {
        cmd.env("MCP_TASKS_PROTOCOL", "legacy");
    }
    let mut process = PtyProcess::new(cmd).expect("start the program in a pseudo-terminal");
    process.set_kill_timeout(Some(2000));
    let mut keys = process.get_file_handle().expect("the terminal");
    let mut screen = process.get_file_handle().expect("the terminal");
    let shared: Shared = Arc::default();
    {
        let shared = Arc::clone(&shared);
        std::thread::spawn(move || {
            let mut buf = [0u8; 65536];
            loop {
                let n = screen.read(&mut buf).unwrap_or(0);
                let (lock, cv) = &*shared;
                let mut out = lock.lock().unwrap();
                if n == 0 {
                    out.closed = true;
                } else {
                    out.bytes.extend_from_slice(&buf[..n]);
                }
                cv.notify_all();
                if n == 0 {
                    return;
                }
            }
        });
    }

    let mut failed = None;
    let mut pos = 0;
    for (i, step) in steps.iter().enumerate() {
        match step {
            Step::Expect(want) | Step::ExpectWithin(want, _) => {
                let timeout = match step {
                    Step::ExpectWithin(_, t) => *t,
                    _ => EXPECT_TIMEOUT,
                };
                let deadline = Instant::now() + timeout;
                loop {
                    let seen = output_len(&shared);
                    let (text, closed) = text_of(&shared);
                    if let Some(found) = text.get(pos..).and_then(|t| t.find(want.as_str())) {
                        pos += found + want.len();
                        break;
                    }
                    let now = Instant::now();
                    if closed || now >= deadline {
                        failed = Some(format!("step {i}: expected {want:?}"));
                        break;
                    }
                    wait_for_output(&shared, seen, deadline - now);
                }
            }
            Step::Send(text) => {
                keys.write_all(text.as_bytes())
                    .expect("type on the terminal");
                keys.flush().expect("type on the terminal");
            }
            Step::CtrlC => {
                keys.write_all(b"\x03").expect("type Ctrl-C");
                keys.flush().expect("type Ctrl-C");
            }
            Step::Sleep(d) => std::thread::sleep(*d),
            Step::Notify(tx) => {
                let _ = tx.send(());
            }
        }
        if failed.is_some() {
            break;
        }
    }

    let status = if failed.is_some() {
        let _ = process.signal(Signal::SIGKILL);
        process.wait().ok()
    } else {
        let deadline = Instant::now() + EXIT_TIMEOUT;
        loop {
            match process.status() {
                Some(WaitStatus::StillAlive) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(20));
                }
                Some(WaitStatus::StillAlive) => {
                    let _ = process.signal(Signal::SIGKILL);
                    failed = Some("the program did not exit".to_owned());
                    break process.wait().ok();
                }
                other => break other,
            }
        }
    };
    // What the program wrote last: until the terminal is quiet for a moment.
    let settle = Instant::now() + Duration::from_secs(2);
    loop {
        let seen = output_len(&shared);
        wait_for_output(&shared, seen, Duration::from_millis(100));
        if output_len(&shared) == seen || Instant::now() >= settle {
            break;
        }
    }

    // The child is reaped: `PtyProcess`'s drop must not look for it again, since its pid
    // may belong to another test's child by now (under `cargo test`, the tests of this
    // binary are threads of one process), which the drop would SIGTERM. The price is the
    // master end's descriptor, closed when the test process ends.
    std::mem::forget(process);

    let raw = String::from_utf8_lossy(&shared.0.lock().unwrap().bytes).into_owned();
    let run = PtyRun {
        exit: match status {
            Some(WaitStatus::Exited(_, code)) => Some(code),
            _ => None,
        },
        transcript: transcript(&raw),
        raw,
    };
    if let Some(failed) = failed {
        panic!(
            "pty step failed: {failed} (exit {:?})\n--- transcript ---\n{}",
            status, run.transcript
        );
    }
    run
}

/// `mcp-tasks serve --stdio --store memory` after `--`.
pub fn our_server() -> Vec<&'static str> {
    vec!["--", bin(), "serve", "--stdio", "--store", "memory"]
}

/// The scripted MCP server (stdio) of `client_fixtures/scripted_server.mjs`, after `--`:
///
/// * `form` (plain call): sends `elicitation/create` with a boolean, a single-choice enum
///   and an integer with a default; returns the `ElicitResult` as JSON text;
/// * `task_form` (plain call): sends the same elicitation *task-augmented*, polls the
///   client's task with `tasks/get` until it ends, fetches it with `tasks/result`, and
///   returns `{created, statuses, result}` as JSON text;
/// * `hang` (as a task): a task that never ends, whose `tasks/cancel` is never answered.
pub fn scripted_server() -> Vec<&'static str> {
    vec![
        "--",
        "node",
        concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/it/client_fixtures/scripted_server.mjs"
        ),
    ]
}

#[test]
fn the_transcript_drops_csi_sequences_and_reads_an_erased_line_as_a_break() {
    assert_eq!(
        transcript("a\x1b[1;32mb\x1b[0m\r\x1b[2Kc\x1b[4F\x1b[Jd\x1b["),
        "ab\ncd\x1b["
    );
}
