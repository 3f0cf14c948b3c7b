//! Elicitation and sampling answered at prompts on a terminal.
//!
//! A form elicitation's `requestedSchema` (a flat object of primitive properties, as the
//! spec restricts it) becomes one prompt per field: strings (with their `format`: email,
//! uri, date, date-time, and length bounds), numbers and integers (with their bounds),
//! booleans, single-choice enums (`enum` with optional `enumNames`, or `oneOf` of
//! `{const, title}`) and multi-choice arrays of them. Required fields must be answered;
//! defaults are offered and taken on Enter; a bad answer is explained and asked again.
//! First the user chooses to answer (accept), decline, or cancel.
//!
//! A prompt gives up (answering `cancel`) at the end of input, or when the server
//! withdraws the request (the request or its task is cancelled). On Ctrl-C it stops
//! asking and leaves the question unanswered while the task that asked is cancelled.
//!
//! * `form`: the fields of a `requestedSchema` and their prompts;
//! * `answer`: an answer read and checked against its field.

mod answer;
mod form;

use mcp_tasks_client::{ServerRequest, elicit, sampling, sampling_refused};
use mcp_tasks_proto::ErrorObject;
use serde_json::{Map, Value};

use crate::term::input::Lines;
use crate::term::interrupt::Interrupts;
use crate::term::{Screen, bold, dim};
use form::{Kind, form};

/// What came of waiting for a line.
enum Read {
    Line(String),
    /// End of input, or the request was withdrawn.
    GaveUp(&'static str),
}

/// One line, unless the user or the server gives up first.
///
/// On Ctrl-C the question is left unanswered until the server withdraws it: the same
/// Ctrl-C cancels the task that asked ([`crate::call::follow`]), and an answer sent now
/// could let that task complete first.
async fn read(request: &ServerRequest, interrupts: &mut Interrupts) -> Read {
    tokio::select! {
        l = Lines::get().next() => match l {
            Some(l) => Read::Line(l),
            None => Read::GaveUp("end of input"),
        },
        () = interrupts.next() => {
            Screen::get().line("");
            request.cancel.cancelled().await;
            Read::GaveUp("interrupted")
        }
        () = request.cancel.cancelled() => Read::GaveUp("the server withdrew the request"),
    }
}

/// Who asks, for the header.
fn origin(request: &ServerRequest) -> String {
    match (&request.task_id, &request.related_task) {
        (Some(t), _) => dim(&format!("  (run as task {t} of this client)")),
        (None, Some(t)) => dim(&format!("  (for task {t})")),
        (None, None) => String::new(),
    }
}

/// Serialises prompts: one question on screen at a time.
fn turn() -> &'static tokio::sync::Mutex<()> {
    static TURN: std::sync::OnceLock<tokio::sync::Mutex<()>> = std::sync::OnceLock::new();
    TURN.get_or_init(|| tokio::sync::Mutex::new(()))
}

/// Ask the user to answer an elicitation; returns the `ElicitResult`.
pub(crate) async fn elicit(request: &ServerRequest) -> Value {
    let _turn = turn().lock().await;
    let screen = Screen::get();
    let _hold = screen.hold();
    let mut interrupts = Interrupts::new();
    let gave_up = |why: &str| {
        screen.line(&format!("\n  → cancelled ({why})"));
        elicit::cancel()
    };
    screen.line(&format!(
        "{} {}{}",
        bold("?"),
        request.message(),
        origin(request)
    ));
    if request.mode() == "url" {
        let url = request
            .params
            .get("url")
            .and_then(Value::as_str)
            .unwrap_or("");
        screen.line(&format!("  Open {url}"));
    }
    let fields = if request.mode() == "url" {
        Vec::new()
    } else {
        match form(request.requested_schema()) {
            Ok(f) => f,
            Err(e) => {
                screen.line(&format!("  → declined: {e}"));
                return elicit::decline();
            }
        }
    };
    loop {
        let q = if request.mode() == "url" {
            "  Done? [Y]es, [n]o (decline), [c]ancel: "
        } else {
            "  Answer? [Y]es, [n]o (decline), [c]ancel: "
        };
        screen.write(q);
        let line = match read(request, &mut interrupts).await {
            Read::Line(l) => l,
            Read::GaveUp(why) => return gave_up(why),
        };
        match line.trim().to_ascii_lowercase().as_str() {
            "" | "y" | "yes" | "a" | "accept" => break,
            "n" | "no" | "d" | "decline" => {
                screen.line("  → declined");
                return elicit::decline();
            }
            "c" | "cancel" => {
                screen.line("  → cancelled");
                return elicit::cancel();
            }
            _ => screen.line("    y, n or c, please"),
        }
    }
    let mut content = Map::new();
    for field in &fields {
        if let Some(d) = &field.description {
            screen.line(&format!("  {}", dim(d)));
        }
        if let Kind::Choice(options) | Kind::Choices { options, .. } = &field.kind {
            for (i, c) in options.iter().enumerate() {
                screen.line(&format!("    {}) {}", i + 1, c.label));
            }
        }
        loop {
            screen.write(&format!("  {}", field.prompt()));
            let line = match read(request, &mut interrupts).await {
                Read::Line(l) => l,
                Read::GaveUp(why) => return gave_up(why),
            };
            match field.parse(&line) {
                Ok(Some(v)) => {
                    content.insert(field.name.clone(), v);
                    break;
                }
                Ok(None) => break,
                Err(e) => screen.line(&format!("    ✗ {e}")),
            }
        }
    }
    screen.line("  → sent");
    elicit::accept(Value::Object(content))
}

/// The text of a sampling message's content (one block or several).
fn content_text(content: &Value) -> String {
    let blocks: Vec<&Value> = match content {
        Value::Array(b) => b.iter().collect(),
        other => vec![other],
    };
    blocks
        .iter()
        .map(|b| match b.get("type").and_then(Value::as_str) {
            Some("text") => b
                .get("text")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_owned(),
            Some(t) => format!("[{t}]"),
            None => b.to_string(),
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Show a sampling request and ask the user for the reply; an empty reply declines.
pub(crate) async fn sample(request: &ServerRequest) -> Result<Value, ErrorObject> {
    let _turn = turn().lock().await;
    let screen = Screen::get();
    let _hold = screen.hold();
    let mut interrupts = Interrupts::new();
    screen.line(&format!(
        "{} The server asks for a model reply (sampling){}",
        bold("?"),
        origin(request)
    ));
    if let Some(system) = request.params.get("systemPrompt").and_then(Value::as_str) {
        screen.line(&format!("  {} {}", dim("system:"), system));
    }
    for m in request.messages() {
        let role = m.get("role").and_then(Value::as_str).unwrap_or("?");
        let text = content_text(m.get("content").unwrap_or(&Value::Null));
        let mut lines = text.lines();
        screen.line(&format!(
            "  {} {}",
            dim(&format!("{role}:")),
            lines.next().unwrap_or("")
        ));
        for l in lines {
            screen.line(&format!("    {l}"));
        }
    }
    if let Some(n) = request.params.get("maxTokens").and_then(Value::as_u64) {
        screen.line(&format!("  {}", dim(&format!("(at most {n} tokens)"))));
    }
    screen.write("  Your reply (an empty line declines): ");
    match read(request, &mut interrupts).await {
        Read::Line(l) if !l.trim().is_empty() => {
            screen.line("  → sent");
            Ok(sampling::text(
                "mcp-tasks-cli (typed by the user)",
                l.trim(),
            ))
        }
        Read::Line(_) => {
            screen.line("  → declined");
            Err(sampling_refused("the user declined"))
        }
        Read::GaveUp(why) => {
            screen.line(&format!("\n  → declined ({why})"));
            Err(sampling_refused(why))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn sampling_content_is_shown_as_text() {
        assert_eq!(content_text(&json!({"type": "text", "text": "hi"})), "hi");
        assert_eq!(
            content_text(&json!([{"type": "text", "text": "a"}, {"type": "image", "data": ""}])),
            "a\n[image]"
        );
    }
}
