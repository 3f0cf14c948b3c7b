//! The `_meta` keys our code reads and writes: the related-task key and the progress
//! token, for the server, the client and the gateway alike.
//!
//! Spec (basic/utilities/tasks): "All requests, notifications, and responses related to a
//! task MUST include the `io.modelcontextprotocol/related-task` key in their `_meta`
//! field". Spec (basic/utilities/progress): "When a party wants to receive progress
//! updates for a request, it includes a `progressToken` in the request metadata."

use serde_json::{Map, Value};

pub use crate::mcp::{RELATED_TASK_META, progress_token, related_task_value, set_related_task};

/// `obj._meta` as a map, created when absent (a `_meta` that is not an object is
/// replaced). `None` when `obj` is not an object.
fn meta_mut(obj: &mut Value) -> Option<&mut Map<String, Value>> {
    let meta = obj
        .as_object_mut()?
        .entry("_meta")
        .or_insert_with(|| Value::Object(Map::new()));
    if !meta.is_object() {
        *meta = Value::Object(Map::new());
    }
    meta.as_object_mut()
}

/// The related-task id in `obj._meta`, if any.
pub fn related_task(obj: &Value) -> Option<&str> {
    obj.get("_meta")?
        .get(RELATED_TASK_META)?
        .get("taskId")?
        .as_str()
}

/// Add the related-task key for `task_id` to `obj._meta` unless it has one, keeping every
/// other `_meta` key. Does nothing when `obj` is not an object.
pub fn tag_related_task(obj: &mut Value, task_id: &str) {
    if let Some(meta) = meta_mut(obj) {
        meta.entry(RELATED_TASK_META)
            .or_insert_with(|| related_task_value(task_id));
    }
}

/// Remove the related-task key from `obj._meta` (and `_meta` itself if that leaves it
/// empty).
pub fn strip_related_task(obj: &mut Value) {
    let Some(map) = obj.as_object_mut() else {
        return;
    };
    let empty = match map.get_mut("_meta").and_then(Value::as_object_mut) {
        Some(meta) => {
            meta.remove(RELATED_TASK_META);
            meta.is_empty()
        }
        None => false,
    };
    if empty {
        map.remove("_meta");
    }
}

/// Put `token` as `params._meta.progressToken`, keeping every other `_meta` key. Does
/// nothing when `params` is not an object.
pub fn set_progress_token(params: &mut Value, token: Value) {
    if let Some(meta) = meta_mut(params) {
        meta.insert("progressToken".to_owned(), token);
    }
}

/// The progress token of `params` as a map key (its JSON text), if it has a valid one.
pub fn progress_token_key(params: &Value) -> Option<String> {
    progress_token(Some(params)).map(|t| t.to_string())
}

/// `params` (an object, or a new one) with the keys of `meta` in its `_meta` (other
/// `_meta` keys, such as `progressToken`, are kept).
pub fn stamp(meta: &Value, params: Option<Value>) -> Value {
    let mut params = match params {
        Some(Value::Object(m)) => m,
        _ => Map::new(),
    };
    let slot = params
        .entry("_meta")
        .or_insert_with(|| Value::Object(Map::new()));
    if !slot.is_object() {
        *slot = Value::Object(Map::new());
    }
    if let (Some(slot), Some(meta)) = (slot.as_object_mut(), meta.as_object()) {
        for (k, v) in meta {
            slot.insert(k.clone(), v.clone());
        }
    }
    Value::Object(params)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn related_task_is_read_tagged_and_stripped_without_touching_other_meta() {
        let mut v = json!({"a": 1, "_meta": {"k": 2}});
        assert_eq!(related_task(&v), None);
        tag_related_task(&mut v, "t1");
        assert_eq!(related_task(&v), Some("t1"));
        tag_related_task(&mut v, "t2");
        assert_eq!(related_task(&v), Some("t1"), "an existing key is kept");
        strip_related_task(&mut v);
        assert_eq!(v, json!({"a": 1, "_meta": {"k": 2}}));
        let mut w = json!({"_meta": {RELATED_TASK_META: {"taskId": "u"}}});
        strip_related_task(&mut w);
        assert_eq!(w, json!({}));
        let mut s = json!("not an object");
        tag_related_task(&mut s, "t");
        assert_eq!(s, json!("not an object"));
    }

    #[test]
    fn progress_tokens_are_set_and_read() {
        let mut p = json!({"name": "x", "_meta": {"k": 1}});
        set_progress_token(&mut p, json!(7));
        assert_eq!(p["_meta"], json!({"k": 1, "progressToken": 7}));
        assert_eq!(progress_token_key(&p).as_deref(), Some("7"));
        assert_eq!(
            progress_token_key(&json!({"_meta": {"progressToken": [1]}})),
            None
        );
    }
}
