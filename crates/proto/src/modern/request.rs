//! The revision of one request, read from its `_meta`: [`RequestMeta`], the checked
//! `io.modelcontextprotocol/*` fields of a request of a stateless revision, and the
//! functions that find it ([`take_request_revision`]) or tell a peer's answer naming one
//! ([`names_a_stateless_revision`]).

use serde_json::{Value, json};

use super::{
    CLIENT_CAPABILITIES_META, CLIENT_INFO_META, ClientCapabilities, Implementation, LOG_LEVEL_META,
    PROTOCOL_VERSION, PROTOCOL_VERSION_META, UnsupportedVersionData, codes, unsupported_version,
};
use crate::ErrorObject;
use crate::revision::Revision;

/// The `io.modelcontextprotocol/*` fields of a modern request's `_meta`, checked.
#[derive(Debug, Clone, PartialEq)]
pub struct RequestMeta {
    /// `io.modelcontextprotocol/protocolVersion`: a [`Revision::is_stateless`] one.
    pub revision: Revision,
    /// `io.modelcontextprotocol/clientCapabilities`.
    pub client_capabilities: ClientCapabilities,
    /// `io.modelcontextprotocol/clientInfo`, if given and well-formed.
    pub client_info: Option<Implementation>,
    /// `io.modelcontextprotocol/logLevel`, if given.
    pub log_level: Option<String>,
    /// The `Mcp-Param-{Name}` headers of a Streamable HTTP request, `{Name}` lowercased
    /// and the value Base64-decoded when encoded; `None` on other transports, where they
    /// do not exist. Spec (streamable HTTP): "Clients using other transports (e.g.,
    /// stdio) MAY ignore `x-mcp-header`".
    pub param_headers: Option<Vec<(String, String)>>,
}

/// What a request's `_meta` says of its revision: `Ok(None)` without
/// `io.modelcontextprotocol/protocolVersion` (a [`Revision::V2025_11_25`] or older request,
/// served by the session `initialize` opened); `Ok(Some(meta))` for a well-formed request
/// of the stateless revision `meta.revision`; `Err(e)` for a request that names a
/// revision but cannot be served (the error to answer with).
pub type RequestRevision = Result<Option<RequestMeta>, ErrorObject>;

/// Whether `params` carry the protocol-version key of a stateless revision's `_meta`
/// (the one thing that makes a request one of [`Revision::is_stateless`] form, whatever
/// else is wrong with it).
///
/// Spec (versioning): "A request carrying modern per-request `_meta` is served
/// statelessly according to this revision."
pub fn names_revision_in_meta(params: Option<&Value>) -> bool {
    params
        .and_then(|p| p.get("_meta"))
        .and_then(|m| m.get(PROTOCOL_VERSION_META))
        .is_some()
}

/// The revision a request with these `params` asks for, checking the `_meta` fields of a
/// stateless one.
///
/// The version is checked first: a client on another revision may have other required
/// fields, so what it needs to hear is which versions we support.
///
/// Spec (versioning): "If the server does not implement the requested version ... it
/// MUST respond with an `UnsupportedProtocolVersionError` listing the versions it does
/// support". Spec (basic, `_meta`): "A request missing any required field is malformed;
/// the server MUST reject it with JSON-RPC error code `-32602` (Invalid params)."
/// `supported` is every version the server speaks, the `initialize` ones included.
/// The params are not changed: the checked fields are copied out of a copy of them (the
/// server and the transport use [`take_request_revision`], which moves them).
pub fn request_revision(params: Option<&Value>, supported: &[&str]) -> RequestRevision {
    let mut owned = params.cloned();
    take_request_revision(owned.as_mut(), supported)
}

/// [`request_revision`] of a request the caller owns: the fields of a stateless `_meta`
/// are moved out of it rather than copied (its `clientCapabilities`, `clientInfo` and
/// `logLevel` keys are gone from `params` afterwards; the protocol version stays, so the
/// params still name their revision). For a transport that hands the checked
/// [`RequestMeta`] on with the request.
pub fn take_request_revision(params: Option<&mut Value>, supported: &[&str]) -> RequestRevision {
    let Some(params) = params else {
        return Ok(None);
    };
    let revision = match checked_meta(Some(params), supported) {
        Checked::Initialized => return Ok(None),
        Checked::Refused(e) => return Err(e),
        Checked::Stateless(revision) => revision,
    };
    let Some(meta) = params.get_mut("_meta").and_then(Value::as_object_mut) else {
        return Ok(None);
    };
    let client_capabilities = match meta.remove(CLIENT_CAPABILITIES_META) {
        Some(Value::Object(c)) => ClientCapabilities(c),
        _ => ClientCapabilities::default(),
    };
    let client_info = meta
        .remove(CLIENT_INFO_META)
        .and_then(Implementation::from_value);
    let log_level = match meta.remove(LOG_LEVEL_META) {
        Some(Value::String(s)) => Some(s),
        _ => None,
    };
    Ok(Some(RequestMeta {
        revision,
        client_capabilities,
        client_info,
        log_level,
        param_headers: None,
    }))
}

/// What checking a request's `_meta` found.
enum Checked {
    /// No protocol version in `_meta`: a request of the session `initialize` opened.
    Initialized,
    Refused(ErrorObject),
    /// A well-formed stateless `_meta`: its version is a stateless revision and its
    /// `clientCapabilities` an object.
    Stateless(Revision),
}

/// Check the `_meta` of a request with these `params` (see [`request_revision`]).
fn checked_meta(params: Option<&Value>, supported: &[&str]) -> Checked {
    if !names_revision_in_meta(params) {
        return Checked::Initialized;
    }
    let meta = params
        .and_then(|p| p.get("_meta"))
        .and_then(Value::as_object);
    let Some(meta) = meta else {
        return Checked::Initialized;
    };
    let version = match meta.get(PROTOCOL_VERSION_META) {
        Some(Value::String(v)) => v,
        _ => {
            return Checked::Refused(ErrorObject::invalid_params(format!(
                "`_meta[\"{PROTOCOL_VERSION_META}\"]` must be a string"
            )));
        }
    };
    let Some(revision) = stateless_revision(version) else {
        return Checked::Refused(unsupported_version(version, supported));
    };
    match meta.get(CLIENT_CAPABILITIES_META) {
        Some(Value::Object(_)) => Checked::Stateless(revision),
        Some(_) => Checked::Refused(ErrorObject::invalid_params(format!(
            "`_meta[\"{CLIENT_CAPABILITIES_META}\"]` must be an object"
        ))),
        None => Checked::Refused(ErrorObject::invalid_params(format!(
            "`_meta[\"{CLIENT_CAPABILITIES_META}\"]` is required on every 2026-07-28 request"
        ))),
    }
}

/// The stateless revision `version` names, if we serve it per request.
pub fn stateless_revision(version: &str) -> Option<Revision> {
    version
        .parse::<Revision>()
        .ok()
        .filter(|r| r.is_stateless())
}

/// A request's `_meta` with the modern fields (what a client puts on every request).
pub fn request_meta_value(
    client_info: &Implementation,
    capabilities: &ClientCapabilities,
) -> Value {
    json!({
        PROTOCOL_VERSION_META: PROTOCOL_VERSION,
        CLIENT_INFO_META: client_info,
        CLIENT_CAPABILITIES_META: capabilities,
    })
}

/// Whether `error` is an `UnsupportedProtocolVersionError` whose `data.supported` names a
/// stateless revision we speak: the answer of a 2026-07-28 peer to `initialize` (or to
/// any request in another revision). Spec (versioning): "a recognized modern JSON-RPC
/// error (such as `UnsupportedProtocolVersionError`) identifies a modern server".
pub fn names_a_stateless_revision(error: &ErrorObject) -> bool {
    error.code == codes::UNSUPPORTED_PROTOCOL_VERSION
        && error
            .data
            .clone()
            .and_then(|d| serde_json::from_value::<UnsupportedVersionData>(d).ok())
            .is_some_and(|d| d.supported.iter().any(|v| stateless_revision(v).is_some()))
}
