//! `mcp-tasks tasks watch`: a live table on a terminal (refreshed in place until Ctrl-C,
//! exit 0), a line per change in a pipe, and tasks named by id where the server does not
//! list them.
#![allow(missing_docs)]

use crate::term_support as term;

use std::io::{BufRead, BufReader};
use std::process::Stdio;
use std::sync::mpsc;
use std::time::Duration;

use term::{HttpServer, bin, cli, ctrl_c, expect, pty, run, sleep, stderr, stdout, tokens};

/// Start `sleep ms` as a task with the CLI; returns its id (from `--json` after it ends,
/// or from the status line while it runs when `wait` is false).
fn sleep_task(
    url: &str,
    token: &str,
    ms: u64,
    wait: bool,
) -> (String, Option<std::process::Child>) {
    let ms = format!("ms={ms}");
    let args = [
        "call",
        "sleep",
        "--arg",
        &ms,
        "--task",
        "--url",
        url,
        "--auth-token",
        token,
    ];
    if wait {
        let mut with_json = args.to_vec();
        with_json.push("--json");
        let o = run(&mut cli(&with_json));
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        let v: serde_json::Value = serde_json::from_str(stdout(&o).trim()).unwrap();
        return (v["task"]["taskId"].as_str().unwrap().to_owned(), None);
    }
    let mut child = cli(&args).spawn().unwrap();
    let err = child.stderr.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(err).lines().map_while(Result::ok) {
            if let Some(rest) = line.strip_prefix("task ")
                && let Some((id, _)) = rest.split_once(": working")
            {
                let _ = tx.send(id.to_owned());
            }
        }
    });
    let id = rx
        .recv_timeout(Duration::from_secs(20))
        .expect("the task started");
    (id, Some(child))
}

#[test]
fn a_live_table_on_a_terminal() {
    let t = tokens();
    let srv = HttpServer::start(&["--auth-tokens", t.path()]);
    let (done, _) = sleep_task(&srv.url, "tok-alice", 50, true);
    let (running, child) = sleep_task(&srv.url, "tok-alice", 1500, false);
    // Another principal's task is not shown.
    let (foreign, _) = sleep_task(&srv.url, "tok-bob", 10, true);
    let r = pty(
        &[
            bin(),
            "tasks",
            "watch",
            "--url",
            &srv.url,
            "--auth-token",
            "tok-alice",
            "--interval",
            "200",
        ],
        &[
            expect("TASK"),
            expect("STATUS"),
            expect("AGE"),
            expect("MESSAGE"),
            expect("working"),
            expect("2 task(s)"),
            expect("Ctrl-C to stop"),
            sleep(2.5),
            ctrl_c(),
        ],
    );
    assert_eq!(r.exit, Some(0), "{}", r.transcript);
    // Redrawn in place: cursor up to the table's first line, erase below.
    assert!(r.raw.contains("\x1b[4F\x1b[J"), "{:?}", r.raw);
    let last = &r.transcript[r.transcript.rfind("TASK").unwrap()..];
    let row = |id: &str| {
        last.lines()
            .find(|l| l.starts_with(id))
            .unwrap_or_else(|| panic!("no row for {id} in:\n{last}"))
            .to_owned()
    };
    assert!(row(&done).contains("completed"), "{last}");
    assert!(row(&running).contains("completed"), "{last}");
    assert!(!last.contains(&foreign), "{last}");
    drop(child.map(|mut c| c.wait()));
}

#[test]
fn a_line_per_change_in_a_pipe() {
    let t = tokens();
    let srv = HttpServer::start(&["--auth-tokens", t.path()]);
    let (done, _) = sleep_task(&srv.url, "tok-alice", 50, true);
    let mut watch = cli(&[
        "tasks",
        "watch",
        "--url",
        &srv.url,
        "--auth-token",
        "tok-alice",
        "--interval",
        "100",
    ])
    .spawn()
    .unwrap();
    let out = watch.stdout.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(out).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let next = || {
        rx.recv_timeout(Duration::from_secs(20))
            .expect("a line from watch")
    };
    let first = next();
    assert!(
        first.starts_with(&format!("{done}\tcompleted\t")),
        "{first}"
    );
    let (running, child) = sleep_task(&srv.url, "tok-alice", 700, false);
    let mut seen = Vec::new();
    while !seen
        .iter()
        .any(|l: &String| l.starts_with(&format!("{running}\tcompleted")))
    {
        seen.push(next());
    }
    assert!(
        seen[0].starts_with(&format!("{running}\tworking\t")),
        "{seen:?}"
    );
    // Nothing is printed again for a task that did not change.
    assert!(!seen.iter().any(|l| l.starts_with(&done)), "{seen:?}");
    let _ = watch.kill();
    let _ = watch.wait();
    drop(child.map(|mut c| c.wait()));
}

#[test]
fn tasks_named_by_id_where_the_server_does_not_list() {
    // Over HTTP without authentication the server declares no tasks.list.
    let srv = HttpServer::start(&[]);
    // Refused by the client before sending anything (issue 15 #19): exit 4.
    let o = run(&mut cli(&["tasks", "watch", "--url", &srv.url]));
    assert_eq!(o.status.code(), Some(4), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("mcp-tasks tasks watch ID"),
        "{}",
        stderr(&o)
    );

    let o = run(&mut cli(&[
        "call", "sleep", "--arg", "ms=10", "--task", "--url", &srv.url, "--json",
    ]));
    let v: serde_json::Value = serde_json::from_str(stdout(&o).trim()).unwrap();
    let id = v["task"]["taskId"].as_str().unwrap().to_owned();
    let mut watch = cli(&["tasks", "watch", &id, "--url", &srv.url, "--json"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(watch.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let _ = watch.kill();
    let _ = watch.wait();
    let v: serde_json::Value = serde_json::from_str(line.trim()).unwrap();
    assert_eq!(v["task"]["taskId"], id.as_str());
    assert_eq!(v["task"]["status"], "completed");
}
