//! One configuration for `mcp-tasks serve`: every setting comes from its flag, else from
//! its `MCP_TASKS_*` environment variable, else from the TOML file of `--config`, else
//! from the flag's default.
//!
//! How: the command line is parsed by clap with an environment variable attached to every
//! argument of `serve` ([`command`]), so clap itself prefers a flag to its variable. The
//! file comes second: for each of its keys whose argument came neither from the command
//! line nor from the environment (clap's `value_source`), `--key=value` is appended to the
//! command line and it is parsed again ([`file::layer`]). File values are so checked by the
//! same value parsers as flags, with the same messages. The file's `[upstream]` and
//! `[tools]` tables (the gateway's, unchanged) go to [`crate::gateway::GatewayArgs`].

pub(crate) mod file;
mod print;
#[cfg(test)]
mod tests;

use std::collections::BTreeSet;
use std::ffi::OsString;
use std::path::PathBuf;

use anyhow::Context;
use clap::{Arg, ArgMatches, CommandFactory, FromArgMatches};

pub(crate) use print::render;

/// The arguments of `serve` that are not settings: no variable, no file key.
const NOT_SETTINGS: &[&str] = &["help", "version", "print_config", "config"];

/// The environment variable of the `serve` flag `--long`: `MCP_TASKS_` and the flag's name
/// in capitals with `_` for `-` (`--max-ttl`: `MCP_TASKS_MAX_TTL`). One exception:
/// `--auth-tokens FILE` is `MCP_TASKS_AUTH_TOKENS_FILE`, as `MCP_TASKS_AUTH_TOKENS` holds
/// the tokens themselves.
pub(crate) fn env_var(long: &str) -> String {
    if long == "auth-tokens" {
        return "MCP_TASKS_AUTH_TOKENS_FILE".to_owned();
    }
    format!("MCP_TASKS_{}", long.to_ascii_uppercase().replace('-', "_"))
}

/// The environment variable naming the config file.
pub(crate) const CONFIG_ENV: &str = "MCP_TASKS_CONFIG";

/// An argument of `serve` with its environment variable ([`env_var`]); values are never
/// shown by `--help` (some are secrets). A switch's variable says `true`, `yes`, `on` or
/// `1` (or `false`, `no`, `off`, `0`).
fn with_env(arg: Arg) -> Arg {
    let id = arg.get_id().as_str();
    if id == "config" {
        return arg.env(CONFIG_ENV).hide_env_values(true);
    }
    if NOT_SETTINGS.contains(&id) || arg.get_env().is_some() {
        return arg.hide_env_values(true);
    }
    let arg = match arg.get_long().map(env_var) {
        Some(name) => arg.env(name).hide_env_values(true),
        None => return arg,
    };
    // A switch's variable: `true`/`false`, `yes`/`no`, `on`/`off`, `1`/`0`.
    if matches!(arg.get_action(), clap::ArgAction::SetTrue) {
        return arg.value_parser(clap::builder::BoolishValueParser::new());
    }
    arg
}

/// The command line of `mcp-tasks`, every `serve` setting with its environment variable.
pub(crate) fn command() -> clap::Command {
    crate::Cli::command().mut_subcommand("serve", |serve| serve.mut_args(with_env))
}

/// The parsed command line, and for `serve` where each setting came from.
#[derive(Debug)]
pub(crate) struct Parsed {
    pub(crate) cli: crate::Cli,
    pub(crate) serve: Option<Effective>,
}

/// The settings of `serve` and their sources, for `--print-config`.
#[derive(Debug)]
pub(crate) struct Effective {
    /// The `serve` command, built (the global `--log-format` included).
    cmd: clap::Command,
    /// Its matches, the file applied.
    matches: ArgMatches,
    /// The ids of the arguments whose value came from the file.
    from_file: BTreeSet<String>,
    /// The file's keys left out because a conflicting flag or variable was given:
    /// `(key, that flag)`.
    unused: Vec<(String, String)>,
    /// The config file.
    path: Option<PathBuf>,
}

/// Why the command line could not be parsed.
#[derive(Debug)]
pub(crate) enum Error {
    /// Clap's (bad flag, bad value, `--help`, `--version`); the config file if its values
    /// took part.
    Clap(clap::Error, Option<PathBuf>),
    /// The config file cannot be read, is not TOML, or has an unknown key or a value of
    /// the wrong type.
    File(anyhow::Error),
}

impl Error {
    /// Say it on stderr (or the help on stdout) and exit: 0 for help and version, else 2.
    pub(crate) fn exit(self) -> ! {
        match self {
            Self::Clap(e, file) => {
                let _ = e.print();
                if e.use_stderr()
                    && let Some(path) = file
                {
                    eprintln!("(with the settings of the config file {})", path.display());
                }
                std::process::exit(e.exit_code())
            }
            Self::File(e) => {
                eprintln!("mcp-tasks: {e:#}");
                std::process::exit(2)
            }
        }
    }
}

/// Parse the command line `argv` (the program name first), the environment and, for
/// `serve`, the `--config` file.
///
/// # Errors
/// See [`Error`].
pub(crate) fn parse(argv: Vec<OsString>) -> Result<Parsed, Error> {
    let mut cmd = command();
    let first = cmd
        .try_get_matches_from_mut(argv.iter())
        .map_err(|e| Error::Clap(e, None))?;
    let Some(sub) = first.subcommand_matches("serve") else {
        let cli = crate::Cli::from_arg_matches(&first).map_err(|e| Error::Clap(e, None))?;
        return Ok(Parsed { cli, serve: None });
    };
    let serve = cmd
        .find_subcommand("serve")
        .context("no serve command")
        .map_err(Error::File)?
        .clone();
    let path = sub.get_one::<PathBuf>("config").cloned();
    let (gateway, layer) = match &path {
        None => Default::default(),
        Some(p) => {
            let text = std::fs::read_to_string(p)
                .with_context(|| format!("--config: cannot read {}", p.display()))
                .map_err(Error::File)?;
            let f = file::parse(&text, &serve)
                .with_context(|| format!("--config {}", p.display()))
                .map_err(Error::File)?;
            (f.gateway, file::layer(&f.settings, &serve, sub))
        }
    };
    let matches = if layer.args.is_empty() {
        first
    } else {
        let args = argv
            .into_iter()
            .chain(layer.args.iter().map(OsString::from));
        cmd.try_get_matches_from_mut(args)
            .map_err(|e| Error::Clap(e, path.clone()))?
    };
    let mut cli = crate::Cli::from_arg_matches(&matches).map_err(|e| Error::Clap(e, None))?;
    if let crate::Command::Serve(args) = &mut cli.command {
        args.gateway.file = gateway;
    }
    let matches = matches
        .subcommand_matches("serve")
        .cloned()
        .unwrap_or_default();
    Ok(Parsed {
        cli,
        serve: Some(Effective {
            cmd: serve,
            matches,
            from_file: layer.from_file,
            unused: layer.unused,
            path,
        }),
    })
}
