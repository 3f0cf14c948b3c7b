//! The official TypeScript SDK client (1.32.2, installed under `interop/` by
//! `npm ci --prefix interop`) over Streamable HTTP: lifecycle, `ask` answered through
//! `tasks/result`, `summarize`, progress after creation, cancel, the exact error of a
//! failed task, and a long `tasks/result` wait that the server closes with `retry`
//! (resumed by the SDK with GET + `Last-Event-ID`).

use crate::http_common;

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use http_common::{Server, TOKENS_ENV};

const SCRIPT: &str = r#"
import assert from 'node:assert/strict';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import {
  CallToolResultSchema, CreateTaskResultSchema, CreateMessageRequestSchema,
  ElicitRequestSchema, ProgressNotificationSchema,
} from '@modelcontextprotocol/sdk/types.js';

const [url, token] = process.argv.slice(1);
const requestInit = token ? { headers: { Authorization: `Bearer ${token}` } } : undefined;
const transport = new StreamableHTTPClientTransport(new URL(url), { requestInit });
const client = new Client({ name: 'ts-sdk-http', version: '0' },
  { capabilities: { elicitation: { form: {} }, sampling: {} } });
const errors = [];
client.onerror = e => errors.push(String(e?.message ?? e));
const progress = [];
client.setNotificationHandler(ProgressNotificationSchema, n => { progress.push(n.params); });
client.setRequestHandler(ElicitRequestSchema, async () => ({ action: 'accept', content: { answer: 'from-ts' } }));
client.setRequestHandler(CreateMessageRequestSchema, async () =>
  ({ role: 'assistant', model: 'fake', content: { type: 'text', text: 'short summary' } }));

await client.connect(transport);
assert.ok(transport.sessionId, 'a session id');
const caps = client.getServerCapabilities();
assert.ok(caps.tasks?.requests?.tools?.call, JSON.stringify(caps));
assert.equal(Boolean(caps.tasks?.list), Boolean(token), 'tasks.list only with auth');
console.log('ok lifecycle');

const tools = (await client.listTools()).tools.map(t => t.name);
assert.ok(tools.includes('ask') && tools.includes('sleep'), tools.join(','));

async function last(stream) {
  let out;
  for await (const m of stream) out = m;
  return out;
}

const ask = await last(client.experimental.tasks.callToolStream(
  { name: 'ask', arguments: { question: 'Ready?' } }, CallToolResultSchema, { task: { ttl: 60000 } }));
assert.equal(ask.type, 'result', JSON.stringify(ask));
assert.equal(ask.result.content[0].text, 'from-ts');
console.log('ok ask');

const sum = await last(client.experimental.tasks.callToolStream(
  { name: 'summarize', arguments: { text: 'a long text' } }, CallToolResultSchema, { task: {} }));
assert.equal(sum.result.content[0].text, 'short summary');
console.log('ok summarize');

// Progress after the CreateTaskResult, on the GET stream.
const created = await client.request({ method: 'tools/call', params: {
  name: 'progress', arguments: { steps: 4, ms: 40 }, task: {}, _meta: { progressToken: 'ts-progress' } } },
  CreateTaskResultSchema);
const done = await client.experimental.tasks.getTaskResult(created.task.taskId, CallToolResultSchema);
assert.equal(done.content[0].text, 'done 4');
for (let i = 0; i < 50 && progress.filter(p => p.progressToken === 'ts-progress').length < 4; i++) {
  await new Promise(r => setTimeout(r, 20));
}
assert.deepEqual(progress.filter(p => p.progressToken === 'ts-progress').map(p => p.progress), [1, 2, 3, 4]);
console.log('ok progress');

// Cancel.
const slow = await client.request({ method: 'tools/call', params: {
  name: 'sleep', arguments: { ms: 600000 }, task: {} } }, CreateTaskResultSchema);
const cancelled = await client.experimental.tasks.cancelTask(slow.task.taskId);
assert.equal(cancelled.status, 'cancelled');
console.log('ok cancel');

// The exact JSON-RPC error of a failed task.
const failing = await client.request({ method: 'tools/call', params: {
  name: 'error', arguments: { message: 'boom', code: -32050 }, task: {} } }, CreateTaskResultSchema);
await assert.rejects(
  client.request({ method: 'tasks/result', params: { taskId: failing.task.taskId } }, CallToolResultSchema),
  e => e.code === -32050 && /boom/.test(e.message));
console.log('ok error');

// A wait longer than the server holds a connection: closed with retry, resumed by GET.
const sleeper = await client.request({ method: 'tools/call', params: {
  name: 'sleep', arguments: { ms: 2500 }, task: {} } }, CreateTaskResultSchema);
const slept = await client.experimental.tasks.getTaskResult(sleeper.task.taskId, CallToolResultSchema);
assert.equal(slept.content[0].text, 'slept 2500');
console.log('ok long wait');

await transport.terminateSession();
await client.close();
const real = errors.filter(e => !/abort/i.test(e));
assert.deepEqual(real, [], 'transport errors');
console.log('ALL OK');
"#;

fn interop_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../interop")
}

fn run(extra_env: &[(&str, &str)], token: Option<&str>) {
    let sdk = interop_dir().join("node_modules/@modelcontextprotocol/sdk");
    if !sdk.exists() {
        eprintln!(
            "SKIPPED: the TypeScript SDK is not installed ({} missing; run `npm ci --prefix interop`)",
            sdk.display()
        );
        assert!(
            std::env::var_os("MCP_TASKS_REQUIRE_INTEROP").is_none(),
            "the npm packages of interop/ are required (MCP_TASKS_REQUIRE_INTEROP is set)"
        );
        return;
    }
    let server = Server::start_env(&["--sse-hold", "1s", "--sse-retry", "200ms"], extra_env);
    let mut args = vec![
        "--input-type=module".to_owned(),
        "-e".to_owned(),
        SCRIPT.to_owned(),
        server.url(),
    ];
    if let Some(t) = token {
        args.push(t.to_owned());
    }
    let mut child = Command::new("node")
        .args(&args)
        .current_dir(interop_dir())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run node");
    let deadline = Instant::now() + Duration::from_secs(90);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    eprintln!("{stdout}\n{stderr}");
    assert!(out.status.success(), "node failed: {stderr}");
    assert!(stdout.contains("ALL OK"), "{stdout}");
}

#[test]
fn typescript_sdk_client_without_auth() {
    run(&[], None);
}

#[test]
fn typescript_sdk_client_with_bearer_auth() {
    run(&[(TOKENS_ENV, "ts-token ts-user")], Some("ts-token"));
}
