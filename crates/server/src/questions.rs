//! Typed questions of a tool to its client: [`ToolContext::elicit`] asks for a Rust type
//! (the requested schema derived from it, the answer parsed into it) and
//! [`ToolContext::sample`] takes a [`Sampling`] request and answers a [`Sampled`] message.
//! The untyped forms, for a caller that passes JSON through (a gateway), are
//! [`ToolContext::elicit_raw`] and [`ToolContext::sample_raw`].

use mcp_tasks_proto::ErrorObject;
use serde::Deserialize;
use serde_json::{Map, Value, json};

use crate::tool::ToolContext;

/// The client's answer to a typed [`ToolContext::elicit`].
///
/// Spec (elicitation, 2025-11-25): "Elicitation responses use a three-action model to
/// clearly distinguish between different user actions": `accept` ("User explicitly
/// approved and submitted with data"), `decline` ("User explicitly declined the
/// request") and `cancel` ("User dismissed without making an explicit choice").
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Elicitation<T> {
    /// `accept`: the submitted `content`, parsed.
    Accepted(T),
    /// `decline`.
    Declined,
    /// `cancel`.
    Cancelled,
}

impl<T> Elicitation<T> {
    /// The accepted answer, `None` when declined or cancelled.
    pub fn accepted(self) -> Option<T> {
        match self {
            Self::Accepted(t) => Some(t),
            Self::Declined | Self::Cancelled => None,
        }
    }
}

/// A `sampling/createMessage` request for [`ToolContext::sample`]: the messages, the
/// token budget and the optional fields.
///
/// ```
/// use mcp_tasks_server::Sampling;
///
/// let request = Sampling::prompt("Summarise the report", 200).system_prompt("Be brief");
/// # let _ = request;
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Sampling {
    /// The `SamplingMessage`s, in order (`{role, content}`).
    pub messages: Vec<Value>,
    /// `maxTokens`: "The requested maximum number of tokens to sample".
    pub max_tokens: u32,
    /// `systemPrompt`, if any.
    pub system_prompt: Option<String>,
    /// `temperature`, if any.
    pub temperature: Option<f64>,
    /// Other fields of the request (`modelPreferences`, `stopSequences`, `tools`, ...),
    /// sent unchanged.
    pub extra: Map<String, Value>,
}

impl Sampling {
    /// No messages yet, at most `max_tokens` tokens.
    pub fn new(max_tokens: u32) -> Self {
        Self {
            messages: Vec::new(),
            max_tokens,
            system_prompt: None,
            temperature: None,
            extra: Map::new(),
        }
    }

    /// One user message with the text `prompt`, at most `max_tokens` tokens.
    pub fn prompt(prompt: impl Into<String>, max_tokens: u32) -> Self {
        Self::new(max_tokens).user(prompt)
    }

    /// Add a user message with this text.
    #[must_use]
    pub fn user(self, text: impl Into<String>) -> Self {
        self.message("user", text.into())
    }

    /// Add an assistant message with this text.
    #[must_use]
    pub fn assistant(self, text: impl Into<String>) -> Self {
        self.message("assistant", text.into())
    }

    fn message(mut self, role: &str, text: String) -> Self {
        self.messages.push(json!({
            "role": role,
            "content": { "type": "text", "text": text },
        }));
        self
    }

    /// Set `systemPrompt`.
    #[must_use]
    pub fn system_prompt(mut self, prompt: impl Into<String>) -> Self {
        self.system_prompt = Some(prompt.into());
        self
    }

    /// Set `temperature`.
    #[must_use]
    pub fn temperature(mut self, temperature: f64) -> Self {
        self.temperature = Some(temperature);
        self
    }

    /// Set another field of the request (`modelPreferences`, `stopSequences`, ...).
    #[must_use]
    pub fn field(mut self, name: impl Into<String>, value: Value) -> Self {
        self.extra.insert(name.into(), value);
        self
    }

    /// The request's params.
    fn into_params(self) -> Value {
        let mut params = self.extra;
        params.insert("messages".into(), Value::Array(self.messages));
        params.insert("maxTokens".into(), json!(self.max_tokens));
        if let Some(p) = self.system_prompt {
            params.insert("systemPrompt".into(), json!(p));
        }
        if let Some(t) = self.temperature {
            params.insert("temperature".into(), json!(t));
        }
        Value::Object(params)
    }
}

/// The client's answer to [`ToolContext::sample`] (a `CreateMessageResult`).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[non_exhaustive]
pub struct Sampled {
    /// "The name of the model that generated the message."
    pub model: String,
    /// The role of the message (`assistant`).
    pub role: String,
    /// "The reason why sampling stopped, if known" (`endTurn`, `maxTokens`, ...).
    #[serde(rename = "stopReason", default)]
    pub stop_reason: Option<String>,
    /// The content: one block, or a list of blocks.
    pub content: Value,
}

impl Sampled {
    /// The content blocks, in order.
    pub fn blocks(&self) -> Vec<&Value> {
        match &self.content {
            Value::Array(blocks) => blocks.iter().collect(),
            one => vec![one],
        }
    }

    /// The text of the `text` blocks, joined.
    pub fn text(&self) -> String {
        self.blocks()
            .into_iter()
            .filter(|b| b.get("type").and_then(Value::as_str) == Some("text"))
            .filter_map(|b| b.get("text").and_then(Value::as_str))
            .collect()
    }
}

impl ToolContext {
    /// Ask the user, through the client, for a `T` (`elicitation/create` in form mode):
    /// the `requestedSchema` is `T`'s JSON Schema (a flat struct of strings, numbers,
    /// booleans and enums, as the spec allows), and the answer is parsed into `T`.
    ///
    /// Spec (elicitation, 2025-11-25): "Form mode elicitation requests MUST either specify
    /// a schema or use the default structure", restricted to "flat objects with primitive
    /// properties only".
    ///
    /// ```no_run
    /// # use mcp_tasks_server::{Elicitation, ToolContext, ToolError};
    /// # use schemars::JsonSchema;
    /// # use serde::Deserialize;
    /// #[derive(Deserialize, JsonSchema)]
    /// struct Confirm {
    ///     /// Delete it?
    ///     confirm: bool,
    /// }
    /// # async fn f(cx: ToolContext) -> Result<String, ToolError> {
    /// Ok(match cx.elicit::<Confirm>("Delete report.pdf?").await? {
    ///     Elicitation::Accepted(Confirm { confirm: true }) => "deleted".into(),
    ///     Elicitation::Accepted(_) | Elicitation::Declined | Elicitation::Cancelled => "kept".into(),
    /// })
    /// # }
    /// ```
    ///
    /// # Errors
    /// As for [`Self::elicit_raw`] (the client's error; -32021 or -32601 when it did not
    /// declare form elicitation); -32603 when an accepted answer does not parse as `T`.
    #[cfg(feature = "schemars")]
    pub async fn elicit<T>(&self, message: impl Into<String>) -> Result<Elicitation<T>, ErrorObject>
    where
        T: schemars::JsonSchema + serde::de::DeserializeOwned,
    {
        let params = json!({
            "message": message.into(),
            "requestedSchema": requested_schema::<T>(),
        });
        elicitation(self.elicit_raw(params).await?)
    }

    /// Ask the client to sample a message (`sampling/createMessage`).
    ///
    /// # Errors
    /// As for [`Self::sample_raw`] (the client's error; -32021 or -32601 when it did not
    /// declare `sampling`); -32603 when its answer is not a `CreateMessageResult`.
    pub async fn sample(&self, request: Sampling) -> Result<Sampled, ErrorObject> {
        let answer = self.sample_raw(request.into_params()).await?;
        Sampled::deserialize(answer).map_err(|e| {
            ErrorObject::internal(format!(
                "the client's answer to sampling/createMessage is not a CreateMessageResult: {e}"
            ))
        })
    }
}

/// The JSON Schema of `T` as an elicitation's `requestedSchema`: `$schema`, `type`,
/// `properties`, `required` (what the spec's restricted subset has at its top); an
/// optional field's `["T", "null"]` type is `T` (it is simply not required), and numbers
/// lose schemars' `format` (`uint8`, ...), which only strings have in that subset.
#[cfg(feature = "schemars")]
pub(crate) fn requested_schema<T: schemars::JsonSchema>() -> Value {
    let mut schema = crate::object_schema_for::<T>(false);
    if let Value::Object(m) = &mut schema {
        m.retain(|k, _| matches!(k.as_str(), "$schema" | "type" | "properties" | "required"));
        let properties = m
            .entry("properties")
            .or_insert_with(|| Value::Object(Map::new()));
        if let Value::Object(props) = properties {
            for p in props.values_mut().filter_map(Value::as_object_mut) {
                let single = match p.get("type") {
                    Some(Value::Array(types)) => {
                        let plain: Vec<&Value> = types.iter().filter(|t| *t != "null").collect();
                        match plain.as_slice() {
                            [one] => Some((*one).clone()),
                            _ => None,
                        }
                    }
                    _ => None,
                };
                if let Some(t) = single {
                    p.insert("type".into(), t);
                }
                if p.get("type").and_then(Value::as_str) != Some("string") {
                    p.remove("format");
                }
            }
        }
    }
    schema
}

/// An `ElicitResult` as an [`Elicitation`] of `T`.
#[cfg(feature = "schemars")]
fn elicitation<T: serde::de::DeserializeOwned>(
    answer: Value,
) -> Result<Elicitation<T>, ErrorObject> {
    match answer.get("action").and_then(Value::as_str) {
        Some("accept") => {
            let content = answer.get("content").cloned().unwrap_or_else(|| json!({}));
            T::deserialize(content)
                .map(Elicitation::Accepted)
                .map_err(|e| {
                    ErrorObject::internal(format!(
                        "the client's accepted elicitation does not fit the requested schema: {e}"
                    ))
                })
        }
        Some("decline") => Ok(Elicitation::Declined),
        Some("cancel") => Ok(Elicitation::Cancelled),
        _ => Err(ErrorObject::internal(
            "the client's answer to elicitation/create has no `action` of accept, decline or cancel",
        )),
    }
}

#[cfg(all(test, feature = "schemars"))]
mod tests {
    use super::*;
    use schemars::JsonSchema;

    #[derive(Debug, PartialEq, Deserialize, JsonSchema)]
    struct Contact {
        /// The name.
        name: String,
        /// The age.
        age: u8,
        /// A note.
        note: Option<String>,
    }

    #[test]
    fn the_requested_schema_is_the_flat_subset() {
        let s = requested_schema::<Contact>();
        assert_eq!(s["type"], "object");
        assert_eq!(s["required"], json!(["name", "age"]));
        assert_eq!(s["properties"]["age"]["type"], "integer");
        assert!(s["properties"]["age"].get("format").is_none());
        assert_eq!(s["properties"]["note"]["type"], "string");
        assert!(s.get("title").is_none());
        let params = json!({"message": "Who?", "requestedSchema": s});
        mcp_tasks_testkit::schema::validate_def("ElicitRequestFormParams", &params).unwrap();
    }

    #[test]
    fn answers_parse_into_the_type_or_the_outcome() {
        let ok: Elicitation<Contact> =
            elicitation(json!({"action": "accept", "content": {"name": "Ann", "age": 30}}))
                .unwrap();
        assert_eq!(
            ok.accepted(),
            Some(Contact {
                name: "Ann".into(),
                age: 30,
                note: None
            })
        );
        let d: Elicitation<Contact> = elicitation(json!({"action": "decline"})).unwrap();
        assert_eq!(d, Elicitation::Declined);
        let c: Elicitation<Contact> = elicitation(json!({"action": "cancel"})).unwrap();
        assert_eq!(c, Elicitation::Cancelled);
        let bad = elicitation::<Contact>(json!({"action": "accept", "content": {"age": 1}}));
        assert_eq!(bad.unwrap_err().code, -32603);
    }

    #[test]
    fn a_sampling_request_and_its_answer() {
        let p = Sampling::prompt("Hi", 10)
            .system_prompt("Be brief")
            .field("stopSequences", json!(["\n"]))
            .into_params();
        assert_eq!(p["maxTokens"], 10);
        assert_eq!(p["messages"][0]["content"]["text"], "Hi");
        assert_eq!(p["systemPrompt"], "Be brief");
        mcp_tasks_testkit::schema::validate_def("CreateMessageRequestParams", &p).unwrap();
        let a: Sampled = serde_json::from_value(json!({
            "model": "m", "role": "assistant",
            "content": [{"type": "text", "text": "Hel"}, {"type": "text", "text": "lo"}]
        }))
        .unwrap();
        assert_eq!(a.text(), "Hello");
        assert_eq!(a.stop_reason, None);
    }
}
