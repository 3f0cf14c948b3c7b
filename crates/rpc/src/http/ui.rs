//! Hooks for the server's task dashboard at `/ui`: its static page ([`UiEndpoint::asset`])
//! and its JSON API under `/ui/api/` ([`UiEndpoint::api`]), served beside the endpoint
//! with its origin check and, for the API, its bearer authentication. The transport knows
//! neither tasks nor the page: the server answers.

use std::sync::Arc;

use futures::future::BoxFuture;

/// The dashboard's path.
pub const UI_PATH: &str = "/ui";

/// The method of an API request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum UiMethod {
    /// `GET`: reads.
    Get,
    /// `POST`: changes (cancel).
    Post,
}

/// A request to the dashboard's API, authenticated like a request to the endpoint.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct UiRequest {
    /// GET or POST.
    pub method: UiMethod,
    /// The path after `/ui/api/` (`tasks`, `tasks/ID`, `tasks/ID/cancel`), percent-decoded.
    pub path: String,
    /// The raw query string (without `?`), empty when there is none.
    pub query: String,
    /// The principal of the bearer token; `None` without authentication.
    pub principal: Option<String>,
}

/// What the API answers.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct UiResponse {
    /// The HTTP status.
    pub status: u16,
    /// The JSON body.
    pub body: String,
    /// `Retry-After` (seconds) of a refusal by a rate limit (status 429).
    pub retry_after_secs: Option<u64>,
}

impl UiResponse {
    /// A JSON answer.
    pub fn json(status: u16, body: String) -> Self {
        Self {
            status,
            body,
            retry_after_secs: None,
        }
    }

    /// 429 with `Retry-After`: a rate limit refused the request.
    pub fn rate_limited(body: String, retry_after_ms: u64) -> Self {
        Self {
            status: 429,
            body,
            retry_after_secs: Some(retry_after_ms.div_ceil(1000).max(1)),
        }
    }
}

/// Answers the dashboard's API.
pub type UiApi = Arc<dyn Fn(UiRequest) -> BoxFuture<'static, UiResponse> + Send + Sync>;

/// One file of the page: its content type and bytes, by its name under `/ui/`
/// (`""` is the page itself).
pub type UiAssets = Arc<dyn Fn(&str) -> Option<(&'static str, &'static [u8])> + Send + Sync>;

/// The dashboard at `/ui`.
#[derive(Clone)]
pub struct UiEndpoint {
    /// The JSON API (`/ui/api/...`).
    pub api: UiApi,
    /// The page's files (`/ui`, `/ui/app.js`, ...), served without authentication: the
    /// page asks for a token and sends it with each API request.
    pub assets: UiAssets,
}

impl UiEndpoint {
    /// A dashboard answering with `api` and `assets`.
    pub fn new(api: UiApi, assets: UiAssets) -> Self {
        Self { api, assets }
    }
}

mcp_tasks_proto::debug_non_exhaustive!(UiEndpoint, |_s| {});
