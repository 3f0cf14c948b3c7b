//! Gateway over Streamable HTTP with several sessions: each session has its own upstream
//! connection (docs/adr/0002), so two sessions eliciting at once each get only their own
//! elicitation, and each answer goes back to the upstream call that asked.

use crate::gateway_common;

use gateway_common::{Fake, HttpUpstream};
use serde_json::Value;

fn call_ask(url: &str, question: &str, answer: &str) -> std::thread::JoinHandle<Value> {
    let (url, question, reply) = (
        url.to_owned(),
        format!("question={question}"),
        format!("{{\"answer\":\"{answer}\"}}"),
    );
    std::thread::spawn(move || {
        gateway_common::cli_json(&[
            "call",
            "ask",
            "--task",
            "--arg",
            &question,
            "--elicit-reply",
            &reply,
            "--url",
            &url,
            "--json",
        ])
    })
}

#[test]
fn two_sessions_eliciting_at_once_each_get_only_their_own() {
    let fake = Fake::new("sessions", false);
    let args = fake.args();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let gateway = HttpUpstream::start(&args);
    for round in 0..3 {
        let a = call_ask(
            &gateway.url,
            &format!("first-{round}"),
            &format!("one-{round}"),
        );
        let b = call_ask(
            &gateway.url,
            &format!("second-{round}"),
            &format!("two-{round}"),
        );
        let (a, b) = (a.join().unwrap(), b.join().unwrap());
        let text = |v: &Value| {
            v["result"]["content"][0]["text"]
                .as_str()
                .unwrap()
                .to_owned()
        };
        assert!(text(&a).contains(&format!("one-{round}")), "{a}");
        assert!(!text(&a).contains("two-"), "{a}");
        assert!(text(&b).contains(&format!("two-{round}")), "{b}");
        assert!(!text(&b).contains("one-"), "{b}");
    }
    // One upstream connection (here: process) per downstream session.
    let inits = fake
        .received()
        .iter()
        .filter(|m| m["method"] == "initialize")
        .count();
    assert_eq!(inits, 6);
}
