//! The `arguments` of a tool call, from `--args JSON` and `--arg KEY=VALUE`, typed by the
//! tool's input schema.

use anyhow::bail;
use serde_json::{Map, Value};

/// A `--arg` value typed by the property's schema: by its `type` (or list of types, in
/// order), else a JSON literal, else a string.
fn typed_value(key: &str, schema: Option<&Value>, raw: &str) -> anyhow::Result<Value> {
    let types: Vec<&str> = match schema.and_then(|s| s.get("type")) {
        Some(Value::String(t)) => vec![t.as_str()],
        Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    };
    if types.is_empty() {
        return Ok(serde_json::from_str(raw).unwrap_or_else(|_| Value::String(raw.to_owned())));
    }
    let literal = serde_json::from_str::<Value>(raw).ok();
    for t in &types {
        let fits = match (*t, &literal) {
            ("string", _) => return Ok(Value::String(raw.to_owned())),
            ("integer", Some(v)) => v.is_i64() || v.is_u64(),
            ("number", Some(v)) => v.is_number(),
            ("boolean", Some(v)) => v.is_boolean(),
            ("null", Some(v)) => v.is_null(),
            ("object", Some(v)) => v.is_object(),
            ("array", Some(v)) => v.is_array(),
            _ => false,
        };
        if fits {
            return Ok(literal.unwrap_or(Value::Null));
        }
    }
    bail!(
        "--arg {key}: `{raw}` is not {} (as the tool's input schema requires)",
        types.join(" or ")
    )
}

/// The `arguments` object from `--args` and `--arg`.
pub(super) fn build_arguments(
    args_json: Option<&str>,
    pairs: &[String],
    input_schema: Option<&Value>,
) -> anyhow::Result<Value> {
    let mut obj = match args_json {
        None => Map::new(),
        Some(s) => match serde_json::from_str::<Value>(s) {
            Ok(Value::Object(m)) => m,
            Ok(_) => bail!("--args: expected a JSON object"),
            Err(e) => bail!("--args: not JSON: {e}"),
        },
    };
    for pair in pairs {
        let Some((key, raw)) = pair.split_once('=') else {
            bail!("--arg `{pair}`: expected KEY=VALUE");
        };
        if key.is_empty() {
            bail!("--arg `{pair}`: the key is empty");
        }
        let schema = input_schema
            .and_then(|s| s.get("properties"))
            .and_then(|p| p.get(key));
        obj.insert(key.to_owned(), typed_value(key, schema, raw)?);
    }
    Ok(Value::Object(obj))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn arguments_are_typed_by_the_schema() {
        let schema = json!({"properties": {
            "ms": {"type": "integer"},
            "text": {"type": "string"},
            "flag": {"type": "boolean"},
            "either": {"type": ["integer", "string"]},
            "any": {},
        }});
        let a = build_arguments(
            Some(r#"{"ms": 1, "keep": true}"#),
            &[
                "ms=25".into(),
                "text=42".into(),
                "flag=true".into(),
                "either=x".into(),
                "any=[1,2]".into(),
                "free=hello world".into(),
                "eq=a=b".into(),
            ],
            Some(&schema),
        )
        .unwrap();
        assert_eq!(
            a,
            json!({"ms": 25, "keep": true, "text": "42", "flag": true, "either": "x", "any": [1, 2], "free": "hello world", "eq": "a=b"})
        );
        assert!(build_arguments(None, &["ms=soon".into()], Some(&schema)).is_err());
        assert!(build_arguments(None, &["novalue".into()], None).is_err());
        assert!(build_arguments(Some("[1]"), &[], None).is_err());
    }
}
