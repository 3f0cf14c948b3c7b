//! Prompts a server offers: templated messages a client fetches with `prompts/get`.
//!
//! Spec (2025-11-25, prompts): "Prompts allow servers to provide structured messages and
//! instructions for interacting with language models. Clients can discover available
//! prompts, retrieve their contents, and provide arguments to customize them."

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::Arc;

use async_trait::async_trait;
use mcp_tasks_proto::{ContentBlock, ErrorObject};
use serde::Serialize;
use serde_json::{Map, Value, json};

pub use super::asking::PromptContext;
use super::complete::{Completer, FnCompleter};

/// Who a prompt message is from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// The user.
    User,
    /// The assistant.
    Assistant,
}

/// One message of a prompt (`PromptMessage`): text, an image, audio, a resource link or
/// an embedded resource.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PromptMessage {
    /// From the user or the assistant.
    pub role: Role,
    /// The content.
    pub content: ContentBlock,
}

impl PromptMessage {
    /// A message from the user.
    pub fn user(content: ContentBlock) -> Self {
        Self {
            role: Role::User,
            content,
        }
    }

    /// A message from the assistant.
    pub fn assistant(content: ContentBlock) -> Self {
        Self {
            role: Role::Assistant,
            content,
        }
    }
}

/// The result of `prompts/get`.
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
pub struct GetPromptResult {
    /// A description of the prompt, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The messages.
    pub messages: Vec<PromptMessage>,
}

impl GetPromptResult {
    /// A result of these messages.
    pub fn new(messages: Vec<PromptMessage>) -> Self {
        Self {
            description: None,
            messages,
        }
    }
}

impl From<Vec<PromptMessage>> for GetPromptResult {
    fn from(messages: Vec<PromptMessage>) -> Self {
        Self::new(messages)
    }
}

/// Makes a prompt's messages from its arguments.
#[async_trait]
pub trait PromptHandler: Send + Sync + 'static {
    /// The messages for `arguments` (the required ones are present); `cx` asks the client
    /// for more ([`PromptContext::ask`]).
    async fn get(
        &self,
        arguments: BTreeMap<String, String>,
        cx: PromptContext,
    ) -> Result<GetPromptResult, ErrorObject>;
}

struct FnPrompt<F>(F);

#[async_trait]
impl<F, Fut> PromptHandler for FnPrompt<F>
where
    F: Fn(BTreeMap<String, String>, PromptContext) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<GetPromptResult, ErrorObject>> + Send + 'static,
{
    async fn get(
        &self,
        arguments: BTreeMap<String, String>,
        cx: PromptContext,
    ) -> Result<GetPromptResult, ErrorObject> {
        (self.0)(arguments, cx).await
    }
}

/// An argument a prompt takes (`PromptArgument`).
#[derive(Clone)]
pub struct PromptArgument {
    /// Its name.
    pub name: String,
    /// What it is, if said.
    pub description: Option<String>,
    /// Whether `prompts/get` must give it.
    pub required: bool,
    completer: Option<Arc<dyn Completer>>,
}

mcp_tasks_proto::debug_non_exhaustive!(PromptArgument, |s| { name: s.name, required: s.required });

/// A prompt, listed by `prompts/list` and expanded by `prompts/get`.
#[derive(Clone)]
pub struct Prompt {
    /// Its name.
    pub name: String,
    /// The other fields of its listing (`title`, `description`, `icons`, ...).
    pub extra: Map<String, Value>,
    /// Its arguments, in listing order.
    pub arguments: Vec<PromptArgument>,
    handler: Arc<dyn PromptHandler>,
}

mcp_tasks_proto::debug_non_exhaustive!(Prompt, |s| { name: s.name });

impl Prompt {
    /// A prompt whose messages `f` makes from the arguments (declare them with
    /// [`Self::argument`]).
    pub fn new<F, Fut>(name: impl Into<String>, description: impl Into<String>, f: F) -> Self
    where
        F: Fn(BTreeMap<String, String>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<GetPromptResult, ErrorObject>> + Send + 'static,
    {
        Self::asking(name, description, move |args, _cx| f(args))
    }

    /// A prompt whose handler may ask the client for input while it makes the messages
    /// ([`PromptContext::ask`]). In 2026-07-28 the handler is run again for every round
    /// of questions: it must ask the same questions, in the same way, for the same
    /// arguments and answers.
    pub fn asking<F, Fut>(name: impl Into<String>, description: impl Into<String>, f: F) -> Self
    where
        F: Fn(BTreeMap<String, String>, PromptContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<GetPromptResult, ErrorObject>> + Send + 'static,
    {
        let mut extra = Map::new();
        extra.insert("description".into(), Value::from(description.into()));
        Self {
            name: name.into(),
            extra,
            arguments: Vec::new(),
            handler: Arc::new(FnPrompt(f)),
        }
    }

    /// Declare an argument.
    #[must_use]
    pub fn argument(
        mut self,
        name: impl Into<String>,
        description: impl Into<String>,
        required: bool,
    ) -> Self {
        self.arguments.push(PromptArgument {
            name: name.into(),
            description: Some(description.into()),
            required,
            completer: None,
        });
        self
    }

    /// Complete the value of `argument` (declared already) with `f`: given the partial
    /// value and the arguments already resolved, the candidates. An argument not declared
    /// is declared, optional.
    #[must_use]
    pub fn complete<F, Fut>(mut self, argument: &str, f: F) -> Self
    where
        F: Fn(String, BTreeMap<String, String>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Vec<String>> + Send + 'static,
    {
        let completer: Arc<dyn Completer> = Arc::new(FnCompleter(f));
        match self.arguments.iter_mut().find(|a| a.name == argument) {
            Some(a) => a.completer = Some(completer),
            None => self.arguments.push(PromptArgument {
                name: argument.to_owned(),
                description: None,
                required: false,
                completer: Some(completer),
            }),
        }
        self
    }

    /// Set `title`, the display name.
    #[must_use]
    pub fn title(mut self, title: impl Into<String>) -> Self {
        self.extra.insert("title".into(), Value::from(title.into()));
        self
    }

    /// The `prompts/list` entry.
    pub fn to_listing(&self) -> Value {
        let mut m = self.extra.clone();
        m.insert("name".into(), Value::from(self.name.clone()));
        if !self.arguments.is_empty() {
            let args: Vec<Value> = self
                .arguments
                .iter()
                .map(|a| {
                    let mut v = json!({ "name": a.name, "required": a.required });
                    if let Some(d) = &a.description {
                        v["description"] = json!(d);
                    }
                    v
                })
                .collect();
            m.insert("arguments".into(), Value::Array(args));
        }
        Value::Object(m)
    }

    /// The completer of `argument`, if it has one.
    pub(crate) fn completer(&self, argument: &str) -> Option<&Arc<dyn Completer>> {
        self.arguments
            .iter()
            .find(|a| a.name == argument)
            .and_then(|a| a.completer.as_ref())
    }

    /// Whether any argument has a completer.
    pub(crate) fn completes(&self) -> bool {
        self.arguments.iter().any(|a| a.completer.is_some())
    }

    /// Serve `prompts/get` of this prompt with `arguments` (`params.arguments`).
    ///
    /// Spec (prompts, "Error Handling"): "Missing required arguments: -32602 (Invalid
    /// params)".
    ///
    /// # Errors
    /// -32602 for a missing required argument or a value that is not a string; the
    /// handler's errors.
    pub(crate) async fn get(
        &self,
        arguments: Option<&Value>,
        cx: PromptContext,
    ) -> Result<Value, ErrorObject> {
        let mut args = BTreeMap::new();
        match arguments {
            None | Some(Value::Null) => {}
            Some(Value::Object(m)) => {
                for (k, v) in m {
                    let Some(s) = v.as_str() else {
                        return Err(ErrorObject::invalid_params(format!(
                            "argument `{k}` of prompt `{}` must be a string",
                            self.name
                        )));
                    };
                    args.insert(k.clone(), s.to_owned());
                }
            }
            Some(_) => {
                return Err(ErrorObject::invalid_params("`arguments` must be an object"));
            }
        }
        if let Some(missing) = self
            .arguments
            .iter()
            .find(|a| a.required && !args.contains_key(&a.name))
        {
            return Err(ErrorObject::invalid_params(format!(
                "prompt `{}` needs the argument `{}`",
                self.name, missing.name
            )));
        }
        let result = self.handler.get(args, cx).await?;
        serde_json::to_value(result).map_err(ErrorObject::internal)
    }
}

#[cfg(feature = "schemars")]
impl Prompt {
    /// A prompt whose arguments are the string fields of `A`: their names, doc
    /// comments (`description`) and whether they are required (not `Option`, no
    /// `#[serde(default)]`) come from `A`'s JSON Schema. `prompts/get` arguments that
    /// do not deserialize into `A` get -32602.
    pub fn typed<A, F, Fut, R>(
        name: impl Into<String>,
        description: impl Into<String>,
        f: F,
    ) -> Self
    where
        A: serde::de::DeserializeOwned + schemars::JsonSchema + Send + 'static,
        F: Fn(A) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<R, ErrorObject>> + Send + 'static,
        R: Into<GetPromptResult> + 'static,
    {
        let name = name.into();
        let schema = crate::typed::object_schema_for::<A>(false);
        let required: Vec<&str> = schema["required"]
            .as_array()
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let mut arguments = Vec::new();
        if let Some(props) = schema["properties"].as_object() {
            for (arg, s) in props {
                arguments.push(PromptArgument {
                    name: arg.clone(),
                    description: s["description"].as_str().map(str::to_owned),
                    required: required.contains(&arg.as_str()),
                    completer: None,
                });
            }
        }
        let who = name.clone();
        let f = Arc::new(f);
        let mut p = Self::new(name, description, move |args: BTreeMap<String, String>| {
            let f = Arc::clone(&f);
            let who = who.clone();
            async move {
                let value = serde_json::to_value(args).map_err(ErrorObject::internal)?;
                let a = A::deserialize(value).map_err(|e| {
                    ErrorObject::invalid_params(format!(
                        "invalid arguments for prompt `{who}`: {e}"
                    ))
                })?;
                f.as_ref()(a).await.map(Into::into)
            }
        });
        p.arguments = arguments;
        p
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cx() -> PromptContext {
        PromptContext::new(None, json!({}), BTreeMap::new())
    }

    fn greet() -> Prompt {
        Prompt::new("greet", "Greets", |args| async move {
            Ok(GetPromptResult::new(vec![PromptMessage::user(
                ContentBlock::text(format!("hello {}", args["name"])),
            )]))
        })
        .argument("name", "Who", true)
    }

    #[tokio::test]
    async fn get_expands_the_arguments_and_refuses_a_missing_required_one() {
        let r = greet()
            .get(Some(&json!({"name": "Ada"})), cx())
            .await
            .unwrap();
        assert_eq!(
            r,
            json!({"messages": [{"role": "user", "content": {"type": "text", "text": "hello Ada"}}]})
        );
        let e = greet().get(Some(&json!({})), cx()).await.unwrap_err();
        assert_eq!(e.code, -32602);
        assert!(e.message.contains("`name`"), "{}", e.message);
        let e = greet()
            .get(Some(&json!({"name": 3})), cx())
            .await
            .unwrap_err();
        assert_eq!(e.code, -32602);
    }

    #[test]
    fn the_listing_names_the_arguments() {
        assert_eq!(
            greet().title("Greeting").to_listing(),
            json!({
                "name": "greet", "title": "Greeting", "description": "Greets",
                "arguments": [{"name": "name", "description": "Who", "required": true}]
            })
        );
    }

    #[cfg(feature = "schemars")]
    #[derive(serde::Deserialize, schemars::JsonSchema)]
    struct Args {
        /// The city.
        city: String,
        /// How warm, optionally.
        mood: Option<String>,
    }

    #[cfg(feature = "schemars")]
    #[tokio::test]
    async fn a_typed_prompt_takes_its_arguments_from_the_type() {
        let p = Prompt::typed("weather", "W", |a: Args| async move {
            let text = format!("{} {}", a.city, a.mood.unwrap_or_default());
            Ok(vec![PromptMessage::assistant(ContentBlock::text(text))])
        });
        let listing = p.to_listing();
        assert_eq!(
            listing["arguments"],
            json!([
                {"name": "city", "description": "The city.", "required": true},
                {"name": "mood", "description": "How warm, optionally.", "required": false}
            ])
        );
        let r = p.get(Some(&json!({"city": "Oslo"})), cx()).await.unwrap();
        assert_eq!(r["messages"][0]["role"], "assistant");
        assert_eq!(r["messages"][0]["content"]["text"], "Oslo ");
        assert_eq!(p.get(None, cx()).await.unwrap_err().code, -32602);
    }
}
