//! The CLI against a server without tasks (`serve --no-tasks`): spoken to in 2026-07-28
//! its `server/discover` declares no tasks extension, so every `tasks` command is refused
//! by the client alike (exit 4, nothing sent, one message naming the missing extension);
//! Ctrl-C during a call leaves at once, with no word of a task to wait for.
#![allow(missing_docs)]

use crate::client_support::{HttpServer, cli_auto, json_out, run, stderr};
use crate::term_support::{bin, ctrl_c, expect, pty, sleep};

#[test]
fn every_tasks_command_is_refused_alike_without_the_extension() {
    let srv = HttpServer::start(&["--no-tasks"]);
    for args in [
        vec!["get", "t-1"],
        vec!["cancel", "t-1"],
        vec!["result", "t-1"],
        vec!["list"],
        vec!["watch"],
        vec!["watch", "t-1"],
    ] {
        let mut all = vec!["tasks"];
        all.extend_from_slice(&args);
        all.extend(["--url", &srv.url, "--json", "--protocol", "modern"]);
        let o = run(&mut cli_auto(&all));
        assert_eq!(o.status.code(), Some(4), "{args:?}: {}", stderr(&o));
        let v = json_out(&o);
        let message = v["error"]["message"].as_str().unwrap_or_default();
        assert!(
            message
                .contains("does not declare the tasks extension (io.modelcontextprotocol/tasks)"),
            "{args:?}: {v}"
        );
        assert!(v["error"]["unsupported"].is_object(), "nothing sent: {v}");
    }
}

#[test]
fn ctrl_c_during_a_call_to_a_server_without_tasks_leaves_at_once() {
    for protocol in ["modern", "legacy"] {
        let r = pty(
            &[
                bin(),
                "call",
                "sleep",
                "--arg",
                "ms=60000",
                "--protocol",
                protocol,
                "--",
                bin(),
                "serve",
                "--stdio",
                "--store",
                "memory",
                "--no-tasks",
            ],
            &[
                expect("sleep · running"),
                sleep(0.3),
                ctrl_c(),
                expect("mcp-tasks: interrupted"),
            ],
        );
        assert_eq!(r.exit, Some(130), "{protocol}: {}", r.transcript);
        assert!(
            !r.transcript.contains("waiting for its task"),
            "{protocol}: {}",
            r.transcript
        );
    }
}
