//! `serve --print-config`: the effective settings as TOML, each with its source, secrets
//! masked. The output is itself a valid config file (with `****` for the secrets).

use std::fmt::Write as _;

use clap::parser::ValueSource;
use clap::{Arg, ArgAction};
use mcp_tasks_gateway::{CommandLine, FileConfig, FileUpstream};

use super::{Effective, NOT_SETTINGS};

/// What a secret is shown as.
pub(crate) const MASK: &str = "****";

/// The effective configuration of `serve`: every setting, then the file's `[upstream]`
/// and `[tools]`.
pub(crate) fn render(eff: &Effective, gateway: &FileConfig) -> String {
    let mut out = String::from(
        "# The effective configuration of `mcp-tasks serve`: every setting, its value and\n\
         # where it comes from (flag, environment variable, config file, default).\n\
         # Secrets are masked as \"****\".\n",
    );
    match &eff.path {
        Some(p) => {
            let _ = writeln!(out, "# config file: {}", p.display());
        }
        None => out.push_str("# config file: none\n"),
    }
    for arg in eff.cmd.get_arguments() {
        let id = arg.get_id().as_str();
        let Some(key) = arg.get_long() else {
            continue;
        };
        if NOT_SETTINGS.contains(&id) {
            continue;
        }
        match value(eff, arg, key) {
            Some(v) => {
                let _ = writeln!(out, "{key} = {v}  # {}", source_of(eff, arg));
            }
            None => {
                let _ = writeln!(out, "# {key}: not set");
            }
        }
    }
    for (key, flag) in &eff.unused {
        let _ = writeln!(out, "# {key} of the config file: not used, {flag} given");
    }
    if crate::auth_tokens_env().is_some() {
        let _ = writeln!(
            out,
            "# {}: set (bearer tokens, not shown)",
            crate::http::TOKENS_ENV
        );
    }
    if let Some(u) = &gateway.upstream {
        let flags = ["upstream_cmd", "upstream_url"];
        if flags.iter().any(|f| eff.matches.contains_id(f)) {
            out.push_str(
                "# [upstream] of the config file: not used, --upstream-cmd or --upstream-url given\n",
            );
        } else {
            upstream(&mut out, u);
        }
    }
    if !gateway.tools.is_empty() {
        out.push_str(
            "\n[tools]  # config file (--tool-task-support wins for the tools it names)\n",
        );
        for (name, mode) in &gateway.tools {
            let _ = writeln!(out, "{} = {}", toml_key(name), toml_str(mode));
        }
    }
    out
}

/// Where the value of `arg` came from.
pub(super) fn source_of(eff: &Effective, arg: &Arg) -> String {
    let id = arg.get_id().as_str();
    if eff.from_file.contains(id) {
        return "config file".to_owned();
    }
    match eff.matches.value_source(id) {
        Some(ValueSource::CommandLine) => "flag".to_owned(),
        Some(ValueSource::EnvVariable) => match arg.get_env() {
            Some(name) => format!("environment {}", name.to_string_lossy()),
            None => "environment".to_owned(),
        },
        _ => "default".to_owned(),
    }
}

/// The TOML value of `arg`, masked; `None` when it is not set.
fn value(eff: &Effective, arg: &Arg, key: &str) -> Option<String> {
    let id = arg.get_id().as_str();
    if matches!(arg.get_action(), ArgAction::SetTrue) {
        return Some(eff.matches.get_flag(id).to_string());
    }
    let raw: Vec<String> = eff
        .matches
        .get_raw(id)?
        .map(|v| mask(key, &v.to_string_lossy()))
        .collect();
    let integer = is_integer(arg);
    let fmt = |v: &String| {
        if integer && v.parse::<i64>().is_ok() {
            v.clone()
        } else {
            toml_str(v)
        }
    };
    match arg.get_action() {
        ArgAction::Append => Some(format!(
            "[{}]",
            raw.iter().map(fmt).collect::<Vec<_>>().join(", ")
        )),
        _ => raw.first().map(fmt),
    }
}

/// Whether `arg` takes an integer (printed as a TOML integer).
fn is_integer(arg: &Arg) -> bool {
    use std::any::TypeId;
    let t = arg.get_value_parser().type_id();
    [
        TypeId::of::<usize>(),
        TypeId::of::<u32>(),
        TypeId::of::<u64>(),
    ]
    .into_iter()
    .any(|i| t == i)
}

/// `[upstream]` of the file, secrets masked.
fn upstream(out: &mut String, u: &FileUpstream) {
    out.push_str("\n[upstream]  # config file\n");
    match &u.command {
        Some(CommandLine::Line(line)) => {
            let _ = writeln!(out, "command = {}", toml_str(&mask_command(line)));
        }
        Some(CommandLine::Words(words)) => {
            let words: Vec<&str> = words.iter().map(String::as_str).collect();
            let masked: Vec<String> = mask_words(&words).iter().map(|w| toml_str(w)).collect();
            let _ = writeln!(out, "command = [{}]", masked.join(", "));
        }
        None => {}
    }
    if let Some(url) = &u.url {
        let _ = writeln!(out, "url = {}", toml_str(&mask_url(url)));
    }
    if let Some(cwd) = &u.cwd {
        let _ = writeln!(out, "cwd = {}", toml_str(&cwd.to_string_lossy()));
    }
    let _ = writeln!(out, "inherit_env = {}", u.inherit_env);
    for (name, map) in [("env", &u.env), ("headers", &u.headers)] {
        if !map.is_empty() {
            let entries: Vec<String> = map
                .keys()
                .map(|k| format!("{} = {}", toml_key(k), toml_str(MASK)))
                .collect();
            let _ = writeln!(out, "{name} = {{ {} }}", entries.join(", "));
        }
    }
}

/// The value `v` of the setting `key` with its secrets masked: the values of
/// `--upstream-header NAME:VALUE` and `--upstream-env K=V`, passwords of URLs
/// (`postgres://user:****@host/db`) and their secret-like query parameters, secret-like
/// options of `--upstream-cmd`, and the whole value of a secret-like setting.
pub(crate) fn mask(key: &str, v: &str) -> String {
    match key {
        "upstream-header" => match v.split_once(':') {
            Some((name, _)) => format!("{name}: {MASK}"),
            None => MASK.to_owned(),
        },
        "upstream-env" => match v.split_once('=') {
            Some((name, _)) => format!("{name}={MASK}"),
            None => MASK.to_owned(),
        },
        "upstream-cmd" => mask_command(v),
        // A path, not the tokens.
        "auth-tokens" => v.to_owned(),
        _ if secret_like(key) => MASK.to_owned(),
        _ => mask_url(v),
    }
}

/// Whether a name (of a setting, a query parameter, an option or a variable) is one of a
/// secret.
pub(crate) fn secret_like(name: &str) -> bool {
    let n = name.to_ascii_lowercase();
    [
        "password",
        "passwd",
        "pwd",
        "secret",
        "token",
        "credential",
        "api-key",
        "api_key",
        "apikey",
        "private-key",
        "private_key",
        "authorization",
    ]
    .iter()
    .any(|w| n.contains(w))
}

/// A command line with its secret-like options masked (see [`mask_words`]); words are
/// split at spaces, which are kept.
pub(crate) fn mask_command(line: &str) -> String {
    let words: Vec<&str> = line.split(' ').collect();
    mask_words(&words).join(" ")
}

/// Words of a command with secrets masked: URL passwords, the values of `--x=V` and
/// `X=V` whose name says secret ([`secret_option`]), and the word after such an option
/// (`--token V`, `--password V`, `-p V`).
pub(crate) fn mask_words(words: &[&str]) -> Vec<String> {
    let mut out = Vec::with_capacity(words.len());
    let mut after_secret_option = false;
    for w in words {
        let masked = if after_secret_option && !w.is_empty() && !w.starts_with('-') {
            MASK.to_owned()
        } else if w.contains("://") {
            mask_url(w)
        } else if let Some((name, _)) = w.split_once('=')
            && secret_option(name)
        {
            format!("{name}={MASK}")
        } else {
            (*w).to_owned()
        };
        after_secret_option = w.starts_with('-') && !w.contains('=') && secret_option(w);
        out.push(masked);
    }
    out
}

/// Whether an option or variable of a command takes a secret (one rule with the
/// gateway's log lines: [`mcp_tasks_proto::logged::secret_option`]).
fn secret_option(name: &str) -> bool {
    secret_like(name) || mcp_tasks_proto::logged::secret_option(name)
}

/// A URL with the password of its user info and its secret-like query parameters masked;
/// anything else unchanged.
pub(crate) fn mask_url(v: &str) -> String {
    let Some(scheme_end) = v.find("://") else {
        return v.to_owned();
    };
    let (head, rest) = v.split_at(scheme_end + 3);
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(authority_end);
    let mut out = head.to_owned();
    match authority.rsplit_once('@') {
        Some((userinfo, host)) => {
            match userinfo.split_once(':') {
                Some((user, _)) => {
                    let _ = write!(out, "{user}:{MASK}");
                }
                None => out.push_str(userinfo),
            }
            out.push('@');
            out.push_str(host);
        }
        None => out.push_str(authority),
    }
    let (tail, fragment) = match tail.split_once('#') {
        Some((t, f)) => (t, Some(f)),
        None => (tail, None),
    };
    match tail.split_once('?') {
        Some((path, query)) => {
            out.push_str(path);
            out.push('?');
            let params: Vec<String> = query
                .split('&')
                .map(|p| match p.split_once('=') {
                    Some((k, _))
                        if secret_like(k)
                            || ["key", "auth", "sig"]
                                .iter()
                                .any(|s| k.eq_ignore_ascii_case(s)) =>
                    {
                        format!("{k}={MASK}")
                    }
                    _ => p.to_owned(),
                })
                .collect();
            out.push_str(&params.join("&"));
        }
        None => out.push_str(tail),
    }
    if let Some(f) = fragment {
        out.push('#');
        out.push_str(f);
    }
    out
}

/// A TOML basic string.
pub(crate) fn toml_str(s: &str) -> String {
    let mut o = String::with_capacity(s.len() + 2);
    o.push('"');
    for c in s.chars() {
        match c {
            '"' => o.push_str("\\\""),
            '\\' => o.push_str("\\\\"),
            '\n' => o.push_str("\\n"),
            '\r' => o.push_str("\\r"),
            '\t' => o.push_str("\\t"),
            c if c.is_control() => {
                let _ = write!(o, "\\u{:04X}", u32::from(c));
            }
            c => o.push(c),
        }
    }
    o.push('"');
    o
}

/// A TOML key: bare if it can be, else quoted.
pub(crate) fn toml_key(k: &str) -> String {
    if !k.is_empty()
        && k.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
    {
        k.to_owned()
    } else {
        toml_str(k)
    }
}
