//! `completion/complete`: candidates for a prompt argument or a resource template
//! variable.
//!
//! Spec (2025-11-25, completion): "Servers MUST return an array of completion values
//! ranked by relevance, with: Maximum 100 items per response".

use std::collections::BTreeMap;
use std::future::Future;

use async_trait::async_trait;
use mcp_tasks_proto::ErrorObject;
use serde_json::{Value, json};

/// The most values one answer carries (the spec's maximum); `total` and `hasMore` say
/// how many there were.
pub const MAX_COMPLETION_VALUES: usize = 100;

/// Completes one argument.
#[async_trait]
pub trait Completer: Send + Sync + 'static {
    /// The candidates for `value` (the partial value typed so far), given the arguments
    /// already resolved (`context.arguments`).
    async fn complete(&self, value: String, context: BTreeMap<String, String>) -> Vec<String>;
}

pub(crate) struct FnCompleter<F>(pub(crate) F);

#[async_trait]
impl<F, Fut> Completer for FnCompleter<F>
where
    F: Fn(String, BTreeMap<String, String>) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Vec<String>> + Send + 'static,
{
    async fn complete(&self, value: String, context: BTreeMap<String, String>) -> Vec<String> {
        (self.0)(value, context).await
    }
}

/// The parsed params of `completion/complete`.
pub(crate) struct CompleteParams {
    /// `ref`: `{"type": "ref/prompt", "name"}` or `{"type": "ref/resource", "uri"}`.
    pub(crate) reference: Reference,
    /// `argument.name`.
    pub(crate) argument: String,
    /// `argument.value`.
    pub(crate) value: String,
    /// `context.arguments`.
    pub(crate) context: BTreeMap<String, String>,
}

/// What is being completed.
pub(crate) enum Reference {
    /// An argument of the prompt of this name.
    Prompt(String),
    /// A variable of the resource template of this URI template.
    Resource(String),
}

/// Read the params of `completion/complete`.
///
/// # Errors
/// -32602 naming the field that is missing or of the wrong type.
pub(crate) fn parse(params: Option<&Value>) -> Result<CompleteParams, ErrorObject> {
    let p = params.unwrap_or(&Value::Null);
    let str_at = |v: &Value, key: &str, what: &str| -> Result<String, ErrorObject> {
        v.get(key)
            .and_then(Value::as_str)
            .map(str::to_owned)
            .ok_or_else(|| ErrorObject::invalid_params(format!("`{what}` must be a string")))
    };
    let r = p.get("ref").unwrap_or(&Value::Null);
    let reference = match r.get("type").and_then(Value::as_str) {
        Some("ref/prompt") => Reference::Prompt(str_at(r, "name", "ref.name")?),
        Some("ref/resource") => Reference::Resource(str_at(r, "uri", "ref.uri")?),
        _ => {
            return Err(ErrorObject::invalid_params(
                "`ref.type` must be `ref/prompt` or `ref/resource`",
            ));
        }
    };
    let a = p.get("argument").unwrap_or(&Value::Null);
    let context = p
        .get("context")
        .and_then(|c| c.get("arguments"))
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_owned())))
                .collect()
        })
        .unwrap_or_default();
    Ok(CompleteParams {
        reference,
        argument: str_at(a, "name", "argument.name")?,
        value: str_at(a, "value", "argument.value")?,
        context,
    })
}

/// The `CompleteResult` of `values`: at most [`MAX_COMPLETION_VALUES`], with `total` and
/// `hasMore`.
pub(crate) fn result(mut values: Vec<String>) -> Value {
    let total = values.len();
    values.truncate(MAX_COMPLETION_VALUES);
    json!({
        "completion": {
            "values": values,
            "total": total,
            "hasMore": total > MAX_COMPLETION_VALUES,
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_hold_at_most_one_hundred_values_and_say_how_many_there_were() {
        let many: Vec<String> = (0..150).map(|i| format!("v{i}")).collect();
        let r = result(many);
        assert_eq!(r["completion"]["values"].as_array().unwrap().len(), 100);
        assert_eq!(r["completion"]["total"], 150);
        assert_eq!(r["completion"]["hasMore"], true);
        let r = result(vec!["a".into()]);
        assert_eq!(
            r,
            json!({"completion": {"values": ["a"], "total": 1, "hasMore": false}})
        );
    }

    #[test]
    fn params_name_what_is_wrong() {
        let ok = parse(Some(&json!({
            "ref": {"type": "ref/prompt", "name": "p"},
            "argument": {"name": "a", "value": "x"},
            "context": {"arguments": {"b": "y"}}
        })))
        .unwrap();
        assert!(matches!(ok.reference, Reference::Prompt(ref n) if n == "p"));
        assert_eq!((ok.argument.as_str(), ok.value.as_str()), ("a", "x"));
        assert_eq!(ok.context["b"], "y");
        let e = parse(Some(&json!({"ref": {"type": "ref/x"}})))
            .err()
            .unwrap();
        assert_eq!(e.code, -32602);
        let e = parse(Some(&json!({"ref": {"type": "ref/resource", "uri": "u"}})))
            .err()
            .unwrap();
        assert!(e.message.contains("argument.name"), "{}", e.message);
    }
}
