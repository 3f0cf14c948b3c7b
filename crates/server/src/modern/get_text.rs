//! The answer of a 2026-07-28 `tasks/get` written as JSON text, for a transport that
//! sends it at once (`Handler::handle_request_text`; modern HTTP): `tasks/get` is the most
//! frequent request, and building its answer as a `Value` tree only to serialize it again
//! cost a third of the request (docs/performance.md, "Modern `tasks/get` written as
//! text").
//!
//! The JSON is the one [`super::handle`] makes of [`super::tasks::get`]'s value (test
//! `the_text_of_a_get_is_its_value`): the same fields and values, the keys of the inline
//! result in the same (sorted) order, the other keys in the struct's order.

use std::collections::BTreeMap;

use mcp_tasks_core::Outcome;
use mcp_tasks_proto::ErrorObject;
use mcp_tasks_proto::mcp::RELATED_TASK_META;
use mcp_tasks_proto::modern::ResultType;
use mcp_tasks_proto::modern::tasks::DetailedTask;
use serde::Serialize;
use serde::ser::SerializeMap;
use serde_json::value::RawValue;

use super::tasks::inline_value;

/// The bytes an answer takes besides the inline result and the server's identity, rounded
/// up: task id, status, message, times, TTL, poll interval, keys. Reserved at once:
/// growing the text from empty would copy it several times.
const ROOM: usize = 512;

/// The `tasks/get` answer of `detailed` (a completed task's result, when it has one, still
/// `stored`), stamped as every modern result: `resultType` and, in `_meta`,
/// `io.modelcontextprotocol/serverInfo` (`server_info`, JSON text).
///
/// The stored result is written as it is stored, but for the `resultType` it gains when it
/// has none (see [`super::tasks::stamp_complete`]): it is not parsed into a `Value` and
/// written again. One that names the related task in its `_meta` (which the inline
/// result must not carry), is not an object of plain keys, or does not parse goes through
/// the value ([`inline_value`]).
///
/// Spec (basic): "The `result` MUST include a `resultType` field" and "Servers SHOULD
/// include the following `io.modelcontextprotocol/*` field in every result's `_meta`".
/// Spec (SEP-2663, `tasks/get`): "The `resultType` field MUST be set to `"complete"`".
///
/// # Errors
/// -32603 when the answer cannot be serialized (it can: every field is JSON already).
pub(super) fn write(
    mut detailed: DetailedTask,
    stored: Option<&Outcome>,
    server_info: &RawValue,
) -> Result<String, ErrorObject> {
    let inline = stored.and_then(|o| {
        let inline = Inline::parse(&o.json);
        if inline.is_none() {
            inline_value(&mut detailed, o);
        }
        inline
    });
    let answer = Answer {
        result_type: ResultType::Complete,
        task: &detailed,
        result: inline.as_ref(),
        meta: Meta { server_info },
    };
    let room = ROOM + server_info.get().len() + stored.map_or(0, |o| o.json.len());
    let mut out = Vec::with_capacity(room);
    serde_json::to_writer(&mut out, &answer).map_err(ErrorObject::internal)?;
    String::from_utf8(out).map_err(ErrorObject::internal)
}

/// `GetTaskResult` with the `_meta` of every modern result and the inline result as
/// stored.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Answer<'a> {
    result_type: ResultType,
    #[serde(flatten)]
    task: &'a DetailedTask,
    #[serde(skip_serializing_if = "Option::is_none")]
    result: Option<&'a Inline<'a>>,
    #[serde(rename = "_meta")]
    meta: Meta<'a>,
}

/// `_meta` of the answer.
#[derive(Serialize)]
struct Meta<'a> {
    #[serde(rename = "io.modelcontextprotocol/serverInfo")]
    server_info: &'a RawValue,
}

/// A stored result: its top-level keys (sorted, as a `Value` map keeps them) and each
/// value's JSON text, borrowed from the stored text.
struct Inline<'a>(BTreeMap<&'a str, &'a RawValue>);

impl<'a> Inline<'a> {
    /// `None` when the result must go through a `Value`: not an object, a key with an
    /// escape (it cannot be borrowed), or a `_meta` naming the related task.
    fn parse(json: &'a str) -> Option<Self> {
        let fields: BTreeMap<&str, &RawValue> = serde_json::from_str(json).ok()?;
        if fields
            .get("_meta")
            .is_some_and(|m| m.get().contains(RELATED_TASK_META))
        {
            return None;
        }
        Some(Self(fields))
    }
}

impl Serialize for Inline<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let typed = self.0.contains_key("resultType");
        let mut map = s.serialize_map(Some(self.0.len() + usize::from(!typed)))?;
        for (k, v) in &self.0 {
            map.serialize_entry(k, v)?;
        }
        if !typed {
            map.serialize_entry("resultType", ResultType::Complete.as_str())?;
        }
        map.end()
    }
}

#[cfg(test)]
mod tests {
    use super::super::tasks::get_value;
    use super::*;
    use mcp_tasks_core::OutcomeKind;
    use mcp_tasks_proto::modern::SERVER_INFO_META;
    use mcp_tasks_proto::modern::tasks::{GetTaskResult, Task, TaskStatus};
    use serde_json::{Value, json};

    fn task(status: TaskStatus) -> Task {
        serde_json::from_value(json!({"taskId": "t-1", "status": status,
            "createdAt": "2026-12-04T13:00:00Z", "lastUpdatedAt": "2026-12-04T13:00:01Z",
            "ttlMs": 60000, "pollIntervalMs": 1000}))
        .unwrap()
    }

    /// What `tasks::get` and `handle` answer as a value for the same task.
    fn as_value(mut detailed: DetailedTask, stored: Option<&Outcome>, info: &Value) -> Value {
        if let Some(o) = stored {
            inline_value(&mut detailed, o);
        }
        let mut v = get_value(GetTaskResult::new(detailed)).unwrap();
        super::super::stamp_complete(&mut v, info);
        v
    }

    /// The text answer is the value answer: for stored results written as stored (with or
    /// without `resultType`, with a `_meta` of their own, escapes in values), those that go
    /// through a value (related-task `_meta`, an array, a key with an escape, text that
    /// does not parse: then `failed` with -32603), and tasks without an inline result.
    #[test]
    fn the_text_of_a_get_is_its_value() {
        let info = json!({"name": "srv", "version": "1.2.3"});
        let info_text = serde_json::value::to_raw_value(&info).unwrap();
        let results = [
            r#"{"content":[{"type":"text","text":"a\"b\u00e9\n"}],"isError":false}"#,
            r#"{"resultType":"complete","z":null,"a":[1,2.5,-3]}"#,
            r#"{"content":[],"_meta":{"k":{"x":1}}}"#,
            r#"{"content":[],"_meta":{"io.modelcontextprotocol/related-task":{"taskId":"u"},"k":1}}"#,
            r#"{"content":[],"_meta":{"io.modelcontextprotocol/related-task":{"taskId":"u"}}}"#,
            r#"{"a\u0062":1}"#,
            r#"[1,"x"]"#,
            r#"{"content": [ ] , "b" : true }"#,
            "{not json",
        ];
        for json in results {
            let stored = Outcome {
                kind: OutcomeKind::Result,
                json: json.to_owned(),
            };
            let detailed = DetailedTask::bare(task(TaskStatus::Completed));
            let expected = as_value(detailed.clone(), Some(&stored), &info);
            let text = write(detailed, Some(&stored), &info_text).unwrap();
            let got: Value = serde_json::from_str(&text).unwrap();
            assert_eq!(got, expected, "{json}");
        }
        let mut failed = DetailedTask::bare(task(TaskStatus::Failed));
        failed.error = Some(ErrorObject::internal("boom"));
        let mut waiting = DetailedTask::bare(task(TaskStatus::InputRequired));
        waiting.input_requests = Some(
            serde_json::from_value(json!({"r-1": {"method": "elicitation/create", "params": {}}}))
                .unwrap(),
        );
        for detailed in [
            failed,
            waiting,
            DetailedTask::bare(task(TaskStatus::Working)),
        ] {
            let expected = as_value(detailed.clone(), None, &info);
            let text = write(detailed, None, &info_text).unwrap();
            let got: Value = serde_json::from_str(&text).unwrap();
            assert_eq!(got, expected, "{text}");
        }
    }

    /// A stored result keeps its own `resultType`; one without gets `"complete"`, once.
    #[test]
    fn an_inline_result_is_stamped_once() {
        let info_text = serde_json::value::to_raw_value(&json!({"name": "s"})).unwrap();
        for (json, wants) in [
            (r#"{"content":[]}"#, "complete"),
            (r#"{"content":[],"resultType":"other"}"#, "other"),
        ] {
            let stored = Outcome {
                kind: OutcomeKind::Result,
                json: json.to_owned(),
            };
            let detailed = DetailedTask::bare(task(TaskStatus::Completed));
            let text = write(detailed, Some(&stored), &info_text).unwrap();
            assert_eq!(text.matches("resultType").count(), 2, "{text}");
            let got: Value = serde_json::from_str(&text).unwrap();
            assert_eq!(got["result"]["resultType"], wants, "{text}");
            assert_eq!(got["resultType"], "complete", "{text}");
            assert_eq!(got["_meta"][SERVER_INFO_META]["name"], "s", "{text}");
        }
    }
}
