//! `/ui`: the dashboard's page (no authentication: it asks for a token) and its JSON API
//! under `/ui/api/` (the endpoint's bearer authentication), both behind the origin check.

use std::sync::Arc;

use axum::body::Body;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, Uri, header};
use axum::response::Response;
use mcp_tasks_proto::codes;

use super::checks::authenticate;
use super::response::{http_error, json_response, method_not_allowed, not_served};
use crate::http::state::Shared;
use crate::http::ui::{UiMethod, UiRequest};

/// The headers of every dashboard response: nothing is cached (task data, a token in
/// memory), nothing is framed or sniffed, the page loads only its own files.
fn harden(r: &mut Response) {
    let h = r.headers_mut();
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(
            "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'; \
             base-uri 'none'; form-action 'self'",
        ),
    );
}

fn asset(shared: &Shared, name: &str) -> Response {
    let Some(ui) = &shared.config.ui else {
        return not_served();
    };
    let mut r = match (ui.assets)(name) {
        Some((content_type, bytes)) => {
            let mut r = Response::new(Body::from(bytes));
            r.headers_mut()
                .insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
            r
        }
        None => http_error(
            StatusCode::NOT_FOUND,
            codes::INVALID_REQUEST,
            "Not found: no such file of the dashboard",
        ),
    };
    harden(&mut r);
    r
}

/// `GET /ui` and `GET /ui/`: the page.
pub(super) async fn index(State(shared): State<Arc<Shared>>) -> Response {
    asset(&shared, "")
}

/// `/ui/{rest}`: a file of the page (GET), or the API under `/ui/api/`.
pub(super) async fn under(
    State(shared): State<Arc<Shared>>,
    Path(rest): Path<String>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
) -> Response {
    let Some(api_path) = rest.strip_prefix("api/") else {
        if method != Method::GET {
            return method_not_allowed().await;
        }
        return asset(&shared, &rest);
    };
    let Some(ui) = &shared.config.ui else {
        return not_served();
    };
    let principal = match authenticate(&shared, &headers).await {
        Ok(p) => p,
        Err(r) => {
            let mut r = *r;
            harden(&mut r);
            return r;
        }
    };
    let method = if method == Method::POST {
        UiMethod::Post
    } else {
        UiMethod::Get
    };
    let req = UiRequest {
        method,
        path: api_path.to_owned(),
        query: uri.query().unwrap_or_default().to_owned(),
        principal,
    };
    let answer = (ui.api)(req).await;
    let status = StatusCode::from_u16(answer.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let mut r = json_response(status, answer.body);
    if let Some(secs) = answer.retry_after_secs {
        r.headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from(secs));
    }
    harden(&mut r);
    r
}
