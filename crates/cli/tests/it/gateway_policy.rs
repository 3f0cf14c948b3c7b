//! Gateway: the tool policy, overridden by flags and by a TOML config file.

use crate::common;
use crate::gateway_common;

use gateway_common::Fake;
use serde_json::{Value, json};

fn supports(s: &mut common::Stdio) -> Vec<(String, Value)> {
    s.ok("tools/list", json!({}))["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            (
                t["name"].as_str().unwrap().to_owned(),
                t["execution"]["taskSupport"].clone(),
            )
        })
        .collect()
}

#[test]
fn flags_override_per_tool() {
    let fake = Fake::new("policy-flags", false);
    let mut s = fake.gateway(&[
        "--tool-task-support",
        "echo=forbidden",
        "--tool-task-support",
        "slow=required",
    ]);
    for (name, support) in supports(&mut s) {
        let expected = match name.as_str() {
            "echo" => "forbidden",
            "slow" => "required",
            _ => "optional",
        };
        assert_eq!(support, expected, "{name}");
    }
    // And the receiver enforces them.
    assert_eq!(
        s.err(
            "tools/call",
            json!({"name": "echo", "arguments": {"text": "x"}, "task": {}})
        )["code"],
        -32601
    );
    assert_eq!(
        s.err(
            "tools/call",
            json!({"name": "slow", "arguments": {"ms": 1}})
        )["code"],
        -32601
    );
}

#[test]
fn a_toml_config_file_names_the_upstream_and_the_overrides_and_flags_win() {
    let fake = Fake::new("policy-toml", true);
    let config = fake.dir.join("gateway.toml");
    std::fs::write(
        &config,
        format!(
            "[upstream]\ncommand = [\"node\", {:?}]\nenv = {{ FAKE_LOG = {:?}, FAKE_TASKS = \"1\" }}\n\n[tools]\necho = \"required\"\nboom = \"optional\"\n",
            gateway_common::fixture("fake_upstream.mjs").display().to_string(),
            fake.log_path().display().to_string(),
        ),
    )
    .unwrap();
    let mut s = common::Stdio::spawn(&[
        "--config",
        config.to_str().unwrap(),
        "--tool-task-support",
        "boom=forbidden",
    ]);
    s.initialize();
    let got: std::collections::HashMap<_, _> = supports(&mut s).into_iter().collect();
    assert_eq!(got["echo"], "required");
    assert_eq!(got["boom"], "forbidden");
    assert_eq!(got["job"], "required");
    assert_eq!(got["slow"], "forbidden");
    fake.wait_received("initialize", |m| m["method"] == "initialize");
}

#[test]
fn bad_gateway_flags_are_refused() {
    for args in [
        vec!["--upstream-cmd", ""],
        vec!["--upstream-cmd", "node 'unbalanced"],
        vec!["--upstream-cmd", "x", "--tool-task-support", "x=sometimes"],
        vec!["--upstream-cmd", "x", "--upstream-env", "NOEQUALS"],
        vec!["--upstream-cmd", "x", "--max-upstreams", "0"],
        vec!["--upstream-cmd", "x", "--upstream-timeout", "soon"],
        vec!["--upstream-cmd", "x", "--upstream-timeout", "0"],
        vec!["--upstream-url", "ftp://127.0.0.1/mcp"],
        vec![
            "--upstream-url",
            "http://127.0.0.1:9/mcp",
            "--upstream-header",
            "NOCOLON",
        ],
        // The transport owns the session header.
        vec![
            "--upstream-url",
            "http://127.0.0.1:9/mcp",
            "--upstream-header",
            "Mcp-Session-Id: x",
        ],
    ] {
        let out = std::process::Command::new(common::bin())
            .args(["serve", "--stdio", "--store", "memory"])
            .args(&args)
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap();
        assert!(!out.status.success(), "{args:?} was accepted");
        assert!(!out.stderr.is_empty());
    }
}
