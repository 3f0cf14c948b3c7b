//! The README's "30-second walkthrough", run as written: its commands are read from
//! README.md itself (so that the two cannot drift), each run by `sh` in a pseudo-terminal
//! with the CLI's defaults (no `--protocol`, no token but the one the walkthrough
//! exports), and each must print what the README's comment beside it says.
//!
//! Terminal 1 is the server (on a free port rather than 8080: the one change made to the
//! commands, `--listen 127.0.0.1:0` added and the URL replaced), terminal 2 `tasks watch`
//! with its live table, terminal 3 the five calls (the live line and its progress bar, the
//! question answered "blue" at the prompt, Ctrl-C cancelling the last task) and
//! `tasks list`.
#![allow(missing_docs)]

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use crate::term_support::{
    LIMIT, PtyRun, Step, bin, ctrl_c, expect, expect_within, notify, pty_defaults, send, sleep,
};

/// One command of the walkthrough and the comment beside it.
#[derive(Debug, Clone)]
struct Line {
    cmd: String,
    comment: String,
}

/// The walkthrough's terminals (`# 1. ...`, `# 2. ...`, ...), each its lines in order.
fn terminals() -> Vec<Vec<Line>> {
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../README.md"))
        .expect("README.md");
    let section = &readme[readme
        .find("## 30-second walkthrough")
        .expect("the README has a 30-second walkthrough")..];
    let start = section.find("```sh\n").expect("its sh block") + "```sh\n".len();
    let block = &section[start..start + section[start..].find("```").expect("its end")];
    let mut terminals: Vec<Vec<Line>> = Vec::new();
    for line in block.lines().map(str::trim).filter(|l| !l.is_empty()) {
        if let Some(title) = line.strip_prefix('#') {
            let title = title.trim_start();
            if title.chars().next().is_some_and(|c| c.is_ascii_digit()) && title.contains(". ") {
                terminals.push(Vec::new());
            }
            continue;
        }
        let (cmd, comment) = match line.find("  #") {
            Some(i) => (line[..i].trim(), line[i + 3..].trim()),
            None => (line, ""),
        };
        terminals
            .last_mut()
            .expect("a command under a `# N.` title")
            .push(Line {
                cmd: cmd.to_owned(),
                comment: comment.to_owned(),
            });
    }
    terminals
}

/// The `export ...` lines of a terminal, and its other commands.
fn split_exports(lines: &[Line]) -> (Vec<String>, Vec<Line>) {
    let (exports, cmds): (Vec<_>, Vec<_>) = lines
        .iter()
        .cloned()
        .partition(|l| l.cmd.starts_with("export "));
    (exports.into_iter().map(|l| l.cmd).collect(), cmds)
}

/// Where the walkthrough runs: a scratch directory, `mcp-tasks` on the `PATH` (as
/// `cargo install` puts it), the README's address replaced by the server's.
struct Shell {
    dir: std::path::PathBuf,
    address: String,
}

impl Shell {
    /// `cmd` as `sh -c` runs it in this terminal, after its `exports`; `exec` keeps the
    /// CLI the terminal's session leader (Ctrl-C reaches it, its exit code is the run's).
    fn line(&self, exports: &[String], cmd: &str) -> String {
        let bin_dir = std::path::Path::new(bin())
            .parent()
            .expect("the binary's directory");
        let mut line = format!(
            "cd '{}' && export PATH='{}':\"$PATH\"",
            self.dir.display(),
            bin_dir.display()
        );
        for e in exports {
            line.push_str(" && ");
            line.push_str(&self.fix(e));
        }
        line.push_str(" && exec ");
        line.push_str(&self.fix(cmd));
        line
    }

    fn fix(&self, text: &str) -> String {
        text.replace("127.0.0.1:8080", &self.address)
    }

    fn run(&self, exports: &[String], cmd: &str, steps: &[Step]) -> PtyRun {
        let line = self.line(exports, cmd);
        pty_defaults(&["sh", "-c", &line], steps)
    }
}

/// Terminal 1: the server, killed on drop.
struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Run terminal 1 (its setup lines, then the server on a free port); the server and its
/// `host:port`.
fn start_server(dir: &std::path::Path, lines: &[Line]) -> (Server, String) {
    let (serve, setup) = lines.split_last().expect("terminal 1 has commands");
    assert!(
        serve.cmd.starts_with("mcp-tasks serve"),
        "terminal 1 ends with the server: {serve:?}"
    );
    for l in setup {
        let ok = Command::new("sh")
            .args(["-c", &l.cmd])
            .current_dir(dir)
            .status()
            .expect("sh");
        assert!(ok.success(), "{}", l.cmd);
    }
    let serve_cmd = serve.cmd.replacen("mcp-tasks", bin(), 1);
    let mut child = Command::new("sh")
        .args(["-c", &format!("exec {serve_cmd} --listen 127.0.0.1:0")])
        .current_dir(dir)
        .env("RUST_LOG", "warn")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start the server");
    let stderr = child.stderr.take().expect("stderr");
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines() {
            let Ok(line) = line else { return };
            if let Some(url) = line.strip_prefix("listening on ") {
                let _ = tx.send(url.trim().to_owned());
            }
        }
    });
    let server = Server(child);
    let url = rx.recv_timeout(LIMIT).expect("the server listens");
    let address = url
        .trim_start_matches("http://")
        .trim_end_matches("/mcp")
        .to_owned();
    (server, address)
}

/// The text between the first pair of `mark`s after `after` in `comment`.
fn quoted<'a>(comment: &'a str, after: &str, mark: char) -> &'a str {
    let rest = &comment[comment
        .find(after)
        .unwrap_or_else(|| panic!("{after:?} in {comment:?}"))..];
    let start = rest
        .find(mark)
        .unwrap_or_else(|| panic!("{mark} in {rest:?}"))
        + 1;
    let end = start + rest[start..].find(mark).expect("the closing mark");
    &rest[start..end]
}

/// Whether `text` shows a progress bar as wide as `bar` (`[██░░] 6/10` style) of `total`.
fn shows_bar(text: &str, width: usize, total: &str) -> bool {
    text.match_indices('[').any(|(i, _)| {
        let rest = &text[i + 1..];
        let cells = rest.chars().take_while(|c| matches!(c, '█' | '░')).count();
        let after: String = rest.chars().skip(cells).collect();
        cells == width
            && after.starts_with("] ")
            && after[2..].split_once('/').is_some_and(|(done, t)| {
                !done.is_empty() && done.chars().all(|c| c.is_ascii_digit()) && t.starts_with(total)
            })
    })
}

/// The statuses of the task lines `tasks list` printed (`id<TAB>status<TAB>...`), sorted.
fn listed_statuses(transcript: &str) -> Vec<String> {
    let mut v: Vec<String> = transcript
        .lines()
        .filter_map(|l| l.split('\t').nth(1))
        .map(str::to_owned)
        .collect();
    v.sort();
    v
}

/// The statuses in the last table `tasks watch` drew (rows under the last `TASK` header),
/// sorted.
fn watched_statuses(transcript: &str) -> Vec<String> {
    let last = transcript.rfind("TASK ").expect("a table");
    let mut v: Vec<String> = transcript[last..]
        .lines()
        .skip(1)
        .take_while(|l| !l.contains("task(s) ·"))
        .filter_map(|l| l.split_whitespace().nth(1))
        .map(str::to_owned)
        .collect();
    v.sort();
    v
}

#[test]
fn the_readme_walkthrough_prints_what_the_readme_says() {
    let terms = terminals();
    assert_eq!(terms.len(), 3, "three terminals: {terms:?}");
    let dir = std::env::temp_dir().join(format!(
        "mcp-tasks-walkthrough-{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default()
            .as_nanos()
    ));
    std::fs::create_dir(&dir).expect("scratch directory");
    let (_server, address) = start_server(&dir, &terms[0]);
    let shell = Shell {
        dir: dir.clone(),
        address,
    };

    // Terminal 2: `tasks watch`, live until Ctrl-C, beside the calls.
    let (watch_exports, watch_cmds) = split_exports(&terms[1]);
    let [watch] = watch_cmds.as_slice() else {
        panic!("terminal 2 runs one command: {watch_cmds:?}");
    };
    assert!(watch.cmd.starts_with("mcp-tasks tasks watch"), "{watch:?}");
    let (shown_tx, shown_rx) = mpsc::channel();
    let watch_line = shell.line(&watch_exports, &watch.cmd);
    let watcher = std::thread::spawn(move || {
        pty_defaults(
            &["sh", "-c", &watch_line],
            &[
                expect("TASK"),
                expect("STATUS"),
                notify(&shown_tx),
                // The last call's task is cancelled: every row is final.
                expect_within("cancelled", 180),
                sleep(1.5),
                ctrl_c(),
            ],
        )
    });
    shown_rx
        .recv_timeout(Duration::from_secs(30))
        .expect("tasks watch draws its table");

    // Terminal 3: the calls and the list.
    let (exports, cmds) = split_exports(&terms[2]);
    let [sleep_call, progress_call, ask_call, cancel_call, list] = cmds.as_slice() else {
        panic!("terminal 3 runs five calls and a list: {cmds:?}");
    };

    // 1. `sleep`: the live line, then its result.
    assert!(
        sleep_call.cmd.starts_with("mcp-tasks call sleep"),
        "{sleep_call:?}"
    );
    let live = sleep_call
        .comment
        .split(", then")
        .next()
        .unwrap_or_default();
    // "⠹ sleep · working · 2.1s": the spinner and the time move; the rest is shown.
    let words: Vec<&str> = live.split_whitespace().collect();
    let live = words[1..words.len() - 1].join(" ");
    let result = quoted(&sleep_call.comment, "then", '`');
    let r = shell.run(
        &exports,
        &sleep_call.cmd,
        &[expect(&live), expect_within(result, 60)],
    );
    assert_eq!(r.exit, Some(0), "{}", r.transcript);

    // 2. `progress`: the bar, as wide as the README draws it.
    assert!(
        progress_call.cmd.starts_with("mcp-tasks call progress"),
        "{progress_call:?}"
    );
    let comment = &progress_call.comment;
    let bar = &comment[comment.find('[').map_or(0, |i| i + 1)..comment.find(']').unwrap_or(0)];
    let width = bar.chars().count();
    let total = progress_call
        .comment
        .rsplit('/')
        .next()
        .unwrap_or_default()
        .trim();
    assert!(width > 0 && !total.is_empty(), "{progress_call:?}");
    let r = shell.run(
        &exports,
        &progress_call.cmd,
        &[expect("completed in"), expect(&format!("done {total}"))],
    );
    assert_eq!(r.exit, Some(0), "{}", r.transcript);
    assert!(
        shows_bar(&r.transcript, width, total),
        "no `[{bar}] N/{total}` bar:\n{}",
        r.transcript
    );

    // 3. `ask`: the question at the prompt, answered "blue".
    assert!(
        ask_call.cmd.starts_with("mcp-tasks call ask"),
        "{ask_call:?}"
    );
    assert!(
        ask_call.comment.contains("answer at the prompt"),
        "{ask_call:?}"
    );
    let question = quoted(&ask_call.cmd, "question=", '"');
    let r = shell.run(
        &exports,
        &ask_call.cmd,
        &[
            expect(&format!("? {question}")),
            expect("[c]ancel: "),
            send("\r"),
            expect("answer (text, required): "),
            send("blue\r"),
            expect("→ sent"),
            expect("completed in"),
            expect("blue"),
        ],
    );
    assert_eq!(r.exit, Some(0), "{}", r.transcript);

    // 4. a long `sleep`, cancelled with Ctrl-C: "task … cancelled", exit 130.
    assert!(
        cancel_call.cmd.starts_with("mcp-tasks call sleep"),
        "{cancel_call:?}"
    );
    assert!(
        cancel_call.comment.contains("press Ctrl-C"),
        "{cancel_call:?}"
    );
    let said = quoted(&cancel_call.comment, "", '"');
    let (before, after) = said.split_once('…').expect("task … cancelled");
    let code: i32 = cancel_call
        .comment
        .rsplit("exit ")
        .next()
        .and_then(|c| c.trim().parse().ok())
        .expect("the exit code");
    let r = shell.run(
        &exports,
        &cancel_call.cmd,
        &[
            expect(" created (Ctrl-C cancels it)"),
            sleep(0.3),
            ctrl_c(),
            expect(before),
            expect(after),
        ],
    );
    assert_eq!(r.exit, Some(code), "{}", r.transcript);
    let cancelled = r
        .transcript
        .lines()
        .any(|l| l.contains(before) && l.trim_end().ends_with(after.trim_end()));
    assert!(cancelled, "no {said:?} line:\n{}", r.transcript);

    // 5. `tasks list`: what ran.
    assert!(list.cmd.starts_with("mcp-tasks tasks list"), "{list:?}");
    let mut want: Vec<String> = list
        .comment
        .split_once(':')
        .expect("what ran: ...")
        .1
        .split(',')
        .map(|s| s.trim().to_owned())
        .collect();
    want.sort();
    let r = shell.run(&exports, &list.cmd, &[]);
    assert_eq!(r.exit, Some(0), "{}", r.transcript);
    assert_eq!(listed_statuses(&r.transcript), want, "{}", r.transcript);

    // Terminal 2 showed them all, live, and stopped at Ctrl-C.
    let w = watcher.join().expect("the watch terminal");
    assert_eq!(w.exit, Some(0), "{}", w.transcript);
    assert_eq!(watched_statuses(&w.transcript), want, "{}", w.transcript);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_bar_is_found_by_its_width_and_total() {
    let line = "⠹ progress · working · 1.2s · [████████████░░░░░░░░] 6/10";
    assert!(shows_bar(line, 20, "10"));
    assert!(!shows_bar(line, 10, "10"));
    assert!(!shows_bar(line, 20, "12"));
    assert_eq!(
        listed_statuses("a\tcompleted\tx\nb\tcancelled\tx\nno tabs\n"),
        vec!["cancelled", "completed"]
    );
}
