//! One configuration for `serve` (issue 19): every setting from its flag, else its
//! `MCP_TASKS_*` variable, else the `--config` file, else its default; `--print-config`
//! shows the result with secrets masked; an unknown key in the file is an error naming it.

use std::path::{Path, PathBuf};
use std::process::Output;

use crate::common;
use common::Stdio;
use serde_json::json;

/// A scratch directory with `serve.toml` holding `text`.
fn config_file(text: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("serve.toml");
    std::fs::write(&path, text).unwrap();
    (dir, path)
}

/// `mcp-tasks ARGS` with these variables, to its end.
fn run(args: &[&str], env: &[(&str, &str)]) -> Output {
    std::process::Command::new(common::bin())
        .args(args)
        .envs(env.iter().copied())
        .env("RUST_LOG", "warn")
        .stdin(std::process::Stdio::null())
        .output()
        .expect("run mcp-tasks")
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn path(p: &Path) -> &str {
    p.to_str().unwrap()
}

#[test]
fn print_config_shows_flag_over_variable_over_file_over_default_and_opens_no_store() {
    let (dir, file) = config_file(
        "poll-interval = 250\nmax-ttl = \"2h\"\ndefault-ttl = \"30m\"\nmax-sessions = 7\n",
    );
    let db = dir.path().join("never.db");
    let store = format!("sqlite:{}", path(&db));
    let out = run(
        &[
            "serve",
            "--print-config",
            "--config",
            path(&file),
            "--store",
            &store,
            "--poll-interval",
            "500",
        ],
        &[
            ("MCP_TASKS_POLL_INTERVAL", "400"),
            ("MCP_TASKS_MAX_TTL", "3h"),
        ],
    );
    let text = stdout(&out);
    assert!(out.status.success(), "{}\n{text}", stderr(&out));
    for line in [
        "poll-interval = \"500\"  # flag",
        "max-ttl = \"3h\"  # environment MCP_TASKS_MAX_TTL",
        "default-ttl = \"30m\"  # config file",
        "max-sessions = 7  # config file",
        "page-size = 100  # default",
        "stdio = false  # default",
        "# upstream-cmd: not set",
    ] {
        assert!(text.lines().any(|l| l == line), "no `{line}` in:\n{text}");
    }
    assert!(!db.exists(), "--print-config opened the store");
    // The output is a config file itself: read back, every value now comes from it.
    let again = dir.path().join("again.toml");
    std::fs::write(&again, &text).unwrap();
    let out = run(&["serve", "--print-config", "--config", path(&again)], &[]);
    let text = stdout(&out);
    assert!(out.status.success(), "{}\n{text}", stderr(&out));
    for line in [
        "poll-interval = \"500\"  # config file",
        "max-ttl = \"3h\"  # config file",
        "page-size = 100  # config file",
    ] {
        assert!(text.lines().any(|l| l == line), "no `{line}` in:\n{text}");
    }
}

/// The same precedence, seen on the wire: the `pollInterval` and `ttl` of a created task.
#[test]
fn the_file_the_variable_and_the_flag_set_what_tasks_get() {
    let (_dir, file) = config_file("poll-interval = 250\ndefault-ttl = \"2m\"\n");
    let task = |args: &[&str], env: &[(&str, &str)]| {
        let mut all = vec![
            "serve",
            "--stdio",
            "--store",
            "memory",
            "--config",
            path(&file),
        ];
        all.extend_from_slice(args);
        let mut s = Stdio::spawn_args(&all, env);
        s.initialize();
        s.create_task("sleep", json!({"ms": 1}))
    };
    let t = task(&[], &[]);
    assert_eq!(
        (t["pollInterval"].clone(), t["ttl"].clone()),
        (json!(250), json!(120_000))
    );
    let t = task(&[], &[("MCP_TASKS_POLL_INTERVAL", "400")]);
    assert_eq!(
        (t["pollInterval"].clone(), t["ttl"].clone()),
        (json!(400), json!(120_000))
    );
    let t = task(
        &["--poll-interval", "500"],
        &[("MCP_TASKS_POLL_INTERVAL", "400")],
    );
    assert_eq!(t["pollInterval"], 500);
}

/// Without any flag: the transport, the store and the file from variables.
#[test]
fn variables_alone_configure_serve() {
    let (_dir, file) = config_file("max-ttl = \"10m\"\n");
    let mut s = Stdio::spawn_args(
        &["serve"],
        &[
            ("MCP_TASKS_STDIO", "1"),
            ("MCP_TASKS_STORE", "memory"),
            ("MCP_TASKS_CONFIG", path(&file)),
        ],
    );
    s.initialize();
    let r = s.ok(
        "tools/call",
        json!({"name": "sleep", "arguments": {"ms": 1}, "task": {"ttl": 99_999_999}}),
    );
    assert_eq!(r["task"]["ttl"], 600_000, "{r}");
}

#[test]
fn an_unknown_key_is_an_error_naming_it_and_the_file() {
    let (_dir, file) = config_file("max-ttl = \"1h\"\nmax-tll = \"2h\"\n");
    let out = run(
        &[
            "serve",
            "--stdio",
            "--store",
            "memory",
            "--config",
            path(&file),
        ],
        &[],
    );
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(err.contains("unknown key `max-tll`"), "{err}");
    assert!(err.contains(path(&file)), "{err}");
    // A value the flag's parser refuses: clap's message, and the file named.
    let (_dir, file) = config_file("poll-interval = \"soon\"\n");
    let out = run(&["serve", "--print-config", "--config", path(&file)], &[]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(
        err.contains("--poll-interval") && err.contains(path(&file)),
        "{err}"
    );
}

#[test]
fn print_config_masks_secrets() {
    let (_dir, file) = config_file(
        "upstream-header = [\"Authorization: Bearer sekrit-2\"]\n\n[tools]\necho = \"optional\"\n",
    );
    let out = run(
        &[
            "serve",
            "--print-config",
            "--config",
            path(&file),
            "--upstream-url",
            "http://127.0.0.1:9/mcp?api_key=sekrit-3",
        ],
        &[
            ("MCP_TASKS_STORE", "postgres://app:sekrit-1@127.0.0.1:1/db"),
            (crate::http_common::TOKENS_ENV, "sekrit-4 alice"),
        ],
    );
    let (text, err) = (stdout(&out), stderr(&out));
    assert!(out.status.success(), "{err}\n{text}");
    for secret in ["sekrit-1", "sekrit-2", "sekrit-3", "sekrit-4"] {
        assert!(
            !text.contains(secret) && !err.contains(secret),
            "{secret} shown:\n{text}{err}"
        );
    }
    for line in [
        "store = \"postgres://app:****@127.0.0.1:1/db\"  # environment MCP_TASKS_STORE",
        "upstream-header = [\"Authorization: ****\"]  # config file",
        "upstream-url = \"http://127.0.0.1:9/mcp?api_key=****\"  # flag",
        "# MCP_TASKS_AUTH_TOKENS: set (bearer tokens, not shown)",
        "echo = \"optional\"",
    ] {
        assert!(text.lines().any(|l| l == line), "no `{line}` in:\n{text}");
    }
    // A stdio upstream's environment and secret-like options, from flags and the file.
    let (_dir, file) = config_file(
        "[upstream]\ncommand = \"node s.js --token sekrit-5\"\nenv = { API_KEY = \"sekrit-6\" }\n",
    );
    let out = run(
        &[
            "serve",
            "--print-config",
            "--config",
            path(&file),
            "--upstream-env",
            "OTHER_KEY=sekrit-7",
        ],
        &[],
    );
    // `--upstream-env` goes with the file's upstream command too; its value is masked.
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        !stdout(&out).contains("sekrit-7") && !stderr(&out).contains("sekrit-7"),
        "{}",
        stdout(&out)
    );
    assert!(stdout(&out).contains("OTHER_KEY=****"), "{}", stdout(&out));
    let out = run(&["serve", "--print-config", "--config", path(&file)], &[]);
    let text = stdout(&out);
    assert!(out.status.success(), "{}\n{text}", stderr(&out));
    for secret in ["sekrit-5", "sekrit-6"] {
        assert!(!text.contains(secret), "{secret} shown:\n{text}");
    }
    assert!(text.contains("env = { API_KEY = \"****\" }"), "{text}");
    let out = run(
        &[
            "serve",
            "--print-config",
            "--upstream-cmd",
            "node s.js",
            "--upstream-env",
            "OTHER_KEY=sekrit-7",
        ],
        &[],
    );
    let text = stdout(&out);
    assert!(out.status.success(), "{}\n{text}", stderr(&out));
    assert!(!text.contains("sekrit-7"), "{text}");
    assert!(
        text.contains("upstream-env = [\"OTHER_KEY=****\"]  # flag"),
        "{text}"
    );
}
