//! `mcp-tasks serve --upstream-cmd ... | --upstream-url ...`: the gateway wiring.

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{Context, bail};
use clap::Args;
use mcp_tasks_gateway::{
    FileConfig, GatewayConfig, HttpSpec, UpstreamSpec, parse_env_pair, parse_header_pair,
    parse_tool_task_support, parse_upstream_protocol,
};
use mcp_tasks_proto::{Revision, RevisionChoice};
use mcp_tasks_server::ExtensionFactory;

/// Options of `serve` in front of an existing MCP server.
#[derive(Args, Debug, Default)]
pub(crate) struct GatewayArgs {
    /// Put tasks in front of this stdio MCP server: a command line, split like a shell
    /// splits words (no shell runs). Started once per session, restarted when it dies.
    #[arg(long, value_name = "CMD ARGS", conflicts_with = "upstream_url")]
    upstream_cmd: Option<String>,
    /// An environment variable of the upstream command (repeatable), of `--upstream-cmd`
    /// or of the config file's `[upstream]` `command` (added to its `env`, and winning
    /// over it).
    #[arg(long, value_name = "K=V", conflicts_with = "upstream_url")]
    upstream_env: Vec<String>,
    /// Working directory of the upstream command.
    #[arg(long, value_name = "DIR", requires = "upstream_cmd")]
    upstream_cwd: Option<PathBuf>,
    /// Let the upstream command inherit the whole environment of `serve`, except its
    /// `MCP_TASKS_*` variables (never passed on: some carry secrets). Without it the
    /// command gets only `--upstream-env` and a pass-through list (PATH, HOME, USER,
    /// LOGNAME, SHELL, LANG, LANGUAGE, LC_*, TERM, TZ, TMPDIR, XDG_*_HOME/XDG_RUNTIME_DIR,
    /// SSL_CERT_FILE, SSL_CERT_DIR, NODE_EXTRA_CA_CERTS, and Windows' equivalents).
    #[arg(long)]
    upstream_inherit_env: bool,
    /// Most upstream connections (for a command: processes) at once; each downstream
    /// session has its own, and an `initialize` beyond the bound is refused with a
    /// JSON-RPC error until a session ends.
    #[arg(long, value_name = "N", default_value_t = mcp_tasks_gateway::DEFAULT_MAX_UPSTREAMS)]
    max_upstreams: usize,
    /// How long one call to the upstream may take (ms, or a duration like `30s`); past it
    /// the call fails with an error saying so and `notifications/cancelled` goes upstream.
    /// A `tasks/result` that outlasts it is followed with `tasks/get` instead. Default:
    /// no bound.
    #[arg(long, value_name = "DURATION", value_parser = crate::duration::parse)]
    upstream_timeout: Option<std::time::Duration>,
    /// The generation of MCP spoken to the upstream: `legacy` (2025-11-25 and before:
    /// `initialize`, a session; the default) or `modern` (2026-07-28: `server/discover`,
    /// the modern `_meta` on every request; its tools are listed `optional`, and its
    /// `input_required` answers and tasks are followed by the gateway, their input
    /// requests relayed to the client), or `auto` (each start of the upstream sends
    /// `server/discover` first, and speaks `initialize` unless a 2026-07-28
    /// `DiscoverResult` comes back within 5 s; over `--upstream-url` the fallback opens a
    /// new, legacy HTTP connection).
    /// `2025-11-25` and `2026-07-28` name the revisions as `legacy` and `modern` do.
    #[arg(
        long,
        value_name = "legacy|modern|auto",
        value_parser = ["legacy", "modern", "auto", "2025-11-25", "2026-07-28"]
    )]
    upstream_protocol: Option<String>,
    /// Put tasks in front of this Streamable HTTP MCP server.
    #[arg(long, value_name = "URL")]
    upstream_url: Option<String>,
    /// A header of every request to the upstream URL, e.g. its authorization (repeatable).
    #[arg(long, value_name = "K:V", requires = "upstream_url")]
    upstream_header: Vec<String>,
    /// `execution.taskSupport` of an upstream tool (repeatable); overrides the upstream's
    /// own and the config file.
    #[arg(long, value_name = "NAME=required|optional|forbidden")]
    tool_task_support: Vec<String>,
    /// A TOML file of settings: any flag of `serve` as a top-level key named like the flag
    /// (`max-ttl = "2h"`, `allowed-origin = ["https://a.example"]`, `stdio = true`), and
    /// for a gateway `[upstream]` (command, env, cwd | url, headers) and `[tools]` (tool
    /// name = "required|optional|forbidden"). Flags and `MCP_TASKS_*` variables win over
    /// it; an unknown key is an error. See `--print-config`.
    #[arg(long, value_name = "FILE.toml")]
    pub(crate) config: Option<PathBuf>,
    /// `[upstream]` and `[tools]` of the `--config` file (read by [`crate::config`]).
    #[arg(skip)]
    pub(crate) file: FileConfig,
}

impl GatewayArgs {
    /// Whether `serve` runs as a gateway.
    pub(crate) fn enabled(&self) -> bool {
        self.upstream_cmd.is_some() || self.upstream_url.is_some() || self.file.upstream.is_some()
    }

    /// `[tools]` of the config file, then the `--tool-task-support` overrides (which win),
    /// for the demo tools when `serve` is not a gateway.
    pub(crate) fn demo_overrides(
        &self,
    ) -> anyhow::Result<Vec<(String, mcp_tasks_proto::mcp::TaskSupport)>> {
        let mut all: Vec<_> = self.file_tools()?.into_iter().collect();
        for s in &self.tool_task_support {
            all.push(parse_tool_task_support(s).context("--tool-task-support")?);
        }
        Ok(all)
    }

    /// `[tools]` of the config file.
    fn file_tools(
        &self,
    ) -> anyhow::Result<std::collections::BTreeMap<String, mcp_tasks_proto::mcp::TaskSupport>> {
        self.file
            .tool_task_support()
            .with_context(|| self.file_context())
    }

    /// `--config FILE`, to say where a setting of the file came from.
    fn file_context(&self) -> String {
        match &self.config {
            Some(path) => format!("--config {}", path.display()),
            None => "--config".to_owned(),
        }
    }

    /// The gateway configuration from flags and the config file.
    pub(crate) fn config(&self) -> anyhow::Result<GatewayConfig> {
        let upstream = if let Some(cmd) = &self.upstream_cmd {
            let env = parse_each(&self.upstream_env, parse_env_pair, "--upstream-env")?;
            UpstreamSpec::stdio_from_command_line(cmd, env, self.upstream_cwd.clone())
                .context("--upstream-cmd")?
                .with_inherit_env(self.upstream_inherit_env)
        } else if let Some(url) = &self.upstream_url {
            let headers = parse_each(
                &self.upstream_header,
                parse_header_pair,
                "--upstream-header",
            )?;
            let mut spec = HttpSpec::new(url.clone());
            spec.headers = headers;
            UpstreamSpec::Http(spec)
        } else {
            let env = parse_each(&self.upstream_env, parse_env_pair, "--upstream-env")?;
            match self.file.upstream().with_context(|| self.file_context())? {
                Some(UpstreamSpec::Http(_)) if !env.is_empty() => bail!(
                    "--upstream-env: the upstream of {} is a URL, not a command",
                    self.file_context()
                ),
                Some(u) if self.upstream_inherit_env => u.with_env(env).with_inherit_env(true),
                Some(u) => u.with_env(env),
                None => bail!("--config: no [upstream] and no --upstream-cmd/--upstream-url"),
            }
        };
        let mut tool_task_support = self.file_tools()?;
        for s in &self.tool_task_support {
            let (name, mode) = parse_tool_task_support(s).context("--tool-task-support")?;
            tool_task_support.insert(name, mode);
        }
        if self.max_upstreams == 0 {
            bail!("--max-upstreams must be at least 1");
        }
        let upstream_timeout = match self.upstream_timeout {
            None => None,
            Some(d) => {
                if d.is_zero() {
                    bail!("--upstream-timeout must be more than 0");
                }
                Some(d)
            }
        };
        let upstream_protocol = match &self.upstream_protocol {
            Some(p) => parse_upstream_protocol(p).context("--upstream-protocol")?,
            None => RevisionChoice::Fixed(Revision::V2025_11_25),
        };
        let mut config = GatewayConfig::new(upstream);
        config.upstream_protocol = upstream_protocol;
        config.tool_task_support = tool_task_support;
        config.max_upstreams = self.max_upstreams;
        config.upstream_timeout = upstream_timeout;
        Ok(config)
    }
}

/// Where the notes of upstream tasks go for the task store `--store` names: beside a
/// SQLite file (`tasks.db` -> `tasks.db.gateway/`); nowhere for a store that does not
/// outlive the process.
fn notes_dir(store: Option<&str>) -> Option<PathBuf> {
    let db = match store {
        None => mcp_tasks_store_sqlite::default_path(),
        Some(s) => {
            let path = s.strip_prefix("sqlite:")?;
            PathBuf::from(path.split_once('?').map_or(path, |(p, _)| p))
        }
    };
    let mut name = db.file_name()?.to_os_string();
    name.push(".gateway");
    Some(db.with_file_name(name))
}

/// Every value of the repeated option `flag`, parsed by `parse`.
fn parse_each<T, E>(
    values: &[String],
    parse: impl Fn(&str) -> Result<T, E>,
    flag: &'static str,
) -> anyhow::Result<Vec<T>>
where
    E: std::error::Error + Send + Sync + 'static,
{
    values
        .iter()
        .map(|s| parse(s))
        .collect::<Result<Vec<_>, _>>()
        .context(flag)
}

/// The extension of `serve` in gateway mode; `store` is the `--store` option (upstream
/// tasks are noted beside a durable store, to be followed again after a restart).
pub(crate) fn extension(
    args: &GatewayArgs,
    store: Option<&str>,
    max_line_bytes: usize,
    tasks: bool,
) -> anyhow::Result<Arc<dyn ExtensionFactory>> {
    let mut gateway = args.config()?;
    gateway.notes_dir = notes_dir(store);
    tracing::info!(upstream = %gateway.upstream.describe(), overrides = gateway.tool_task_support.len(), "serving as a gateway");
    Ok(mcp_tasks_gateway::extension(
        &gateway,
        max_line_bytes,
        tasks,
    )?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn notes_live_beside_a_sqlite_store_only() {
        assert_eq!(
            notes_dir(Some("sqlite:/var/x/tasks.db?synchronous=normal")),
            Some(PathBuf::from("/var/x/tasks.db.gateway"))
        );
        assert_eq!(notes_dir(Some("memory")), None);
        assert!(notes_dir(None).is_some());
    }
}
