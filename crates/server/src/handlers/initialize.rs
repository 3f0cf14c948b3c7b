//! `initialize`: version negotiation and capabilities.

use std::sync::Arc;

use mcp_tasks_proto::ErrorObject;
use mcp_tasks_proto::logged::capped;
use mcp_tasks_proto::mcp::{LATEST_PROTOCOL_VERSION, SUPPORTED_PROTOCOL_VERSIONS};
use serde_json::{Value, json};

use crate::catalog::Gen;
use crate::session::{Negotiated, Session};

/// The revision to answer a request for `requested` with: the same if we support it,
/// else 2025-11-25 (a newer client falls back; an older unknown one may disconnect).
pub(crate) fn negotiate(requested: &str) -> &'static str {
    SUPPORTED_PROTOCOL_VERSIONS
        .iter()
        .copied()
        .find(|v| *v == requested)
        .unwrap_or(LATEST_PROTOCOL_VERSION)
}

/// The most bytes of `capabilities` and `clientInfo` (their JSON text, together) a session
/// keeps from `initialize` for its life; a larger `initialize` is refused (-32602).
pub const MAX_INITIALIZE_KEPT_BYTES: usize = 64 * 1024;

/// Serve `initialize`.
///
/// Spec: "Servers and clients that support task-augmented requests MUST declare a `tasks`
/// capability during initialization." and "Receivers that cannot identify requestors
/// SHOULD NOT declare the `tasks.list` capability".
///
/// What the session keeps for its life (the client's `capabilities` and `clientInfo`) is
/// bounded by [`MAX_INITIALIZE_KEPT_BYTES`]: past it, `initialize` fails with -32602
/// naming the sizes, and the session stays uninitialized.
pub(crate) fn handle(session: &Session, params: Option<Value>) -> Result<Value, ErrorObject> {
    let params = params.unwrap_or(Value::Null);
    let requested = match params.get("protocolVersion") {
        Some(Value::String(v)) => v.as_str(),
        Some(_) => {
            return Err(ErrorObject::invalid_params(
                "`protocolVersion` must be a string",
            ));
        }
        None => return Err(ErrorObject::invalid_params("`protocolVersion` is required")),
    };
    let capabilities = match params.get("capabilities") {
        Some(c @ Value::Object(_)) => c.clone(),
        None => json!({}),
        Some(_) => {
            return Err(ErrorObject::invalid_params(
                "`capabilities` must be an object",
            ));
        }
    };
    let client_info = params.get("clientInfo").cloned().unwrap_or(Value::Null);
    let kept = mcp_tasks_proto::json_len(&capabilities) + mcp_tasks_proto::json_len(&client_info);
    if kept > MAX_INITIALIZE_KEPT_BYTES {
        return Err(ErrorObject::invalid_params(format!(
            "`capabilities` and `clientInfo` are {kept} bytes of JSON, over the \
             {MAX_INITIALIZE_KEPT_BYTES}-byte bound of what a session keeps"
        )));
    }
    let version = negotiate(requested);
    let negotiated = Negotiated {
        protocol_version: version.to_owned(),
        client_capabilities: Arc::new(capabilities),
        client_info,
    };
    if !session.set_negotiated(negotiated) {
        return Err(ErrorObject::invalid_request(
            "the session is already initialized",
        ));
    }
    // What the client says of itself, cut to a few hundred bytes each.
    let info = |k: &str| {
        params
            .get("clientInfo")
            .and_then(|c| c.get(k))
            .and_then(Value::as_str)
            .map(capped)
    };
    tracing::info!(
        requested = %capped(requested),
        negotiated = version,
        client = info("name").map(tracing::field::display),
        client_version = info("version").map(tracing::field::display),
        "session initialized"
    );

    let mut caps = json!({ "tools": { "listChanged": false } });
    if let Some(m) = caps.as_object_mut() {
        m.extend(session.state.catalog.capabilities(Gen::Legacy));
    }
    if session.tasks().is_some() {
        let mut tasks = json!({ "cancel": {}, "requests": { "tools": { "call": {} } } });
        if session.can_list {
            tasks["list"] = json!({});
        }
        caps["tasks"] = tasks;
    }
    let cfg = &session.state.config;
    let mut result = json!({
        "protocolVersion": version,
        "capabilities": caps,
        "serverInfo": { "name": cfg.name, "version": cfg.version },
    });
    if let Some(i) = &cfg.instructions {
        result["instructions"] = json!(i);
    }
    Ok(result)
}

#[cfg(test)]
mod tests {
    #[test]
    fn negotiates_versions() {
        assert_eq!(super::negotiate("2025-11-25"), "2025-11-25");
        assert_eq!(super::negotiate("2025-06-18"), "2025-06-18");
        assert_eq!(super::negotiate("2025-03-26"), "2025-03-26");
        assert_eq!(super::negotiate("2026-07-28"), "2025-11-25");
        assert_eq!(super::negotiate("2024-11-05"), "2025-11-25");
    }
}
