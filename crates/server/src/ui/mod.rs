//! The task dashboard at `/ui`: a plain HTML/CSS/JS page embedded in the binary (no CDN,
//! works offline) and its JSON API under `/ui/api/` (see [`api`]), served on the
//! endpoint's port through the transport's hook ([`UiEndpoint`]).
//!
//! Who sees what: with authentication, the principal of the bearer token sees its own
//! tasks (a foreign task is not found, exactly as `tasks/get`), and the principal named by
//! [`UiServing::On::admin`] (`--admin-principal`) every task with its owner. Without
//! authentication (loopback only) the page shows every task of the server, as the local
//! stdio peer sees its store; on a non-loopback address without authentication the
//! dashboard is off.

use std::sync::Arc;

use futures::future::BoxFuture;
use mcp_tasks_core::TaskEngine;
use mcp_tasks_rpc::http::{UiApi, UiAssets, UiEndpoint, UiRequest, UiResponse};

pub mod api;

/// Where the dashboard is served.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum UiServing {
    /// Not at all (`--no-ui`): `/ui` is 404.
    Off,
    /// At `/ui` on the endpoint's port (when authentication is on, or the address is a
    /// loopback one).
    On {
        /// The principal that sees every task, with its owner (`--admin-principal`).
        admin: Option<String>,
    },
}

impl Default for UiServing {
    fn default() -> Self {
        Self::On { admin: None }
    }
}

const INDEX_HTML: &str = include_str!("../../assets/ui/index.html");
const APP_JS: &str = include_str!("../../assets/ui/app.js");
const APP_CSS: &str = include_str!("../../assets/ui/app.css");

/// The page's files by name under `/ui/`.
fn asset(name: &str) -> Option<(&'static str, &'static [u8])> {
    match name {
        "" | "index.html" => Some(("text/html; charset=utf-8", INDEX_HTML.as_bytes())),
        "app.js" => Some(("text/javascript; charset=utf-8", APP_JS.as_bytes())),
        "app.css" => Some(("text/css; charset=utf-8", APP_CSS.as_bytes())),
        _ => None,
    }
}

/// The transport's hook serving the dashboard of `engine`.
pub(crate) fn endpoint(engine: TaskEngine, admin: Option<String>) -> UiEndpoint {
    let api = api::Api::new(engine, admin);
    let answer: UiApi = Arc::new(move |req: UiRequest| -> BoxFuture<'static, UiResponse> {
        let api = api.clone();
        Box::pin(async move { api.answer(req).await })
    });
    let assets: UiAssets = Arc::new(asset);
    UiEndpoint::new(answer, assets)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_page_loads_only_embedded_files() {
        let (ty, page) = asset("").expect("the page");
        assert!(ty.starts_with("text/html"));
        let page = std::str::from_utf8(page).unwrap();
        assert!(page.contains("/ui/app.js") && page.contains("/ui/app.css"));
        assert!(
            !page.contains("http://") && !page.contains("https://"),
            "no external resource"
        );
        assert!(!APP_JS.contains("http://") && !APP_JS.contains("https://"));
        assert!(asset("app.js").is_some() && asset("app.css").is_some());
        assert!(asset("../Cargo.toml").is_none() && asset("api").is_none());
    }
}
