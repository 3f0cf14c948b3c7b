//! `GET /metrics`: served like the endpoint (the origin check applies), and with
//! authentication on, only to the principal [`MetricsEndpoint::principal`] names.

use std::sync::Arc;

use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::Response;
use mcp_tasks_proto::codes;

use super::checks::authenticate;
use super::response::{http_error, not_served, text_response};
use crate::http::state::Shared;

/// The metrics text, or 401 (no or an unknown token) / 403 (another principal's token).
pub(super) async fn metrics(State(shared): State<Arc<Shared>>, headers: HeaderMap) -> Response {
    let Some(endpoint) = &shared.config.metrics else {
        return not_served();
    };
    let principal = match authenticate(&shared, &headers).await {
        Ok(p) => p,
        Err(r) => return *r,
    };
    if let Some(p) = principal
        && endpoint.principal.as_ref() != Some(&p)
    {
        tracing::debug!("metrics refused to a principal that is not --metrics-principal");
        return http_error(
            StatusCode::FORBIDDEN,
            codes::INVALID_REQUEST,
            "Forbidden: the metrics are for the principal named by --metrics-principal",
        );
    }
    let body = (endpoint.render)(shared.gauges()).await;
    let mut r = text_response(StatusCode::OK, body);
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(endpoint.content_type),
    );
    r
}
