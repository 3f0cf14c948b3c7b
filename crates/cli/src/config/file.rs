//! The `--config` file: its settings (top-level keys named like the flags of `serve`) and
//! the gateway's `[upstream]` and `[tools]` tables.
//!
//! Error messages name keys, never values (a value may be a secret).

use std::collections::{BTreeMap, BTreeSet};

use anyhow::{Context, bail};
use clap::parser::ValueSource;
use clap::{Arg, ArgAction, ArgMatches};
use mcp_tasks_gateway::{CommandLine, FileConfig, FileUpstream};
use mcp_tasks_proto::mcp::TaskSupport;
use toml::Value;

use super::NOT_SETTINGS;

/// A config file, read.
#[derive(Debug, Default)]
pub(crate) struct FileSettings {
    /// The settings, in the file's order of keys: `(key, arguments to append)`, such as
    /// `("max-ttl", ["--max-ttl=2h"])`.
    pub(crate) settings: Vec<(String, Vec<String>)>,
    /// `[upstream]` and `[tools]`.
    pub(crate) gateway: FileConfig,
}

/// The keys of `[upstream]`.
const UPSTREAM_KEYS: &[&str] = &["command", "url", "env", "cwd", "inherit_env", "headers"];

/// Read the TOML `text` of a config file for the command `serve`.
///
/// # Errors
/// Not TOML, an unknown key, or a value of the wrong type (naming the key).
pub(crate) fn parse(text: &str, serve: &clap::Command) -> anyhow::Result<FileSettings> {
    let table: toml::Table = toml::from_str(text).map_err(|e| toml_error(&e, text))?;
    let mut out = FileSettings::default();
    for (key, value) in table {
        match key.as_str() {
            "upstream" => out.gateway.upstream = Some(upstream(&value, serve)?),
            "tools" => out.gateway.tools = tools(&value, serve)?,
            _ => {
                let arg = setting(serve, &key)?;
                let args = arguments(arg, &key, &value)?;
                out.settings.push((key, args));
            }
        }
    }
    Ok(out)
}

/// A TOML syntax error without the excerpt of the file that `toml` shows (the line may
/// hold a secret): its message and where.
fn toml_error(e: &toml::de::Error, text: &str) -> anyhow::Error {
    let message = e.message().trim_end();
    match e.span() {
        Some(span) => {
            let before = &text[..span.start.min(text.len())];
            let line = before.matches('\n').count() + 1;
            let column = before.len() - before.rfind('\n').map_or(0, |i| i + 1) + 1;
            anyhow::anyhow!("line {line}, column {column}: {message}")
        }
        None => anyhow::anyhow!("{message}"),
    }
}

/// The argument of `serve` that the key `key` sets.
///
/// # Errors
/// No such setting (with a hint for `snake_case` keys), or one that a file cannot set.
pub(crate) fn setting<'a>(serve: &'a clap::Command, key: &str) -> anyhow::Result<&'a Arg> {
    if key == "config" || key == "print-config" {
        bail!("`{key}` cannot be set in a config file");
    }
    let find = |k: &str| {
        serve
            .get_arguments()
            .find(|a| a.get_long() == Some(k) && !NOT_SETTINGS.contains(&a.get_id().as_str()))
    };
    if let Some(arg) = find(key) {
        return Ok(arg);
    }
    let kebab = key.replace('_', "-");
    if kebab != key && find(&kebab).is_some() {
        bail!("unknown key `{key}` (keys are named like the flags: `{kebab}`)");
    }
    bail!("unknown key `{key}`");
}

/// Whether `key` names a setting of `serve`.
fn is_setting(serve: &clap::Command, key: &str) -> bool {
    setting(serve, key).is_ok()
}

/// The command-line arguments that say what `value` says for `arg`: `--key=value`, one per
/// element of an array for a repeatable flag, `--key` for `true` of a switch (nothing for
/// `false`).
fn arguments(arg: &Arg, key: &str, value: &Value) -> anyhow::Result<Vec<String>> {
    let flag = |v: String| format!("--{key}={v}");
    match arg.get_action() {
        ArgAction::SetTrue => match value {
            Value::Boolean(true) => Ok(vec![format!("--{key}")]),
            Value::Boolean(false) => Ok(vec![]),
            _ => bail!("`{key}`: expected true or false"),
        },
        ArgAction::Append => match value {
            Value::Array(items) => items
                .iter()
                .map(|v| scalar(key, v).map(flag))
                .collect::<anyhow::Result<_>>()
                .with_context(|| format!("`{key}`: expected an array of strings")),
            v => Ok(vec![flag(scalar(key, v)?)]),
        },
        ArgAction::Set => Ok(vec![flag(scalar(key, value)?)]),
        _ => bail!("`{key}` cannot be set in a config file"),
    }
}

/// A string or an integer, as text.
fn scalar(key: &str, value: &Value) -> anyhow::Result<String> {
    match value {
        Value::String(s) => Ok(s.clone()),
        Value::Integer(i) => Ok(i.to_string()),
        _ => bail!("`{key}`: expected a string or an integer"),
    }
}

/// What the file adds to the command line.
#[derive(Debug, Default)]
pub(crate) struct Layer {
    /// Arguments to append.
    pub(crate) args: Vec<String>,
    /// The ids of the arguments they set.
    pub(crate) from_file: BTreeSet<String>,
    /// Keys left out for a conflicting flag or variable: `(key, --that-flag)`.
    pub(crate) unused: Vec<(String, String)>,
}

/// Whether a value came from the command line or the environment (which win over the
/// file).
fn given(matches: &ArgMatches, id: &str) -> bool {
    matches!(
        matches.value_source(id),
        Some(ValueSource::CommandLine | ValueSource::EnvVariable)
    )
}

/// The settings of the file that apply, given the `first` parse of the command line and
/// the environment: those whose argument was given neither as a flag nor as a variable,
/// and conflicts with no argument given so (`--upstream-url` given, the file's
/// `upstream-cmd` is left out).
pub(crate) fn layer(
    settings: &[(String, Vec<String>)],
    serve: &clap::Command,
    first: &ArgMatches,
) -> Layer {
    let mut layer = Layer::default();
    for (key, args) in settings {
        let Some(arg) = serve.get_arguments().find(|a| a.get_long() == Some(key)) else {
            continue;
        };
        let id = arg.get_id().as_str();
        if given(first, id) {
            continue;
        }
        let conflict = serve.get_arguments().find(|b| {
            given(first, b.get_id().as_str())
                && (serve.get_arg_conflicts_with(arg).contains(b)
                    || serve.get_arg_conflicts_with(b).contains(&arg))
        });
        if let Some(b) = conflict {
            let name = b.get_long().unwrap_or(b.get_id().as_str());
            layer.unused.push((key.clone(), format!("--{name}")));
            continue;
        }
        layer.from_file.insert(id.to_owned());
        layer.args.extend(args.iter().cloned());
    }
    layer
}

/// A key of `[upstream]` or `[tools]` that is a top-level setting: the likely mistake of
/// writing it below a table header.
fn misplaced(table: &str, key: &str, serve: &clap::Command) -> anyhow::Error {
    if is_setting(serve, key) {
        anyhow::anyhow!(
            "[{table}]: unknown key `{key}` (a setting of serve: put it above the file's \
             first [table])"
        )
    } else {
        anyhow::anyhow!("[{table}]: unknown key `{key}`")
    }
}

/// `[upstream]`.
fn upstream(value: &Value, serve: &clap::Command) -> anyhow::Result<FileUpstream> {
    let Value::Table(t) = value else {
        bail!("`upstream`: expected a table");
    };
    if let Some(k) = t.keys().find(|k| !UPSTREAM_KEYS.contains(&k.as_str())) {
        return Err(misplaced("upstream", k, serve));
    }
    let string = |k: &str| match t.get(k) {
        None => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => bail!("[upstream] `{k}`: expected a string"),
    };
    let strings = |k: &str| match t.get(k) {
        None => Ok(BTreeMap::new()),
        Some(Value::Table(m)) => m
            .iter()
            .map(|(name, v)| match v {
                Value::String(s) => Ok((name.clone(), s.clone())),
                _ => bail!("[upstream] `{k}`: `{name}`: expected a string"),
            })
            .collect(),
        Some(_) => bail!("[upstream] `{k}`: expected a table of strings"),
    };
    let command = match t.get("command") {
        None => None,
        Some(Value::String(s)) => Some(CommandLine::Line(s.clone())),
        Some(Value::Array(words)) => Some(CommandLine::Words(
            words
                .iter()
                .map(|w| w.as_str().map(str::to_owned))
                .collect::<Option<_>>()
                .context("[upstream] `command`: expected a string or an array of strings")?,
        )),
        Some(_) => bail!("[upstream] `command`: expected a string or an array of strings"),
    };
    let inherit_env = match t.get("inherit_env") {
        None => false,
        Some(Value::Boolean(b)) => *b,
        Some(_) => bail!("[upstream] `inherit_env`: expected true or false"),
    };
    Ok(FileUpstream {
        command,
        url: string("url")?,
        env: strings("env")?,
        cwd: string("cwd")?.map(Into::into),
        inherit_env,
        headers: strings("headers")?,
    })
}

/// `[tools]`: tool name -> `required`, `optional` or `forbidden`.
fn tools(value: &Value, serve: &clap::Command) -> anyhow::Result<BTreeMap<String, String>> {
    let Value::Table(t) = value else {
        bail!("`tools`: expected a table");
    };
    t.iter()
        .map(|(name, v)| match v {
            Value::String(s) if TaskSupport::parse(s).is_some() => Ok((name.clone(), s.clone())),
            _ if is_setting(serve, name) => Err(misplaced("tools", name, serve)),
            _ => bail!("[tools] `{name}`: expected \"required\", \"optional\" or \"forbidden\""),
        })
        .collect()
}
