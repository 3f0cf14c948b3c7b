//! `mcp-tasks call` on a terminal (a pseudo-terminal): the live line, questions answered
//! at prompts (an `ask`, a form with a boolean, an enum and a defaulted integer, a
//! sampling request, a task-augmented elicitation run as a task of the CLI), and Ctrl-C
//! (cancelling a `sleep` task, which the server then reports `cancelled`; a second Ctrl-C
//! leaving at once).
#![allow(missing_docs)]

use crate::term_support as term;

use serde_json::{Value, json};
use term::{
    HttpServer, bin, cli, ctrl_c, expect, json_out, our_server, pty, run, scripted_server, send,
    sleep,
};

fn call(args: &[&str], server: &[&str]) -> Vec<String> {
    let mut argv = vec![bin().to_owned(), "call".to_owned()];
    argv.extend(args.iter().map(|s| (*s).to_owned()));
    argv.extend(server.iter().map(|s| (*s).to_owned()));
    argv
}

fn refs(v: &[String]) -> Vec<&str> {
    v.iter().map(String::as_str).collect()
}

/// The task id in "task ID created".
fn created_id(transcript: &str) -> String {
    let at = transcript
        .find(" created (Ctrl-C cancels it)")
        .expect("a created line");
    let start = transcript[..at].rfind("task ").expect("task ID") + 5;
    transcript[start..at].to_owned()
}

/// The JSON text a fake-server tool returned, from the transcript.
fn reported(transcript: &str) -> Value {
    let line = transcript
        .lines()
        .rev()
        .find(|l| l.trim_start().starts_with('{'))
        .unwrap_or_else(|| panic!("no JSON in:\n{transcript}"));
    serde_json::from_str(line.trim()).unwrap_or_else(|e| panic!("{e}: {line}"))
}

#[test]
fn an_ask_is_answered_at_the_prompt() {
    let argv = call(
        &["ask", "--arg", "question=Favourite colour?"],
        &our_server(),
    );
    let r = pty(
        &refs(&argv),
        &[
            expect("? Favourite colour?"),
            expect("Answer? [Y]es, [n]o (decline), [c]ancel: "),
            send("\r"),
            expect("answer (text, required): "),
            // Required: an empty answer is refused, then asked again.
            send("\r"),
            expect("an answer is required"),
            expect("answer (text, required): "),
            send("teal\r"),
            expect("→ sent"),
            expect("completed in"),
            expect("teal"),
        ],
    );
    assert_eq!(r.exit, Some(0), "{}", r.transcript);
    let id = created_id(&r.transcript);
    assert!(
        r.transcript.contains(&format!("(for task {id})")),
        "{}",
        r.transcript
    );
}

#[test]
fn a_form_with_a_boolean_an_enum_and_a_default() {
    let argv = call(&["form"], &scripted_server());
    let r = pty(
        &refs(&argv),
        &[
            expect("? Order a pizza?"),
            expect("[c]ancel: "),
            send("y\r"),
            expect("Confirm the order (y/n, required): "),
            send("maybe\r"),
            expect("yes or no (y/n), please"),
            expect("Confirm the order (y/n, required): "),
            send("yes\r"),
            expect("1) Small"),
            expect("2) Medium"),
            expect("3) Large"),
            expect("size (1-3, required): "),
            send("4\r"),
            expect("is not one of the choices (1-3)"),
            expect("size (1-3, required): "),
            send("2\r"),
            expect("count (integer, 1 to 5) [1]: "),
            send("\r"),
            expect("→ sent"),
        ],
    );
    assert_eq!(r.exit, Some(0), "{}", r.transcript);
    assert_eq!(
        reported(&r.transcript),
        json!({"action": "accept", "content": {"confirm": true, "size": "m", "count": 1}})
    );

    // Declined, and cancelled.
    for (key, action) in [("n\r", "decline"), ("c\r", "cancel")] {
        let r = pty(
            &refs(&argv),
            &[
                expect("[c]ancel: "),
                send(key),
                expect(&format!("→ {action}")),
            ],
        );
        assert_eq!(r.exit, Some(0), "{}", r.transcript);
        assert_eq!(reported(&r.transcript), json!({"action": action}));
    }
}

#[test]
fn a_task_augmented_elicitation_is_answered_at_the_prompt_as_a_task_of_the_cli() {
    let argv = call(&["task_form"], &scripted_server());
    let r = pty(
        &refs(&argv),
        &[
            expect("? Order a pizza?"),
            expect("(run as task "),
            expect("[c]ancel: "),
            // The server polls meanwhile: the task is working.
            sleep(0.5),
            send("\r"),
            expect("(y/n, required): "),
            send("n\r"),
            expect("size (1-3, required): "),
            send("large\r"),
            expect("[1]: "),
            send("3\r"),
            expect("→ sent"),
        ],
    );
    assert_eq!(r.exit, Some(0), "{}", r.transcript);
    let v = reported(&r.transcript);
    let id = v["created"]["taskId"].as_str().unwrap();
    assert_eq!(v["created"]["status"], "working");
    assert!(
        r.transcript
            .contains(&format!("(run as task {id} of this client)"))
    );
    let statuses = v["statuses"].as_array().unwrap();
    assert_eq!(statuses.first(), Some(&json!("working")), "{v}");
    assert_eq!(statuses.last(), Some(&json!("completed")), "{v}");
    assert_eq!(
        v["result"],
        json!({"action": "accept", "content": {"confirm": false, "size": "l", "count": 3},
               "_meta": {"io.modelcontextprotocol/related-task": {"taskId": id}}})
    );
}

#[test]
fn a_sampling_request_shows_the_messages_and_sends_the_typed_reply() {
    let argv = call(
        &["summarize", "--arg", "text=The quick brown fox.", "--task"],
        &our_server(),
    );
    let r = pty(
        &refs(&argv),
        &[
            expect("The server asks for a model reply (sampling)"),
            expect("user: Summarize the following text in one line:"),
            expect("The quick brown fox."),
            expect("(at most 200 tokens)"),
            expect("Your reply (an empty line declines): "),
            send("A fox, quickly.\r"),
            expect("completed in"),
            expect("A fox, quickly."),
        ],
    );
    assert_eq!(r.exit, Some(0), "{}", r.transcript);
}

#[test]
fn the_live_line_shows_status_time_and_a_progress_bar() {
    let argv = call(
        &["progress", "--arg", "steps=4", "--arg", "ms=300", "--task"],
        &our_server(),
    );
    let r = pty(&refs(&argv), &[expect("completed in"), expect("done 4")]);
    assert_eq!(r.exit, Some(0), "{}", r.transcript);
    // Drawn in place: carriage return and erase-line, status, elapsed time, the bar.
    assert!(r.raw.contains("\r\x1b[2K"), "{:?}", r.raw);
    assert!(
        r.transcript.contains("progress · working · "),
        "{}",
        r.transcript
    );
    assert!(r.transcript.contains("█████"), "{}", r.transcript);
    assert!(r.transcript.contains("/4"), "{}", r.transcript);
    assert!(
        ["⠋", "⠙", "⠹", "⠸"]
            .iter()
            .any(|s| r.transcript.contains(s)),
        "no spinner: {}",
        r.transcript
    );
    // Not a line per change, as in a pipe.
    assert!(!r.transcript.contains(": working"), "{}", r.transcript);
}

#[test]
fn ctrl_c_cancels_the_task_and_the_server_reports_it_cancelled() {
    let srv = HttpServer::start(&[]);
    let argv = call(
        &["sleep", "--arg", "ms=60000", "--task", "--url", &srv.url],
        &[],
    );
    let r = pty(
        &refs(&argv),
        &[
            expect(" created (Ctrl-C cancels it)"),
            sleep(0.3),
            ctrl_c(),
            expect("mcp-tasks: interrupted: cancelling task "),
            expect("(Ctrl-C again to leave it running)"),
            expect(" cancelled"),
        ],
    );
    assert_eq!(r.exit, Some(130), "{}", r.transcript);
    let id = created_id(&r.transcript);
    assert!(
        r.transcript
            .contains(&format!("mcp-tasks: task {id} cancelled")),
        "{}",
        r.transcript
    );
    // The server says so too.
    let o = run(&mut cli(&[
        "tasks", "get", &id, "--url", &srv.url, "--json",
    ]));
    let v = json_out(&o);
    assert_eq!(v["task"]["status"], "cancelled", "{v}");
}

#[test]
fn a_second_ctrl_c_leaves_at_once_with_the_task_id() {
    // The scripted server never answers tasks/cancel.
    let argv = call(&["hang", "--task"], &scripted_server());
    let r = pty(
        &refs(&argv),
        &[
            expect("task hang-1 created (Ctrl-C cancels it)"),
            ctrl_c(),
            expect("cancelling task hang-1"),
            sleep(0.3),
            ctrl_c(),
            expect(
                "mcp-tasks: left task hang-1 running; `mcp-tasks tasks result hang-1` picks it up again",
            ),
        ],
    );
    assert_eq!(r.exit, Some(130), "{}", r.transcript);
}

#[test]
fn ctrl_c_at_a_prompt_cancels_the_task_that_asked() {
    let srv = HttpServer::start(&[]);
    let argv = call(
        &["ask", "--arg", "question=Really?", "--url", &srv.url],
        &[],
    );
    let r = pty(
        &refs(&argv),
        &[
            expect("? Really?"),
            expect("[c]ancel: "),
            ctrl_c(),
            expect("mcp-tasks: interrupted: cancelling task "),
            expect(" cancelled"),
        ],
    );
    assert_eq!(r.exit, Some(130), "{}", r.transcript);
    let id = created_id(&r.transcript);
    // The question was not answered: the task did not complete, it was cancelled.
    let o = run(&mut cli(&[
        "tasks", "get", &id, "--url", &srv.url, "--json",
    ]));
    assert_eq!(json_out(&o)["task"]["status"], "cancelled");
}

#[test]
fn a_task_picked_up_by_id_is_followed_live_and_cancelled_with_ctrl_c() {
    let srv = HttpServer::start(&[]);
    // Started by a process that then goes away (the task runs on).
    let mut starter = cli(&[
        "call", "sleep", "--arg", "ms=60000", "--task", "--url", &srv.url,
    ])
    .spawn()
    .unwrap();
    let mut line = String::new();
    let mut err = std::io::BufReader::new(starter.stderr.take().unwrap());
    while !line.contains(": working") {
        line.clear();
        assert!(std::io::BufRead::read_line(&mut err, &mut line).unwrap() > 0);
    }
    let _ = starter.kill();
    let _ = starter.wait();
    let id = line["task ".len()..line.find(": working").unwrap()].to_owned();

    let r = pty(
        &[bin(), "tasks", "result", &id, "--url", &srv.url],
        &[
            expect(&format!("task {id} resumed (Ctrl-C cancels it)")),
            expect(" · working · "),
            ctrl_c(),
            expect(&format!("mcp-tasks: task {id} cancelled")),
        ],
    );
    assert_eq!(r.exit, Some(130), "{}", r.transcript);
}
