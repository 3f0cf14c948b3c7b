//! Typed tools: arguments as a Rust type, input schema derived with `schemars`.

use std::future::Future;
use std::marker::PhantomData;
use std::sync::Arc;

use async_trait::async_trait;
use mcp_tasks_proto::{CallToolResult, ErrorObject};
use schemars::JsonSchema;
use schemars::generate::SchemaSettings;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::tool::{Tool, ToolContext, ToolHandler};
use crate::tool_error::ToolError;

struct TypedHandler<A, F> {
    name: String,
    f: F,
    args: PhantomData<fn() -> A>,
}

#[async_trait]
impl<A, F, Fut, R> ToolHandler for TypedHandler<A, F>
where
    A: DeserializeOwned + Send + 'static,
    F: Fn(A, ToolContext) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<R, ToolError>> + Send + 'static,
    R: Into<CallToolResult> + 'static,
{
    async fn call(&self, args: Value, cx: ToolContext) -> Result<CallToolResult, ErrorObject> {
        // The session checked `args` against the schema derived from `A`; what the schema
        // cannot say (a custom `Deserialize`, `deny_unknown_fields` on a flattened
        // struct, ...) still fails here, and is still the model's to fix: an `isError`
        // result, not a protocol error.
        let a = match A::deserialize(args) {
            Ok(a) => a,
            Err(e) => {
                return Ok(CallToolResult::error(format!(
                    "Invalid arguments for tool `{}`: {e}",
                    self.name
                )));
            }
        };
        crate::tool_error::outcome((self.f)(a, cx).await)
    }
}

/// The JSON Schema of `T` as MCP wants a tool's `inputSchema`/`outputSchema`: draft
/// 2020-12, an object at the top.
///
/// Spec (schema, `Tool.inputSchema`): "A JSON Schema object defining the expected
/// parameters for the tool." with `"type": "object"` required at its top. A schema without
/// a top-level `type` (an untagged enum of structs) gets `"type": "object"`: arguments are
/// always an object.
///
/// # Panics
/// When `T`'s schema has a top-level `type` other than `"object"` (a tool's arguments
/// cannot be a number or a list): a programming error, caught the first time the tool is
/// built.
pub fn object_schema_for<T: JsonSchema + ?Sized>(serialize: bool) -> Value {
    let mut settings = SchemaSettings::draft2020_12();
    if serialize {
        settings = settings.for_serialize();
    }
    let mut v = settings
        .into_generator()
        .into_root_schema_for::<T>()
        .to_value();
    if let Value::Object(m) = &mut v {
        match m.get("type") {
            None => {
                m.insert("type".into(), Value::from("object"));
            }
            Some(t) if t == "object" => {}
            Some(t) => panic!(
                "the JSON Schema of `{}` has type {t}: a tool's arguments and structured results must be JSON objects (a struct)",
                std::any::type_name::<T>()
            ),
        }
    }
    v
}

impl Tool {
    /// A tool whose arguments are the Rust type `A`.
    ///
    /// The input schema is derived from `A` (draft 2020-12, `#[schemars(...)]` and doc
    /// comments included); the session validates the arguments against it before `f`
    /// runs, so bounds written as attributes are enforced without code in `f`, and a
    /// violation gives an `isError` result naming the field and the bound (see
    /// [`Tool::check_arguments`]). `f` returns anything that converts into a
    /// [`CallToolResult`] (a `String`, a [`CallToolResult`], ...), or fails with a
    /// [`ToolError`]: `?` on an ordinary error (`std::io::Error`, ...) gives an `isError`
    /// result with its text, [`ToolError::rpc`] the call's JSON-RPC error.
    /// Task support defaults to none (forbidden), as for [`Tool::new`].
    ///
    /// ```
    /// use mcp_tasks_proto::mcp::TaskSupport;
    /// use mcp_tasks_server::Tool;
    /// use schemars::JsonSchema;
    /// use serde::Deserialize;
    ///
    /// #[derive(Deserialize, JsonSchema)]
    /// struct Forecast {
    ///     /// The city.
    ///     city: String,
    ///     /// How many days ahead.
    ///     #[schemars(range(min = 1, max = 7))]
    ///     #[serde(default = "three")]
    ///     days: u8,
    /// }
    /// fn three() -> u8 { 3 }
    ///
    /// let tool = Tool::typed("forecast", "Weather forecast", |a: Forecast, _cx| async move {
    ///     Ok(format!("{}: sunny for {} days", a.city, a.days))
    /// })
    /// .task_support(TaskSupport::Optional);
    /// assert_eq!(tool.input_schema["properties"]["days"]["maximum"], 7);
    /// let bad = tool.check_arguments(&serde_json::json!({"city": "Oslo", "days": 9})).unwrap_err();
    /// assert!(bad.is_error);
    /// assert!(bad.first_text().unwrap().contains("days: 9 is greater than the maximum of 7"));
    /// ```
    ///
    /// # Panics
    /// When `A`'s schema is not an object schema (see [`object_schema_for`]).
    pub fn typed<A, F, Fut, R>(
        name: impl Into<String>,
        description: impl Into<String>,
        f: F,
    ) -> Self
    where
        A: DeserializeOwned + JsonSchema + Send + 'static,
        F: Fn(A, ToolContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<R, ToolError>> + Send + 'static,
        R: Into<CallToolResult> + 'static,
    {
        let name = name.into();
        let handler = Arc::new(TypedHandler {
            name: name.clone(),
            f,
            args: PhantomData,
        });
        Self::with_handler(name, description, object_schema_for::<A>(false), handler)
    }

    /// Set `outputSchema` to the JSON Schema of `T` (as it serialises): the tool's results
    /// then carry `structuredContent` of type `T`, e.g. from
    /// [`CallToolResult::try_structured`].
    ///
    /// # Panics
    /// When `T`'s schema is not an object schema (see [`object_schema_for`]).
    #[must_use]
    pub fn output_schema_for<T: JsonSchema + ?Sized>(self) -> Self {
        self.output_schema(object_schema_for::<T>(true))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mcp_tasks_proto::mcp::TaskSupport;
    use serde::{Deserialize, Serialize};
    use serde_json::json;

    #[derive(Deserialize, JsonSchema)]
    #[serde(deny_unknown_fields)]
    struct Forecast {
        /// The city.
        city: String,
        /// Days ahead.
        #[schemars(range(min = 1, max = 7))]
        #[serde(default = "three")]
        days: u8,
    }

    fn three() -> u8 {
        3
    }

    #[derive(Serialize, JsonSchema)]
    struct Weather {
        temp: i32,
    }

    fn forecast() -> Tool {
        Tool::typed("forecast", "Weather", |a: Forecast, _cx| async move {
            Ok(format!("{} {}", a.city, a.days))
        })
        .task_support(TaskSupport::Optional)
        .output_schema_for::<Weather>()
    }

    #[test]
    fn the_derived_schema_is_a_valid_mcp_input_schema() {
        let t = forecast();
        let s = &t.input_schema;
        assert_eq!(s["type"], "object");
        assert_eq!(s["required"], json!(["city"]));
        assert_eq!(s["properties"]["days"]["minimum"], 1);
        assert_eq!(s["properties"]["days"]["maximum"], 7);
        assert_eq!(s["properties"]["days"]["default"], 3);
        assert_eq!(s["additionalProperties"], false);
        let listing = t.to_listing(true);
        assert_eq!(listing["outputSchema"]["type"], "object");
        assert_eq!(listing["outputSchema"]["required"], json!(["temp"]));
        mcp_tasks_testkit::schema::validate_def("Tool", &listing).unwrap();
    }

    #[test]
    fn bounds_and_required_fields_are_enforced_with_field_names() {
        let t = forecast();
        assert!(t.check_arguments(&json!({"city": "Oslo"})).is_ok());
        let text = |args| {
            let r = t.check_arguments(&args).unwrap_err();
            assert!(r.is_error);
            r.first_text().unwrap().to_owned()
        };
        assert_eq!(
            text(json!({"city": "Oslo", "days": 9})),
            "Invalid arguments for tool `forecast`: days: 9 is greater than the maximum of 7"
        );
        assert!(text(json!({"days": 2})).contains("\"city\" is a required property"));
        assert!(text(json!({"city": "x", "extra": 1})).contains("Additional properties"));
    }

    #[tokio::test]
    async fn the_handler_gets_typed_arguments_and_a_failed_deserialisation_is_an_is_error_result() {
        use mcp_tasks_core::RequestorChannel;

        struct Nobody;
        #[async_trait]
        impl RequestorChannel for Nobody {
            async fn notify(&self, _: &str, _: Value) {}
            async fn request(&self, _: &str, _: Value) -> Result<Value, ErrorObject> {
                Err(ErrorObject::new(-32603, "no requestor"))
            }
        }
        let cx = || {
            ToolContext::new(
                Arc::new(Nobody),
                None,
                tokio_util::sync::CancellationToken::new(),
                Arc::new(json!({})),
                None,
            )
        };
        let t = forecast();
        let r = t.handler.call(json!({"city": "Oslo"}), cx()).await.unwrap();
        assert_eq!(r, CallToolResult::text("Oslo 3"));
        // Not schema-checked here (the session does that): serde still refuses.
        let r = t.handler.call(json!({"city": 5}), cx()).await.unwrap();
        assert!(r.is_error);
        assert!(
            r.first_text()
                .unwrap()
                .starts_with("Invalid arguments for tool `forecast`: invalid type"),
            "{r:?}"
        );
    }

    #[test]
    #[should_panic(expected = "must be JSON objects")]
    fn a_non_object_argument_type_is_refused() {
        let _ = Tool::typed("n", "", |_: u32, _cx| async move { Ok("x") });
    }
}
