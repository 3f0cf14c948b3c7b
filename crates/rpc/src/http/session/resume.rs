//! With sessions shared between replicas: a `tasks/result` stream resumed on another
//! replica than the one that opened it is answered there again.
//!
//! A stream answering a `tasks/result` tags its event ids with what the request was
//! (`n-seq-tag`, the tag the hex digits of `{"i": id, "t": taskId}`). When a client
//! resumes such a stream with `Last-Event-ID` on a replica that does not hold it, that
//! replica makes the same request again, under the same JSON-RPC id, on a new stream of
//! its own, and the resumed GET reads that stream: what `tasks/result` delivers comes
//! from the store (the task's outcome, its pending requests from the mailbox), so the
//! client gets the response it waits for on the stream it resumed, and nothing that
//! belongs to another stream.
//!
//! Spec (2025-11-25, Streamable HTTP): "The server MAY use this header to replay messages
//! that would have been sent after the last event ID, on the stream that was
//! disconnected, and to resume the stream from that point." and "The server MUST NOT
//! replay messages that would have been delivered on a different stream."

use std::sync::Arc;

use mcp_tasks_proto::{Message, Request, RequestId, methods};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::super::stream::StreamBuf;
use super::{Connect, HttpSession, Pending};
use crate::peer::RouteDelivery;

/// The longest tag made or read (a request id and a task id fit many times over).
const MAX_TAG: usize = 1024;

/// The tag of the stream answering `req`, when it is a `tasks/result` another replica can
/// answer again.
pub(crate) fn tag_for(req: &Request) -> Option<Arc<str>> {
    if req.method != methods::TASKS_RESULT {
        return None;
    }
    let task = req.params.as_ref()?.get("taskId")?.as_str()?;
    let text = json!({ "i": req.id.to_value(), "t": task }).to_string();
    let mut tag = String::with_capacity(text.len() * 2);
    for b in text.bytes() {
        use std::fmt::Write;
        let _ = write!(tag, "{b:02x}");
    }
    (tag.len() <= MAX_TAG).then(|| Arc::from(tag))
}

/// The request a tag names, if it is one [`tag_for`] made.
pub(crate) fn request_of(tag: &str) -> Option<Request> {
    if tag.len() > MAX_TAG || !tag.len().is_multiple_of(2) {
        return None;
    }
    let bytes = (0..tag.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(tag.get(i..i + 2)?, 16).ok())
        .collect::<Option<Vec<u8>>>()?;
    let v: Value = serde_json::from_slice(&bytes).ok()?;
    let id: RequestId = serde_json::from_value(v.get("i")?.clone()).ok()?;
    let task = v.get("t")?.as_str()?;
    Some(Request {
        id,
        method: methods::TASKS_RESULT.to_owned(),
        params: Some(json!({ "taskId": task })),
    })
}

impl HttpSession {
    /// Make `req` (from a resumed stream's tag) again on a new stream of this copy, and a
    /// connection reading it (the stream of an earlier re-issue of it here, if it is
    /// still there); `None` when another request of that id is in flight here.
    pub(crate) async fn reissue(
        self: &Arc<Self>,
        req: Request,
        tag: Arc<str>,
        shutdown: CancellationToken,
    ) -> Option<Connect> {
        let n = {
            let mut st = self.state.lock();
            match st.pending.get(&req.id) {
                // Asked again here already (the client's GET came back to this replica
                // from yet another one): that stream, from what no connection took yet.
                Some(Pending::Stream(n)) => {
                    let n = *n;
                    let from = st
                        .streams
                        .get(&n)
                        .filter(|s| s.tag() == Some(&*tag))
                        .map(StreamBuf::delivered)?;
                    drop(st);
                    return Some(self.connect(n, Some(from), shutdown));
                }
                Some(Pending::Waiting { .. }) => return None,
                None => Self::new_request_stream(&mut st, req.id.clone(), Some(tag)),
            }
        };
        tracing::debug!(session = %mcp_tasks_proto::logged::digest(&self.id), id = %req.id, "a tasks/result stream of another replica resumed here: asked again");
        // The resumed stream carries its task's notifications too, wherever the task runs.
        if let Some(task) = req
            .params
            .as_ref()
            .and_then(|p| p.get("taskId"))
            .and_then(Value::as_str)
        {
            self.follow_task(task, &req.id);
        }
        self.peer
            .receive_with(Message::Request(req), RouteDelivery::OwnStream)
            .await;
        Some(self.connect(n, None, shutdown))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tag_names_its_request_and_nothing_else_is_taken() {
        let req = Request {
            id: RequestId::String("a-1".into()),
            method: methods::TASKS_RESULT.into(),
            params: Some(json!({ "taskId": "t-1" })),
        };
        let tag = tag_for(&req).unwrap();
        assert!(tag.bytes().all(|b| b.is_ascii_hexdigit()), "{tag}");
        assert_eq!(request_of(&tag), Some(req));
        let get = Request {
            id: RequestId::Number(1),
            method: methods::TASKS_GET.into(),
            params: Some(json!({ "taskId": "t-1" })),
        };
        assert_eq!(tag_for(&get), None);
        assert_eq!(request_of("zz"), None);
        assert_eq!(request_of("7b7d"), None, "{{}} names no request");
    }
}
