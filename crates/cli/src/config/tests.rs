//! The merging of flags, variables, the file and defaults; the file's errors; masking.

use std::ffi::OsString;

use clap::Arg;

use super::print::{mask, mask_command, mask_url, toml_str};
use super::*;

/// `mcp-tasks serve ARGS` with a config file holding `toml` (none if `None`).
fn parse_with(args: &[&str], toml: Option<&str>) -> Result<(Parsed, tempfile::TempDir), Error> {
    let dir = tempfile::tempdir().unwrap();
    let mut argv: Vec<OsString> = ["mcp-tasks", "serve"].map(OsString::from).to_vec();
    argv.extend(args.iter().map(OsString::from));
    if let Some(text) = toml {
        let path = dir.path().join("serve.toml");
        std::fs::write(&path, text).unwrap();
        argv.push("--config".into());
        argv.push(path.into());
    }
    parse(argv).map(|p| (p, dir))
}

fn ok(args: &[&str], toml: Option<&str>) -> (Effective, crate::Cli, tempfile::TempDir) {
    match parse_with(args, toml) {
        Ok((p, dir)) => (p.serve.expect("serve"), p.cli, dir),
        Err(e) => panic!("{e:?}"),
    }
}

/// The `serve` arguments of a parsed command line.
fn serve_args(cli: &crate::Cli) -> &crate::serve::ServeArgs {
    let crate::Command::Serve(args) = &cli.command else {
        panic!("not serve")
    };
    args
}

/// `--print-config` of `mcp-tasks serve ARGS` with the config file `toml`: the text, the
/// effective settings, and the file's directory.
fn print_config(args: &[&str], toml: &str) -> (String, Effective, tempfile::TempDir) {
    let (eff, cli, dir) = ok(args, Some(toml));
    let printed = render(&eff, &serve_args(&cli).gateway.file);
    (printed, eff, dir)
}

/// `printed` shows each of `parts`.
fn assert_shows(printed: &str, parts: &[&str]) {
    for part in parts {
        assert!(printed.contains(part), "{part} not shown:\n{printed}");
    }
}

/// `printed` shows none of `secrets`.
fn assert_masked(printed: &str, secrets: &[&str]) {
    for secret in secrets {
        assert!(!printed.contains(secret), "{secret} shown:\n{printed}");
    }
}

fn file_error(toml: &str) -> String {
    match parse_with(&[], Some(toml)) {
        Err(Error::File(e)) => format!("{e:#}"),
        Err(e) => panic!("not a file error: {e:?}"),
        Ok(_) => panic!("accepted: {toml}"),
    }
}

/// Each `(id, raw value, where it came from)` (`--print-config`'s words) holds.
fn assert_settings(eff: &Effective, expected: &[(&str, &str, &str)]) {
    for &(id, value, source) in expected {
        let arg = eff.cmd.get_arguments().find(|a| a.get_id() == id).unwrap();
        let raw = eff
            .matches
            .get_raw(id)
            .map(|mut v| v.next().unwrap().to_string_lossy().into_owned())
            .unwrap_or_default();
        assert_eq!(
            (raw.as_str(), print::source_of(eff, arg).as_str()),
            (value, source),
            "{id}"
        );
    }
}

#[test]
fn every_setting_of_serve_has_its_variable() {
    let mut cmd = command();
    cmd.build();
    let serve = cmd.find_subcommand("serve").unwrap();
    let mut n = 0;
    for arg in serve.get_arguments() {
        let id = arg.get_id().as_str();
        if ["help", "print_config"].contains(&id) {
            assert!(arg.get_env().is_none(), "{id}");
            continue;
        }
        let long = arg.get_long().unwrap();
        let env = arg
            .get_env()
            .unwrap_or_else(|| panic!("--{long}: no variable"));
        let want = match long {
            "auth-tokens" => "MCP_TASKS_AUTH_TOKENS_FILE".to_owned(),
            _ => format!("MCP_TASKS_{}", long.to_uppercase().replace('-', "_")),
        };
        assert_eq!(env.to_str(), Some(want.as_str()), "--{long}");
        n += 1;
    }
    // The global --log-format is one of them.
    assert!(
        serve
            .get_arguments()
            .any(|a| a.get_long() == Some("log-format"))
    );
    assert!(n > 40, "{n} settings");
}

#[test]
fn the_file_beats_the_default_and_the_flag_beats_the_file() {
    let file = "max-ttl = \"2h\"\npoll-interval = 250\nmax-sessions = 7\n";
    let (eff, _, _dir) = ok(&["--poll-interval", "300"], Some(file));
    assert_settings(
        &eff,
        &[
            ("max_ttl", "2h", "config file"),
            ("poll_interval", "300", "flag"),
            ("max_sessions", "7", "config file"),
            ("default_ttl", "1h", "default"),
        ],
    );
}

#[test]
fn a_variable_beats_the_file() {
    // A command of our own whose argument reads a variable that is always set.
    let mut serve = clap::Command::new("serve")
        .arg(Arg::new("path").long("path").env("PATH"))
        .arg(Arg::new("other").long("other"));
    serve.build();
    let first = serve.clone().try_get_matches_from(["serve"]).unwrap();
    let settings = vec![
        ("path".to_owned(), vec!["--path=/from/file".to_owned()]),
        ("other".to_owned(), vec!["--other=x".to_owned()]),
    ];
    let layer = file::layer(&settings, &serve, &first);
    assert_eq!(layer.args, ["--other=x"]);
    assert_eq!(layer.from_file.into_iter().collect::<Vec<_>>(), ["other"]);
}

#[test]
fn values_of_every_type_become_flags() {
    let file = "stdio = true\nno-tasks = false\nallowed-origin = [\"https://a.example\", \"https://b.example\"]\nmetrics-principal = \"ops\"\nmax-message-bytes = 4096\nlog-format = \"json\"\n";
    let (eff, cli, _dir) = ok(&[], Some(file));
    assert_eq!(cli.log_format, crate::LogFormat::Json);
    assert!(eff.matches.get_flag("stdio"));
    assert!(!eff.matches.get_flag("no_tasks"));
    let origins: Vec<_> = eff
        .matches
        .get_many::<String>("allowed_origins")
        .unwrap()
        .collect();
    assert_eq!(origins, ["https://a.example", "https://b.example"]);
    assert_eq!(
        eff.matches.get_one::<usize>("max_message_bytes"),
        Some(&4096)
    );
    let printed = render(&eff, &Default::default());
    assert_shows(
        &printed,
        &[
            "stdio = true  # config file",
            "allowed-origin = [\"https://a.example\", \"https://b.example\"]  # config file",
            "max-message-bytes = 4096  # config file",
            "log-format = \"json\"  # config file",
            "# store: not set",
        ],
    );
}

#[test]
fn a_flag_leaves_out_the_files_conflicting_setting() {
    let file = "upstream-cmd = \"node server.js\"\n";
    let (eff, _, _dir) = ok(&["--upstream-url", "http://127.0.0.1:9/mcp"], Some(file));
    assert_eq!(
        eff.unused,
        [("upstream-cmd".to_owned(), "--upstream-url".to_owned())]
    );
    assert!(!eff.matches.contains_id("upstream_cmd"));
    // A conflict within the file itself is clap's error, with the file named.
    let both = "upstream-cmd = \"node s.js\"\nupstream-url = \"http://127.0.0.1:9/mcp\"\n";
    match parse_with(&[], Some(both)) {
        Err(Error::Clap(e, Some(_))) => {
            assert_eq!(e.kind(), clap::error::ErrorKind::ArgumentConflict)
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn an_invalid_value_in_the_file_is_refused_by_the_flags_parser() {
    match parse_with(&[], Some("poll-interval = \"soon\"\n")) {
        Err(Error::Clap(e, Some(_))) => assert!(e.to_string().contains("--poll-interval"), "{e}"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn unknown_and_misplaced_keys_are_named() {
    for (toml, wanted) in [
        (
            "max-ttl = \"1h\"\nbogus-key = 1\n",
            // The file is named.
            &["unknown key `bogus-key`", "serve.toml"][..],
        ),
        ("max_ttl = \"1h\"\n", &["`max_ttl`", "`max-ttl`"]),
        ("config = \"other.toml\"\n", &["`config` cannot be set"]),
        ("print-config = true\n", &["`print-config` cannot be set"]),
        ("help = true\n", &["unknown key `help`"]),
        (
            "[upstream]\ncommand = \"x\"\nlisten = \"0.0.0.0:1\"\n",
            &["[upstream]", "`listen`", "above"],
        ),
        (
            "[upstream]\nbogus = 1\n",
            &["[upstream]: unknown key `bogus`"],
        ),
        ("[tools]\nmax-ttl = 5\n", &["[tools]", "above"]),
        ("[tools]\necho = \"sometimes\"\n", &["[tools] `echo`"]),
        ("[serve]\nlisten = \"x\"\n", &["unknown key `serve`"]),
    ] {
        let e = file_error(toml);
        for w in wanted {
            assert!(e.contains(w), "{toml}: no {w} in {e}");
        }
    }
}

#[test]
fn values_of_the_wrong_type_are_refused_naming_the_key_not_the_value() {
    for (toml, key) in [
        ("stdio = \"hunter2\"\n", "`stdio`"),
        ("store = 1.5\n", "`store`"),
        (
            "allowed-origin = [{ a = \"hunter2\" }]\n",
            "`allowed-origin`",
        ),
        (
            "[upstream]\ncommand = \"x\"\nenv = \"KEY=hunter2\"\n",
            "`env`",
        ),
        (
            "[upstream]\nurl = \"http://h/\"\nheaders = { A = 1 }\n",
            "`headers`",
        ),
        ("[upstream]\ncommand = [\"x\", 1]\n", "`command`"),
        ("[upstream]\ninherit_env = \"yes\"\n", "`inherit_env`"),
        ("upstream = \"hunter2\"\n", "`upstream`"),
        ("tools = \"hunter2\"\n", "`tools`"),
    ] {
        let e = file_error(toml);
        assert!(e.contains(key), "{toml}: {e}");
        assert!(!e.contains("hunter2"), "{toml}: the value is shown: {e}");
    }
    // A syntax error says where, without the file's line.
    let e = file_error("store = \"postgres://u:hunter2@h/db\"\nlisten = = 1\n");
    assert!(e.contains("line 2"), "{e}");
    assert!(!e.contains("hunter2"), "{e}");
}

#[test]
fn the_gateway_tables_go_to_the_gateway_unchanged() {
    let tables = "[upstream]\ncommand = [\"node\", \"server.js\"]\nenv = { K = \"V\" }\ninherit_env = true\n\n[tools]\necho = \"optional\"\n";
    let (eff, cli, _dir) = ok(&[], Some(&format!("max-upstreams = 3\n\n{tables}")));
    let args = serve_args(&cli);
    let gateway = &args.gateway.file;
    // What the gateway reads from the tables alone.
    let alone = mcp_tasks_gateway::FileConfig::parse(tables).unwrap();
    let upstream = gateway.upstream().unwrap();
    assert_eq!(upstream, alone.upstream().unwrap());
    assert!(
        matches!(
            &upstream,
            Some(mcp_tasks_gateway::UpstreamSpec::Stdio(spec))
                if spec.program == "node" && spec.env.len() == 1 && spec.inherit_env
        ),
        "{upstream:?}"
    );
    assert_eq!(gateway.tools, alone.tools);
    assert_eq!(
        gateway.tools.get("echo").map(String::as_str),
        Some("optional")
    );
    assert!(args.gateway.enabled());
    assert_settings(&eff, &[("max_upstreams", "3", "config file")]);
    // A file of settings only does not make a gateway.
    let (_, cli, _dir) = ok(&[], Some("max-ttl = \"2h\"\n"));
    assert!(!serve_args(&cli).gateway.enabled());
}

#[test]
fn the_upstream_protocol_is_a_setting_of_the_file_and_checked() {
    let file = "upstream-protocol = \"modern\"\n\n[upstream]\nurl = \"http://127.0.0.1:9/mcp\"\n";
    let (eff, cli, _dir) = ok(&[], Some(file));
    assert_settings(&eff, &[("upstream_protocol", "modern", "config file")]);
    let protocol = |cli: &crate::Cli| serve_args(cli).gateway.config().unwrap().upstream_protocol;
    let (modern, legacy) = (
        mcp_tasks_proto::RevisionChoice::Fixed(mcp_tasks_proto::Revision::V2026_07_28),
        mcp_tasks_proto::RevisionChoice::Fixed(mcp_tasks_proto::Revision::V2025_11_25),
    );
    assert_eq!(protocol(&cli), modern);
    // Flags win; without either, legacy.
    let (_, cli, _dir) = ok(&["--upstream-protocol", "legacy"], Some(file));
    assert_eq!(protocol(&cli), legacy);
    // The dated names are accepted as the words are.
    let (_, cli, _dir) = ok(&["--upstream-protocol", "2025-11-25"], Some(file));
    assert_eq!(protocol(&cli), legacy);
    let (_, cli, _dir) = ok(&["--upstream-url", "http://127.0.0.1:9/mcp"], None);
    assert_eq!(protocol(&cli), legacy);
    assert!(parse_with(&[], Some("upstream-protocol = \"sometimes\"\n")).is_err());
}

#[test]
fn print_config_masks_secrets_and_is_a_valid_config_file() {
    let file = "store = \"postgres://app:hunter2@db.example:5432/tasks?password=hunter3&pool=4\"\nupstream-header = [\"Authorization: Bearer hunter4\", \"X-Api-Key:hunter5\"]\nupstream-url = \"https://bob:hunter6@up.example/mcp?api_key=hunter7&x=1\"\n\n[tools]\necho = \"optional\"\n";
    let (printed, eff, dir) = print_config(&[], file);
    assert_masked(
        &printed,
        &[
            "hunter2", "hunter3", "hunter4", "hunter5", "hunter6", "hunter7",
        ],
    );
    assert_shows(
        &printed,
        &[
            "store = \"postgres://app:****@db.example:5432/tasks?password=****&pool=4\"  # config file",
            "\"Authorization: ****\"",
            "x=1",
        ],
    );
    // Every setting is there, and the output reads back as a config file.
    let again = file::parse(&printed, &eff.cmd).unwrap_or_else(|e| panic!("{e:#}\n{printed}"));
    let top = printed.split("\n[").next().unwrap();
    let set = top
        .lines()
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .count();
    assert!(set > 30, "{printed}");
    assert_eq!(again.settings.len(), set, "{printed}");
    assert_eq!(again.gateway.tools.len(), 1);
    drop(dir);
}

#[test]
fn the_upstream_table_is_printed_masked_and_reads_back() {
    let file = "[upstream]\ncommand = \"node s.js --api-key=hunter2 --token hunter3 --verbose\"\nenv = { API_KEY = \"hunter4\", \"odd key\" = \"hunter5\" }\ncwd = \"/srv\"\n";
    let (printed, eff, _dir) = print_config(&[], file);
    assert_masked(&printed, &["hunter2", "hunter3", "hunter4", "hunter5"]);
    assert_shows(
        &printed,
        &["command = \"node s.js --api-key=**** --token **** --verbose\""],
    );
    let again = file::parse(&printed, &eff.cmd).unwrap_or_else(|e| panic!("{e:#}\n{printed}"));
    let u = again.gateway.upstream.unwrap();
    assert_eq!(u.env.len(), 2);
    assert_eq!(u.cwd, Some("/srv".into()));
    // Flags naming the upstream make the table unused, and it says so.
    let (printed, _, _dir) = print_config(&["--upstream-url", "http://127.0.0.1:9/mcp"], file);
    assert_shows(&printed, &["# [upstream] of the config file: not used"]);
    assert!(!printed.contains("\n[upstream]"), "{printed}");
}

#[test]
fn masking() {
    assert_eq!(mask("upstream-env", "TOKEN=abc=def"), "TOKEN=****");
    assert_eq!(mask("upstream-env", "NOEQUALS"), "****");
    assert_eq!(
        mask("upstream-header", "Authorization: Bearer x"),
        "Authorization: ****"
    );
    assert_eq!(mask("auth-tokens", "/etc/tokens"), "/etc/tokens");
    assert_eq!(
        mask("oauth-issuer", "https://as.example"),
        "https://as.example"
    );
    assert_eq!(mask("some-secret", "x"), "****");
    assert_eq!(mask("listen", "127.0.0.1:8080"), "127.0.0.1:8080");
    assert_eq!(mask_url("postgres://u@h/db"), "postgres://u@h/db");
    assert_eq!(mask_url("postgres://u:p@ss@h/db"), "postgres://u:****@h/db");
    assert_eq!(
        mask_url("https://h/p?key=1&a=2#f"),
        "https://h/p?key=****&a=2#f"
    );
    assert_eq!(
        mask_url("sqlite:/x.db?synchronous=normal"),
        "sqlite:/x.db?synchronous=normal"
    );
    assert_eq!(
        mask_command("run --db postgres://a:b@h/d  --password x -v"),
        "run --db postgres://a:****@h/d  --password **** -v"
    );
    assert_eq!(
        mask_command("env SECRET_TOKEN=1 go"),
        "env SECRET_TOKEN=**** go"
    );
}

#[test]
fn print_config_masks_the_secret_options_of_the_upstream_command() {
    for (cmd, shown) in [
        ("psql -p hunter2 -h db", "psql -p **** -h db"),
        ("srv --pass hunter2 -v", "srv --pass **** -v"),
        ("srv --passphrase=hunter2", "srv --passphrase=****"),
        ("srv --signing-key hunter2", "srv --signing-key ****"),
        ("srv --db-password hunter2", "srv --db-password ****"),
        (
            "srv --client-secret=hunter2 x",
            "srv --client-secret=**** x",
        ),
        ("srv --port 8080", "srv --port 8080"),
    ] {
        assert_eq!(mask_command(cmd), shown, "{cmd}");
        let (printed, _, _dir) = print_config(&["--upstream-cmd", cmd], "");
        assert_masked(&printed, &["hunter2"]);
    }
}

#[test]
fn upstream_env_adds_to_the_command_of_the_files_upstream_table() {
    let file =
        "[upstream]\ncommand = [\"node\", \"server.js\"]\nenv = { K = \"file\", A = \"1\" }\n";
    let (_, cli, _dir) = ok(
        &["--upstream-env", "K=flag", "--upstream-env", "B=2"],
        Some(file),
    );
    let config = serve_args(&cli).gateway.config().unwrap();
    let mcp_tasks_gateway::UpstreamSpec::Stdio(spec) = &config.upstream else {
        panic!("{:?}", config.upstream)
    };
    let env = &spec.env;
    // The flags' come after the file's, so the flag's K wins when the command starts.
    let pair = |k: &str, v: &str| (k.to_owned(), v.to_owned());
    assert_eq!(env.len(), 4, "{env:?}");
    assert!(env[..2].contains(&pair("K", "file")) && env[..2].contains(&pair("A", "1")));
    assert_eq!(env[2..], [pair("K", "flag"), pair("B", "2")]);
    // Not for an upstream URL.
    let url = "[upstream]\nurl = \"http://127.0.0.1:9/mcp\"\n";
    let (_, cli, _dir) = ok(&["--upstream-env", "K=V"], Some(url));
    let e = serve_args(&cli).gateway.config().unwrap_err();
    assert!(
        format!("{e:#}").contains("is a URL, not a command"),
        "{e:#}"
    );
    assert!(
        parse_with(
            &["--upstream-url", "http://h/", "--upstream-env", "K=V"],
            None
        )
        .is_err()
    );
}

#[test]
fn toml_strings_read_back() {
    for s in [
        "plain",
        "q\"uote",
        "back\\slash",
        "tab\tnl\ncr\r",
        "bell\u{7}",
        "ünï",
    ] {
        let t: toml::Table = toml::from_str(&format!("k = {}", toml_str(s))).unwrap();
        assert_eq!(t["k"].as_str(), Some(s));
    }
}
