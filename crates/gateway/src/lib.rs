//! The gateway of mcp-tasks: spec-exact, durable MCP tasks (2025-11-25, and 2026-07-28 with
//! the tasks extension) in front of any MCP server.
//!
//! `mcp-tasks serve --upstream-cmd "COMMAND ARGS"` puts the receiver in front of an
//! existing server. Each downstream session gets its own upstream connection (a *lane*,
//! see `docs/adr/0002-gateway-sessions.md`), started with the session's own client
//! capabilities and supervised: restarted with backoff when it dies.
//!
//! The public API is [`extension`] (the [`GatewayFactory`] a server builder takes, with a
//! custom [`Connector`] if the upstream is reached some other way) and its configuration ([`GatewayConfig`], [`UpstreamSpec`]
//! (the client's [`StdioSpec`] or [`HttpSpec`]), the TOML [`FileConfig`] and the flag
//! parsers); everything else is private:
//!
//! * `config`: the upstream and the per-tool task support overrides (flags or TOML);
//! * `tool_set`: the upstream's tools as listed, with the tool policy; `tools`: the bridge
//!   that runs an upstream tool for a task;
//! * `upstream_task`: tools the upstream runs as tasks of its own; `notes`: which upstream
//!   task backs which of ours, and `resume`: following them again after a restart;
//! * `lane`: the supervised connection (a [`mcp_tasks_client::connection::Connection`],
//!   whose [`mcp_tasks_client::connection::ServerMessages`] the lane is), routing of what
//!   the upstream sends; `upstream_call`: the lane's calls on it and their errors;
//! * `modern`: the lanes of 2026-07-28 (stateless) requests, one per principal;
//! * `modern_upstream`: the reverse bridge, a 2026-07-28 upstream
//!   (`--upstream-protocol modern|auto`): `server/discover`, the modern `_meta`, and the
//!   `input_required` and `task` answers of its tools followed;
//! * `session`: the [`mcp_tasks_server::SessionParts`] (tool source and fallback) that plugs it all into the
//!   receiver;
//! * `connectors`: the client's connector ([`mcp_tasks_client::connect`]: a child
//!   process group over stdio, or a Streamable HTTP session) of the configured upstream.
//!
//! Everything the gateway does not interpret (resources, prompts, completion, logging,
//! ping, `list_changed` notifications, unknown methods, unknown fields, `_meta`) crosses
//! in both directions unchanged.

mod backoff;
mod config;
mod connectors;
mod error;
mod lane;
mod modern;
mod modern_upstream;
mod notes;
mod resume;
mod session;
mod tool_set;
mod tools;
mod upstream_call;
mod upstream_task;

use std::sync::Arc;

pub use config::{
    CommandLine, DEFAULT_MAX_UPSTREAMS, FileConfig, FileUpstream, GatewayConfig, UpstreamSpec,
    parse_env_pair, parse_header_pair, parse_tool_task_support, parse_upstream_protocol,
};
pub use error::GatewayError;
pub use mcp_tasks_client::connect::{Connected, Connector, HttpSpec, SessionProbe, StdioSpec};
pub use notes::UpstreamSession;
pub use session::GatewayFactory;

/// The extension that makes every session of a receiver a gateway session in front of
/// `config.upstream`: give it to [`mcp_tasks_server::ServerBuilder::extension`], which
/// installs its resumer (when `tasks` is on and `config.notes_dir` is set, or the task
/// store keeps notes itself, as PostgreSQL does: upstream tasks noted there are followed
/// again after a restart, or by another replica after one dies) before the engine starts.
/// `max_line_bytes` bounds one message from the upstream.
///
/// # Errors
/// When the upstream kind is not available, or the notes directory cannot be opened.
pub fn extension(
    config: &GatewayConfig,
    max_line_bytes: usize,
    tasks: bool,
) -> Result<Arc<GatewayFactory>, GatewayError> {
    let connector =
        connectors::connector(&config.upstream, max_line_bytes, config.upstream_protocol)?;
    let mut limits = lane::Limits::new(config.max_upstreams, config.upstream_timeout);
    limits.upstream_protocol = config.upstream_protocol;
    let mut factory = GatewayFactory::new(connector, config.tool_task_support.clone())
        .with_limits(Arc::new(limits));
    if let (Some(dir), true) = (&config.notes_dir, tasks) {
        let notes = notes::Notes::open(dir).map_err(|e| {
            GatewayError::Config(format!(
                "cannot keep upstream task notes in {}: {e}",
                dir.display()
            ))
        })?;
        factory = factory.with_notes(Arc::new(notes));
    }
    Ok(Arc::new(factory))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_protocol_serves_an_http_upstream() {
        let mut c = GatewayConfig::new(UpstreamSpec::Http(HttpSpec::new("http://127.0.0.1:9/mcp")));
        c.upstream_protocol = mcp_tasks_proto::RevisionChoice::Auto;
        assert!(extension(&c, 1024, false).is_ok());
        c.upstream_protocol = mcp_tasks_proto::Revision::V2026_07_28.into();
        assert!(extension(&c, 1024, false).is_ok());
        assert_eq!(
            parse_upstream_protocol("auto").unwrap(),
            mcp_tasks_proto::RevisionChoice::Auto
        );
        // The generation words and the dated names alike.
        assert_eq!(
            parse_upstream_protocol("modern").unwrap(),
            parse_upstream_protocol("2026-07-28").unwrap()
        );
        assert_eq!(
            parse_upstream_protocol("legacy").unwrap(),
            parse_upstream_protocol("2025-11-25").unwrap()
        );
        assert!(parse_upstream_protocol("sometimes").is_err());
    }
}
