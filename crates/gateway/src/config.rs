//! What the gateway is put in front of, and how its tools may run as tasks.
//!
//! Built from `serve` flags or a TOML file:
//!
//! ```toml
//! [upstream]
//! command = "npx -y @modelcontextprotocol/server-everything stdio"  # split like a shell, no shell
//! env = { API_KEY = "..." }   # the command gets these and the pass-through list only
//! # inherit_env = true       # ... or the gateway's whole environment but MCP_TASKS_*
//! cwd = "/srv/tools"
//! # or: url = "https://example.com/mcp"
//! #     headers = { Authorization = "Bearer ..." }
//!
//! [tools]
//! echo = "optional"          # execution.taskSupport of the upstream tool `echo`
//! slow-report = "required"
//! ```

use std::collections::BTreeMap;
use std::path::PathBuf;

use mcp_tasks_client::connect::{HttpSpec, StdioSpec};
use mcp_tasks_proto::mcp::TaskSupport;
use mcp_tasks_proto::{Revision, RevisionChoice};
use serde::Deserialize;

use crate::error::GatewayError;

/// Where the upstream server is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UpstreamSpec {
    /// A command started by the gateway, spoken to over its stdin/stdout: the client's
    /// [`StdioSpec`] (its environment is the pass-through list,
    /// [`mcp_tasks_client::connect::PASS_THROUGH`], plus its own `env`, or with
    /// `inherit_env` the gateway's whole environment but `MCP_TASKS_*`). Its `Debug`
    /// shows the names of the `env`, not their values.
    Stdio(StdioSpec),
    /// A Streamable HTTP endpoint, with extra request headers (authorization, typically):
    /// the client's [`HttpSpec`]. Its `Debug` shows the URL as logs do and the names of
    /// the headers, not their values.
    Http(HttpSpec),
}

impl UpstreamSpec {
    /// A stdio upstream from a command line, split like a shell splits words (quotes and
    /// backslashes honoured; no shell runs, so no globbing, variables or pipes).
    ///
    /// # Errors
    /// An empty command or unbalanced quotes.
    pub fn stdio_from_command_line(
        line: &str,
        env: Vec<(String, String)>,
        cwd: Option<PathBuf>,
    ) -> Result<Self, GatewayError> {
        let words = shlex::split(line).ok_or_else(|| {
            GatewayError::Config(format!("upstream command `{line}`: unbalanced quotes"))
        })?;
        let mut words = words.into_iter();
        let program = words
            .next()
            .ok_or_else(|| GatewayError::Config("upstream command is empty".into()))?;
        let mut spec = StdioSpec::new(program, words.collect());
        spec.env = env;
        spec.cwd = cwd;
        Ok(Self::Stdio(spec))
    }

    /// The same upstream, inheriting the gateway's environment (a stdio upstream; other
    /// kinds are returned unchanged).
    #[must_use]
    pub fn with_inherit_env(mut self, yes: bool) -> Self {
        if let Self::Stdio(spec) = &mut self {
            spec.inherit_env = yes;
        }
        self
    }

    /// The same upstream with `env` added to its environment variables, after (and so
    /// winning over) those it has (a stdio upstream; other kinds are returned unchanged).
    #[must_use]
    pub fn with_env(mut self, more: Vec<(String, String)>) -> Self {
        if let Self::Stdio(spec) = &mut self {
            spec.env.extend(more);
        }
        self
    }

    /// A short description for logs and error messages (no header values, no env values,
    /// no URL password, no value of a secret-like option of the command).
    pub fn describe(&self) -> String {
        match self {
            Self::Stdio(spec) => spec.describe(),
            Self::Http(spec) => {
                format!(
                    "Streamable HTTP {}",
                    mcp_tasks_proto::logged::redact_url(&spec.url)
                )
            }
        }
    }
}

/// Parse `K=V`.
///
/// # Errors
/// When there is no `=` or the key is empty.
pub fn parse_env_pair(s: &str) -> Result<(String, String), GatewayError> {
    match s.split_once('=') {
        Some((k, v)) if !k.is_empty() => Ok((k.to_owned(), v.to_owned())),
        _ => Err(GatewayError::Config(format!("`{s}`: expected KEY=VALUE"))),
    }
}

/// Parse `K:V` (an HTTP header; spaces around the value are trimmed).
///
/// # Errors
/// When there is no `:` or the name is empty.
pub fn parse_header_pair(s: &str) -> Result<(String, String), GatewayError> {
    match s.split_once(':') {
        Some((k, v)) if !k.trim().is_empty() => Ok((k.trim().to_owned(), v.trim().to_owned())),
        _ => Err(GatewayError::Config(format!("`{s}`: expected NAME:VALUE"))),
    }
}

/// Parse `NAME=required|optional|forbidden`.
///
/// # Errors
/// A missing `=` or an unknown mode.
pub fn parse_tool_task_support(s: &str) -> Result<(String, TaskSupport), GatewayError> {
    let (name, mode) = s.rsplit_once('=').ok_or_else(|| {
        GatewayError::Config(format!("`{s}`: expected NAME=required|optional|forbidden"))
    })?;
    let support = TaskSupport::parse(mode).ok_or_else(|| {
        GatewayError::Config(format!(
            "`{s}`: `{mode}` is not required, optional or forbidden"
        ))
    })?;
    if name.is_empty() {
        return Err(GatewayError::Config(format!("`{s}`: empty tool name")));
    }
    Ok((name.to_owned(), support))
}

/// Parse the revision the gateway speaks to its upstream (`--upstream-protocol`, the
/// `upstream-protocol` key of the file): `legacy` or `2025-11-25` (`initialize`, then a
/// session), `modern` or `2026-07-28` (`server/discover`, the modern `_meta` on every
/// request, no session; upstream tools answer `complete`, `input_required` or (tasks
/// extension) `task`), or `auto`: each connection first sends `server/discover`; a
/// `DiscoverResult` naming 2026-07-28 makes it 2026-07-28, any other answer (or none
/// within [`mcp_tasks_client::DEFAULT_PROBE_TIMEOUT`]) 2025-11-25, spoken through
/// `initialize` on the same connection (stdio) or on a new one (Streamable HTTP, whose
/// transport differs by revision): the client's
/// [`Connection::start`](mcp_tasks_client::connection::Connection::start).
///
/// # Errors
/// Any other word.
pub fn parse_upstream_protocol(s: &str) -> Result<RevisionChoice, GatewayError> {
    s.parse().map_err(|_| {
        GatewayError::Config(format!(
            "upstream protocol `{s}`: expected legacy, modern, auto, 2025-11-25 or 2026-07-28"
        ))
    })
}

/// Everything the gateway needs to know.
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GatewayConfig {
    /// The upstream server.
    pub upstream: UpstreamSpec,
    /// Per-tool `execution.taskSupport` overrides.
    pub tool_task_support: BTreeMap<String, TaskSupport>,
    /// Where notes of upstream tasks are kept so that they survive a restart (next to a
    /// durable task store); `None` keeps none.
    pub notes_dir: Option<PathBuf>,
    /// Most upstream connections (stdio: processes) at once, one per downstream session
    /// (and per task resumed after a restart); `initialize` beyond it is refused.
    pub max_upstreams: usize,
    /// How long one call to the upstream may take; `None`: no bound.
    pub upstream_timeout: Option<std::time::Duration>,
    /// The revision spoken to the upstream, or `Auto` to detect it (default:
    /// 2025-11-25; see [`parse_upstream_protocol`]).
    pub upstream_protocol: RevisionChoice,
}

impl GatewayConfig {
    /// A gateway in front of `upstream`: no task-support overrides, no notes, at most
    /// [`DEFAULT_MAX_UPSTREAMS`] upstream connections, no bound on a call's time.
    pub fn new(upstream: UpstreamSpec) -> Self {
        Self {
            upstream,
            tool_task_support: BTreeMap::new(),
            notes_dir: None,
            max_upstreams: DEFAULT_MAX_UPSTREAMS,
            upstream_timeout: None,
            upstream_protocol: RevisionChoice::Fixed(Revision::V2025_11_25),
        }
    }
}

/// The default of [`GatewayConfig::max_upstreams`]: 32. A Node.js upstream takes about
/// 44 MiB (a minimal server) to 68 MiB (`server-everything`) of resident memory each, so
/// 32 of them about 1.4 to 2.2 GiB (measured; see `docs/operating.md`, "Policy and limits").
pub const DEFAULT_MAX_UPSTREAMS: usize = 32;

/// The TOML file, as written.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileConfig {
    /// `[upstream]`.
    #[serde(default)]
    pub upstream: Option<FileUpstream>,
    /// `[tools]`: tool name -> `required|optional|forbidden`.
    #[serde(default)]
    pub tools: BTreeMap<String, String>,
}

/// `[upstream]` of the TOML file.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileUpstream {
    /// A command line (split like a shell), or
    #[serde(default)]
    pub command: Option<CommandLine>,
    /// ... a Streamable HTTP URL.
    #[serde(default)]
    pub url: Option<String>,
    /// Environment of the command.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// Working directory of the command.
    #[serde(default)]
    pub cwd: Option<PathBuf>,
    /// Inherit the gateway's whole environment (except `MCP_TASKS_*`), not only the
    /// pass-through list.
    #[serde(default)]
    pub inherit_env: bool,
    /// Headers of every HTTP request.
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
}

/// A command as one string (split like a shell) or as a list of words.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub enum CommandLine {
    /// `"prog arg1 'arg 2'"`
    Line(String),
    /// `["prog", "arg1", "arg 2"]`
    Words(Vec<String>),
}

impl FileConfig {
    /// Parse the TOML text of a config file.
    ///
    /// # Errors
    /// Invalid TOML or unknown keys.
    pub fn parse(text: &str) -> Result<Self, GatewayError> {
        toml::from_str(text).map_err(|e| GatewayError::Config(format!("config file: {e}")))
    }

    /// The upstream named by the file, if any.
    ///
    /// # Errors
    /// Both or neither of `command` and `url`, or a bad command line.
    pub fn upstream(&self) -> Result<Option<UpstreamSpec>, GatewayError> {
        let Some(u) = &self.upstream else {
            return Ok(None);
        };
        let env: Vec<(String, String)> =
            u.env.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
        match (&u.command, &u.url) {
            (Some(_), Some(_)) => Err(GatewayError::Config(
                "[upstream]: give either `command` or `url`, not both".into(),
            )),
            (None, None) => Err(GatewayError::Config(
                "[upstream]: `command` or `url` is required".into(),
            )),
            (Some(CommandLine::Line(line)), None) => {
                UpstreamSpec::stdio_from_command_line(line, env, u.cwd.clone())
                    .map(|s| Some(s.with_inherit_env(u.inherit_env)))
            }
            (Some(CommandLine::Words(words)), None) => {
                let mut words = words.iter().cloned();
                let program = words
                    .next()
                    .ok_or_else(|| GatewayError::Config("[upstream]: `command` is empty".into()))?;
                let mut spec = StdioSpec::new(program, words.collect());
                spec.env = env;
                spec.cwd.clone_from(&u.cwd);
                spec.inherit_env = u.inherit_env;
                Ok(Some(UpstreamSpec::Stdio(spec)))
            }
            (None, Some(url)) => {
                let mut spec = HttpSpec::new(url.clone());
                spec.headers = u
                    .headers
                    .iter()
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect();
                Ok(Some(UpstreamSpec::Http(spec)))
            }
        }
    }

    /// The `[tools]` overrides.
    ///
    /// # Errors
    /// A mode other than `required`, `optional`, `forbidden`.
    pub fn tool_task_support(&self) -> Result<BTreeMap<String, TaskSupport>, GatewayError> {
        self.tools
            .iter()
            .map(|(name, mode)| {
                TaskSupport::parse(mode)
                    .map(|s| (name.clone(), s))
                    .ok_or_else(|| {
                        GatewayError::Config(format!(
                            "[tools] {name} = \"{mode}\": expected required, optional or forbidden"
                        ))
                    })
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_description_in_logs_shows_no_secret_of_the_command() {
        let u = UpstreamSpec::stdio_from_command_line(
            "mysql-mcp -p SECRET1 --api-token=SECRET2 --url postgres://u:SECRET3@h/db",
            vec![],
            None,
        )
        .unwrap();
        let shown = u.describe();
        assert!(
            shown.starts_with("stdio `mysql-mcp -p *** --api-token=***"),
            "{shown}"
        );
        assert!(!shown.contains("SECRET"), "{shown}");
    }

    #[test]
    fn the_debug_of_a_stdio_upstream_shows_the_names_of_its_env_not_their_values() {
        let u = UpstreamSpec::stdio_from_command_line(
            "srv --api-token=s3cret-arg",
            vec![("API_KEY".into(), "s3cret-env".into())],
            None,
        )
        .unwrap()
        .with_env(vec![("MORE".into(), "s3cret-more".into())]);
        let config = GatewayConfig::new(u);
        for shown in [format!("{:?}", config.upstream), format!("{config:?}")] {
            assert!(
                shown.contains("API_KEY") && shown.contains("MORE"),
                "{shown}"
            );
            assert!(!shown.contains("s3cret"), "{shown}");
        }
    }

    #[test]
    fn the_debug_of_an_http_upstream_shows_the_names_of_its_headers_not_their_values() {
        let f = FileConfig::parse(
            r#"
            [upstream]
            url = "https://u:s3cret-pw@example.com/mcp"
            headers = { Authorization = "Bearer s3cret-token" }
            "#,
        )
        .unwrap();
        let config = GatewayConfig::new(f.upstream().unwrap().unwrap());
        for shown in [format!("{:?}", config.upstream), format!("{config:?}")] {
            assert!(
                shown.contains("Authorization") && shown.contains("example.com"),
                "{shown}"
            );
            assert!(!shown.contains("s3cret"), "{shown}");
        }
    }

    #[test]
    fn command_lines_split_like_a_shell() {
        let u = UpstreamSpec::stdio_from_command_line(
            r#"node "my server.js" --flag 'a b' c\ d"#,
            vec![],
            None,
        )
        .unwrap();
        let UpstreamSpec::Stdio(spec) = u else {
            panic!()
        };
        assert_eq!(spec.program, "node");
        assert_eq!(spec.args, ["my server.js", "--flag", "a b", "c d"]);
        assert!(UpstreamSpec::stdio_from_command_line("", vec![], None).is_err());
        assert!(UpstreamSpec::stdio_from_command_line("a 'b", vec![], None).is_err());
    }

    #[test]
    fn pairs_and_modes() {
        assert_eq!(parse_env_pair("A=b=c").unwrap(), ("A".into(), "b=c".into()));
        assert!(parse_env_pair("=x").is_err());
        assert_eq!(
            parse_header_pair("Authorization: Bearer x").unwrap(),
            ("Authorization".into(), "Bearer x".into())
        );
        assert_eq!(
            parse_tool_task_support("get-sum=optional").unwrap(),
            ("get-sum".into(), TaskSupport::Optional)
        );
        assert!(parse_tool_task_support("x=sometimes").is_err());
        assert!(parse_tool_task_support("x").is_err());
    }

    #[test]
    fn toml_file() {
        let f = FileConfig::parse(
            r#"
            [upstream]
            command = ["node", "server.js"]
            env = { K = "V" }
            [tools]
            echo = "optional"
            "#,
        )
        .unwrap();
        let mut spec = StdioSpec::new("node", vec!["server.js".into()]);
        spec.env.push(("K".into(), "V".into()));
        assert_eq!(f.upstream().unwrap(), Some(UpstreamSpec::Stdio(spec)));
        assert_eq!(
            f.tool_task_support().unwrap().get("echo"),
            Some(&TaskSupport::Optional)
        );
        assert!(FileConfig::parse("[upstream]\nbogus = 1").is_err());
        let bad = FileConfig::parse("[tools]\nx = \"maybe\"").unwrap();
        assert!(bad.tool_task_support().is_err());
    }
}
