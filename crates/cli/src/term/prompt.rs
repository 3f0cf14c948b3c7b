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

use mcp_tasks_client::{ServerRequest, elicit, sampling, sampling_refused};
use mcp_tasks_proto::ErrorObject;
use serde_json::{Map, Value, json};

use crate::term::input::Lines;
use crate::term::interrupt::Interrupts;
use crate::term::{Screen, bold, dim};

/// One choice of an enum.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Choice {
    /// The value sent.
    pub(crate) value: String,
    /// What the user sees.
    pub(crate) label: String,
}

/// What a field accepts.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Kind {
    /// A string, maybe of a `format`, maybe bounded in length.
    Text {
        format: Option<String>,
        min_length: Option<u64>,
        max_length: Option<u64>,
    },
    /// A number (`integer` for whole numbers only), maybe bounded.
    Number {
        integer: bool,
        minimum: Option<f64>,
        maximum: Option<f64>,
    },
    /// Yes or no.
    Boolean,
    /// One of the choices.
    Choice(Vec<Choice>),
    /// Any of the choices (an array).
    Choices {
        options: Vec<Choice>,
        min_items: Option<u64>,
        max_items: Option<u64>,
    },
}

/// One field of a form.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Field {
    pub(crate) name: String,
    pub(crate) title: Option<String>,
    pub(crate) description: Option<String>,
    pub(crate) kind: Kind,
    pub(crate) required: bool,
    pub(crate) default: Option<Value>,
}

fn text_of(v: &Value, key: &str) -> Option<String> {
    v.get(key).and_then(Value::as_str).map(str::to_owned)
}

/// Choices from `enum` (+ `enumNames`) or from `oneOf`/`anyOf` of `{const, title}`.
fn choices(prop: &Value) -> Option<Vec<Choice>> {
    if let Some(values) = prop.get("enum").and_then(Value::as_array) {
        let names = prop.get("enumNames").and_then(Value::as_array);
        return Some(
            values
                .iter()
                .enumerate()
                .map(|(i, v)| {
                    let value = v.as_str().map_or_else(|| v.to_string(), str::to_owned);
                    let label = names
                        .and_then(|n| n.get(i))
                        .and_then(Value::as_str)
                        .map_or_else(|| value.clone(), str::to_owned);
                    Choice { value, label }
                })
                .collect(),
        );
    }
    let list = prop
        .get("oneOf")
        .or_else(|| prop.get("anyOf"))
        .and_then(Value::as_array)?;
    let options: Vec<Choice> = list
        .iter()
        .filter_map(|o| {
            let c = o.get("const")?;
            let value = c.as_str().map_or_else(|| c.to_string(), str::to_owned);
            let label = text_of(o, "title").unwrap_or_else(|| value.clone());
            Some(Choice { value, label })
        })
        .collect();
    (!options.is_empty()).then_some(options)
}

fn kind_of(name: &str, prop: &Value) -> Result<Kind, String> {
    let ty = prop.get("type").and_then(Value::as_str);
    if ty == Some("array") {
        let items = prop.get("items").unwrap_or(&Value::Null);
        let Some(options) = choices(items) else {
            return Err(format!(
                "field `{name}`: an array without enumerated items cannot be asked"
            ));
        };
        return Ok(Kind::Choices {
            options,
            min_items: prop.get("minItems").and_then(Value::as_u64),
            max_items: prop.get("maxItems").and_then(Value::as_u64),
        });
    }
    if let Some(options) = choices(prop) {
        return Ok(Kind::Choice(options));
    }
    match ty {
        Some("string") | None => Ok(Kind::Text {
            format: text_of(prop, "format"),
            min_length: prop.get("minLength").and_then(Value::as_u64),
            max_length: prop.get("maxLength").and_then(Value::as_u64),
        }),
        Some(t @ ("number" | "integer")) => Ok(Kind::Number {
            integer: t == "integer",
            minimum: prop.get("minimum").and_then(Value::as_f64),
            maximum: prop.get("maximum").and_then(Value::as_f64),
        }),
        Some("boolean") => Ok(Kind::Boolean),
        Some(other) => Err(format!(
            "field `{name}`: type `{other}` cannot be asked at a prompt"
        )),
    }
}

/// The fields of a `requestedSchema`: the required ones first (in `required` order),
/// then the others by name.
///
/// # Errors
/// A property of a type no prompt can ask.
pub(crate) fn form(schema: Option<&Value>) -> Result<Vec<Field>, String> {
    let empty = Map::new();
    let props = schema
        .and_then(|s| s.get("properties"))
        .and_then(Value::as_object)
        .unwrap_or(&empty);
    let required: Vec<&str> = schema
        .and_then(|s| s.get("required"))
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let mut names: Vec<&String> = props.keys().collect();
    names.sort_by_key(|n| {
        (
            required.iter().position(|r| r == n).unwrap_or(usize::MAX),
            (*n).clone(),
        )
    });
    names
        .into_iter()
        .map(|name| {
            let prop = &props[name];
            Ok(Field {
                name: name.clone(),
                title: text_of(prop, "title"),
                description: text_of(prop, "description"),
                kind: kind_of(name, prop)?,
                required: required.contains(&name.as_str()),
                default: prop.get("default").cloned(),
            })
        })
        .collect()
}

fn bound(x: f64) -> String {
    if x.fract() == 0.0 && x.abs() < 1e15 {
        format!("{x:.0}")
    } else {
        x.to_string()
    }
}

impl Field {
    /// What the prompt says: `label (hints) [default]: `.
    pub(crate) fn prompt(&self) -> String {
        let mut hints: Vec<String> = Vec::new();
        match &self.kind {
            Kind::Text {
                format,
                min_length,
                max_length,
            } => {
                hints.push("text".into());
                if let Some(f) = format {
                    hints.push(match f.as_str() {
                        "date" => "date YYYY-MM-DD".into(),
                        "date-time" => "date-time YYYY-MM-DDThh:mm:ssZ".into(),
                        other => other.into(),
                    });
                }
                match (min_length, max_length) {
                    (Some(a), Some(b)) => hints.push(format!("{a}-{b} characters")),
                    (Some(a), None) => hints.push(format!("at least {a} characters")),
                    (None, Some(b)) => hints.push(format!("at most {b} characters")),
                    (None, None) => {}
                }
            }
            Kind::Number {
                integer,
                minimum,
                maximum,
            } => {
                hints.push(if *integer { "integer" } else { "number" }.into());
                match (minimum, maximum) {
                    (Some(a), Some(b)) => hints.push(format!("{} to {}", bound(*a), bound(*b))),
                    (Some(a), None) => hints.push(format!("≥ {}", bound(*a))),
                    (None, Some(b)) => hints.push(format!("≤ {}", bound(*b))),
                    (None, None) => {}
                }
            }
            Kind::Boolean => hints.push("y/n".into()),
            Kind::Choice(options) => hints.push(format!("1-{}", options.len())),
            Kind::Choices { options, .. } => {
                hints.push(format!("any of 1-{}, comma-separated", options.len()));
            }
        }
        if self.required {
            hints.push("required".into());
        }
        let label = self.title.as_deref().unwrap_or(&self.name);
        let mut p = format!("{label} ({})", hints.join(", "));
        if let Some(d) = &self.default {
            p.push_str(&format!(" [{}]", self.show(d)));
        }
        p.push_str(": ");
        p
    }

    /// A value as the user would type it.
    fn show(&self, v: &Value) -> String {
        match (&self.kind, v) {
            (Kind::Boolean, Value::Bool(b)) => if *b { "y" } else { "n" }.into(),
            (Kind::Choices { options, .. }, Value::Array(vs)) => vs
                .iter()
                .map(|x| Self::show_choice(options, x))
                .collect::<Vec<_>>()
                .join(","),
            (Kind::Choice(options), x) => Self::show_choice(options, x),
            (_, Value::String(s)) => s.clone(),
            (_, other) => other.to_string(),
        }
    }

    fn show_choice(options: &[Choice], v: &Value) -> String {
        let s = v.as_str().map_or_else(|| v.to_string(), str::to_owned);
        options
            .iter()
            .find(|c| c.value == s)
            .map_or(s, |c| c.label.clone())
    }

    /// Read an answer: `Ok(None)` leaves an optional field out.
    ///
    /// # Errors
    /// Why the answer does not fit (said to the user, who is asked again).
    pub(crate) fn parse(&self, input: &str) -> Result<Option<Value>, String> {
        let input = input.trim();
        if input.is_empty() {
            return match (&self.default, self.required) {
                (Some(d), _) => Ok(Some(d.clone())),
                (None, true) => Err("an answer is required".into()),
                (None, false) => Ok(None),
            };
        }
        match &self.kind {
            Kind::Text {
                format,
                min_length,
                max_length,
            } => {
                let n = input.chars().count() as u64;
                if min_length.is_some_and(|m| n < m) || max_length.is_some_and(|m| n > m) {
                    return Err(match (min_length, max_length) {
                        (Some(a), Some(b)) => format!("between {a} and {b} characters, please"),
                        (Some(a), None) => format!("at least {a} characters, please"),
                        (_, Some(b)) => format!("at most {b} characters, please"),
                        (None, None) => unreachable!("a bound was broken"),
                    });
                }
                if let Some(f) = format {
                    check_format(f, input)?;
                }
                Ok(Some(json!(input)))
            }
            Kind::Number {
                integer,
                minimum,
                maximum,
            } => {
                let v = if *integer {
                    let i: i64 = input
                        .parse()
                        .map_err(|_| format!("`{input}` is not a whole number"))?;
                    json!(i)
                } else {
                    let x: f64 = input
                        .parse()
                        .ok()
                        .filter(|x: &f64| x.is_finite())
                        .ok_or_else(|| format!("`{input}` is not a number"))?;
                    json!(x)
                };
                let x = v.as_f64().unwrap_or(0.0);
                if minimum.is_some_and(|m| x < m) || maximum.is_some_and(|m| x > m) {
                    return Err(match (minimum, maximum) {
                        (Some(a), Some(b)) => {
                            format!("from {} to {}, please", bound(*a), bound(*b))
                        }
                        (Some(a), None) => format!("at least {}, please", bound(*a)),
                        (_, Some(b)) => format!("at most {}, please", bound(*b)),
                        (None, None) => unreachable!("a bound was broken"),
                    });
                }
                Ok(Some(v))
            }
            Kind::Boolean => match input.to_ascii_lowercase().as_str() {
                "y" | "yes" | "true" | "1" => Ok(Some(json!(true))),
                "n" | "no" | "false" | "0" => Ok(Some(json!(false))),
                _ => Err("yes or no (y/n), please".into()),
            },
            Kind::Choice(options) => pick(options, input).map(|c| Some(json!(c.value))),
            Kind::Choices {
                options,
                min_items,
                max_items,
            } => {
                let mut picked: Vec<Value> = Vec::new();
                for part in input.split(',').map(str::trim).filter(|p| !p.is_empty()) {
                    let c = pick(options, part)?;
                    if !picked.contains(&json!(c.value)) {
                        picked.push(json!(c.value));
                    }
                }
                let n = picked.len() as u64;
                if min_items.is_some_and(|m| n < m) || max_items.is_some_and(|m| n > m) {
                    return Err(format!(
                        "choose {} items, please",
                        match (min_items, max_items) {
                            (Some(a), Some(b)) => format!("{a} to {b}"),
                            (Some(a), None) => format!("at least {a}"),
                            (_, Some(b)) => format!("at most {b}"),
                            (None, None) => unreachable!("a bound was broken"),
                        }
                    ));
                }
                Ok(Some(Value::Array(picked)))
            }
        }
    }
}

/// A choice by number (1-based), value or label.
fn pick<'a>(options: &'a [Choice], input: &str) -> Result<&'a Choice, String> {
    if let Ok(n) = input.parse::<usize>()
        && (1..=options.len()).contains(&n)
    {
        return Ok(&options[n - 1]);
    }
    options
        .iter()
        .find(|c| c.value == input)
        .or_else(|| {
            options.iter().find(|c| {
                c.label.eq_ignore_ascii_case(input) || c.value.eq_ignore_ascii_case(input)
            })
        })
        .ok_or_else(|| format!("`{input}` is not one of the choices (1-{})", options.len()))
}

fn check_format(format: &str, s: &str) -> Result<(), String> {
    let ok = match format {
        "email" => s.split_once('@').is_some_and(|(local, domain)| {
            !local.is_empty()
                && domain.contains('.')
                && !domain.starts_with('.')
                && !domain.ends_with('.')
                && !domain.contains('@')
                && !s.chars().any(char::is_whitespace)
        }),
        "uri" => s.split_once(':').is_some_and(|(scheme, rest)| {
            scheme.starts_with(|c: char| c.is_ascii_alphabetic())
                && scheme
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c))
                && !rest.is_empty()
                && !s.chars().any(char::is_whitespace)
        }),
        "date" => s.len() == 10 && humantime::parse_rfc3339_weak(&format!("{s}T00:00:00Z")).is_ok(),
        "date-time" => s.contains('T') && humantime::parse_rfc3339_weak(s).is_ok(),
        _ => true,
    };
    if ok {
        Ok(())
    } else {
        Err(match format {
            "email" => "an email address like name@example.com, please".into(),
            "uri" => "a URI like https://example.com/, please".into(),
            "date" => "a date like 2025-11-25, please".into(),
            "date-time" => "a date and time like 2025-11-25T10:30:00Z, please".into(),
            other => format!("a {other}, please"),
        })
    }
}

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

    fn schema() -> Value {
        json!({
            "type": "object",
            "properties": {
                "name": {"type": "string", "title": "Name", "minLength": 2},
                "email": {"type": "string", "format": "email"},
                "age": {"type": "integer", "minimum": 0, "maximum": 150, "default": 30},
                "score": {"type": "number"},
                "subscribe": {"type": "boolean", "default": false},
                "color": {"type": "string", "enum": ["r", "g"], "enumNames": ["Red", "Green"]},
                "size": {"type": "string", "oneOf": [{"const": "s", "title": "Small"}, {"const": "l", "title": "Large"}]},
                "tags": {"type": "array", "items": {"type": "string", "enum": ["a", "b", "c"]}, "maxItems": 2},
            },
            "required": ["subscribe", "name", "color"],
        })
    }

    fn field(name: &str) -> Field {
        form(Some(&schema()))
            .unwrap()
            .into_iter()
            .find(|f| f.name == name)
            .unwrap()
    }

    #[test]
    fn required_fields_come_first_in_their_order() {
        let names: Vec<String> = form(Some(&schema()))
            .unwrap()
            .into_iter()
            .map(|f| f.name)
            .collect();
        assert_eq!(
            names,
            [
                "subscribe",
                "name",
                "color",
                "age",
                "email",
                "score",
                "size",
                "tags"
            ]
        );
        assert!(form(None).unwrap().is_empty());
        assert!(form(Some(&json!({"properties": {"x": {"type": "object"}}}))).is_err());
    }

    #[test]
    fn prompts_show_hints_and_defaults() {
        assert_eq!(
            field("name").prompt(),
            "Name (text, at least 2 characters, required): "
        );
        assert_eq!(field("email").prompt(), "email (text, email): ");
        assert_eq!(field("age").prompt(), "age (integer, 0 to 150) [30]: ");
        assert_eq!(
            field("subscribe").prompt(),
            "subscribe (y/n, required) [n]: "
        );
        assert_eq!(field("color").prompt(), "color (1-2, required): ");
        assert_eq!(
            field("tags").prompt(),
            "tags (any of 1-3, comma-separated): "
        );
    }

    #[test]
    fn answers_are_typed_and_checked() {
        let name = field("name");
        assert_eq!(name.parse("Ada").unwrap(), Some(json!("Ada")));
        assert!(name.parse("").is_err(), "required");
        assert!(name.parse("A").is_err(), "too short");

        let email = field("email");
        assert_eq!(email.parse("").unwrap(), None, "optional: left out");
        assert!(email.parse("a@b.c").is_ok());
        assert!(email.parse("nope").is_err());
        assert!(email.parse("a@b").is_err());

        let age = field("age");
        assert_eq!(age.parse("").unwrap(), Some(json!(30)), "the default");
        assert_eq!(age.parse(" 42 ").unwrap(), Some(json!(42)));
        assert!(age.parse("4.5").is_err());
        assert!(age.parse("151").is_err());
        assert!(age.parse("-1").is_err());
        assert_eq!(field("score").parse("2.5").unwrap(), Some(json!(2.5)));
        assert!(field("score").parse("NaN").is_err());

        let sub = field("subscribe");
        assert_eq!(sub.parse("y").unwrap(), Some(json!(true)));
        assert_eq!(sub.parse("No").unwrap(), Some(json!(false)));
        assert_eq!(sub.parse("").unwrap(), Some(json!(false)));
        assert!(sub.parse("maybe").is_err());

        let color = field("color");
        assert_eq!(color.parse("2").unwrap(), Some(json!("g")));
        assert_eq!(color.parse("red").unwrap(), Some(json!("r")));
        assert_eq!(color.parse("g").unwrap(), Some(json!("g")));
        assert!(color.parse("3").is_err());
        assert!(color.parse("").is_err());
        assert_eq!(field("size").parse("Large").unwrap(), Some(json!("l")));

        let tags = field("tags");
        assert_eq!(tags.parse("1, c").unwrap(), Some(json!(["a", "c"])));
        assert!(tags.parse("1,2,3").is_err(), "at most 2");
    }

    #[test]
    fn formats_are_checked() {
        assert!(check_format("uri", "https://example.com/x").is_ok());
        assert!(check_format("uri", "example.com").is_err());
        assert!(check_format("date", "2025-11-25").is_ok());
        assert!(check_format("date", "2025-13-01").is_err());
        assert!(check_format("date-time", "2025-11-25T10:30:00Z").is_ok());
        assert!(check_format("date-time", "yesterday").is_err());
        assert!(check_format("something-else", "anything").is_ok());
    }

    #[test]
    fn sampling_content_is_shown_as_text() {
        assert_eq!(content_text(&json!({"type": "text", "text": "hi"})), "hi");
        assert_eq!(
            content_text(&json!([{"type": "text", "text": "a"}, {"type": "image", "data": ""}])),
            "a\n[image]"
        );
    }
}
