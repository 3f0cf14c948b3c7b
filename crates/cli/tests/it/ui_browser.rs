//! The dashboard in a real browser: Debian's `chromium`, headless, driven by
//! `playwright-core` (installed under `interop/` by `npm ci --prefix interop`; it launches
//! the installed browser, downloads none). Alice signs in with her token, sees a running
//! task appear within 2 s, opens it (request, history), cancels it and sees `cancelled`
//! (and so does `tasks/get`); a task of Bob's is never shown; `/ui#token=...` signs Bob
//! in without the token in the URL afterwards. A screenshot is saved as
//! `target/ui-screenshot.png` (the README's `docs/ui.png` is one).

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::http_common::{Server, TOKENS_ENV};

const SCRIPT: &str = r#"
import assert from 'node:assert/strict';
import { chromium } from 'playwright-core';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CreateTaskResultSchema, CallToolResultSchema } from '@modelcontextprotocol/sdk/types.js';

const [base, shot, executablePath] = process.argv.slice(1);

async function client(token) {
  const transport = new StreamableHTTPClientTransport(new URL(base + '/mcp'),
    { requestInit: { headers: { Authorization: `Bearer ${token}` } } });
  const c = new Client({ name: 'ui-browser-test', version: '0' });
  await c.connect(transport);
  return c;
}
async function start(c, name, args) {
  const r = await c.request({ method: 'tools/call',
    params: { name, arguments: args, task: { ttl: 600000 } } }, CreateTaskResultSchema);
  return r.task.taskId;
}

const alice = await client('tok-alice');
const bob = await client('tok-bob');
const foreign = await start(bob, 'sleep', { ms: 600000 });
const echoed = await start(alice, 'progress', { steps: 3, ms: 5 });
await alice.experimental.tasks.getTaskResult(echoed, CallToolResultSchema);

const browser = await chromium.launch({ executablePath, headless: true,
  args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'] });
try {
  const page = await browser.newPage({ viewport: { width: 1360, height: 820 } });
  const problems = [];
  page.on('pageerror', e => problems.push(String(e)));
  page.on('console', m => { if (m.type() === 'error' && !/401/.test(m.text())) problems.push(m.text()); });
  const urls = [];
  page.on('request', r => urls.push(r.url()));

  await page.goto(base + '/ui');
  await page.waitForSelector('#signin-form', { state: 'visible', timeout: 10000 });
  assert.ok(await page.isHidden('#app'), 'no tasks before signing in');
  await page.fill('#token', 'tok-alice');
  await page.click('#signin-form button[type=submit]');
  await page.waitForFunction(() => document.getElementById('who').textContent.includes('alice'),
    null, { timeout: 10000 });
  await page.waitForSelector(`tr[data-task-id="${echoed}"]`, { timeout: 10000 });
  assert.ok(await page.isHidden('#signin'), 'the sign-in form is gone once signed in');
  console.log('ok signed in');

  // A task started now appears within 2 s, running.
  const running = await start(alice, 'sleep', { ms: 600000 });
  const t0 = Date.now();
  await page.waitForSelector(`tr[data-task-id="${running}"]`, { timeout: 2000 });
  console.log(`ok the running task appeared after ${Date.now() - t0} ms`);
  assert.equal(await page.textContent(`tr[data-task-id="${running}"] .status`), 'working');
  assert.ok(!(await page.content()).includes(foreign), "Bob's task is never shown");

  // Open it: request arguments and history.
  await page.click(`tr[data-task-id="${running}"]`);
  await page.waitForFunction(id => document.getElementById('d-id').textContent === id
    && !document.getElementById('detail').hidden, running, { timeout: 5000 });
  assert.match(await page.textContent('#d-request'), /"ms": 600000/);
  assert.match(await page.textContent('#d-history'), /working/);
  await page.waitForSelector('#d-cancel', { state: 'visible', timeout: 5000 });
  console.log('ok detail');

  // Cancel it: the detail and the row say cancelled; so does tasks/get.
  await page.click('#d-cancel');
  await page.waitForFunction(() => document.getElementById('d-status').textContent === 'cancelled',
    null, { timeout: 5000 });
  await page.waitForFunction(id => document.querySelector(`tr[data-task-id="${id}"] .status`)
    ?.textContent === 'cancelled', running, { timeout: 5000 });
  assert.ok(await page.isHidden('#d-cancel'), 'no cancel button on a terminal task');
  assert.match(await page.textContent('#d-history'), /cancelled/);
  assert.match(await page.textContent('#d-outcome'), /-32001/);
  assert.equal(await page.textContent('#counts [data-status="cancelled"] b'), '1');
  assert.equal((await alice.experimental.tasks.getTask(running)).status, 'cancelled');
  assert.equal((await bob.experimental.tasks.getTask(foreign)).status, 'working');
  console.log('ok cancelled');

  // The filters.
  await page.selectOption('#f-tool', 'progress');
  await page.waitForFunction(id => !document.querySelector(`tr[data-task-id="${id}"]`), running,
    { timeout: 5000 });
  assert.equal(await page.locator('#tasks tbody tr').count(), 1);
  await page.selectOption('#f-tool', '');
  await page.waitForSelector(`tr[data-task-id="${running}"]`, { timeout: 5000 });
  await page.click(`tr[data-task-id="${running}"]`);
  await page.waitForFunction(() => document.getElementById('d-status').textContent === 'cancelled',
    null, { timeout: 5000 });
  assert.ok(!(await page.content()).includes(foreign), "Bob's task is never shown");
  await page.screenshot({ path: shot, fullPage: true });
  assert.ok(urls.every(u => u.startsWith(base + '/ui')), `only the page's own files: ${urls}`);
  assert.deepEqual(problems, []);
  console.log('ok screenshot');

  // A token in the fragment: kept in sessionStorage, gone from the address bar.
  const other = await browser.newContext();
  const p2 = await other.newPage();
  await p2.goto(base + '/ui#token=tok-bob');
  await p2.waitForSelector(`tr[data-task-id="${foreign}"]`, { timeout: 5000 });
  assert.equal(await p2.evaluate(() => location.hash), '');
  assert.equal(await p2.evaluate(() => sessionStorage.getItem('mcp-tasks-token')), 'tok-bob');
  const bobs = await p2.content();
  assert.ok(!bobs.includes(running) && !bobs.includes(echoed), "Alice's tasks are never shown to Bob");
  console.log('ok fragment');
  console.log('ALL OK');
} finally {
  await browser.close();
  await alice.close();
  await bob.close();
}
"#;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Debian's chromium (`MCP_TASKS_CHROMIUM` names another).
fn chromium() -> PathBuf {
    std::env::var_os("MCP_TASKS_CHROMIUM")
        .map_or_else(|| PathBuf::from("/usr/bin/chromium"), PathBuf::from)
}

#[test]
fn dashboard_in_headless_chromium() {
    let driver = repo().join("interop/node_modules/playwright-core");
    let browser = chromium();
    for (what, path) in [
        ("playwright-core (npm ci --prefix interop)", &driver),
        ("chromium (apt-get install chromium)", &browser),
    ] {
        if !path.exists() {
            eprintln!(
                "SKIPPED: {what} is not installed ({} missing)",
                path.display()
            );
            assert!(
                std::env::var_os("MCP_TASKS_REQUIRE_INTEROP").is_none(),
                "{what} is required (MCP_TASKS_REQUIRE_INTEROP is set)"
            );
            return;
        }
    }
    let server = Server::start_env(&[], &[(TOKENS_ENV, "tok-alice alice;tok-bob bob")]);
    let base = format!("http://{}", server.addr);
    let target =
        std::env::var_os("CARGO_TARGET_DIR").map_or_else(|| repo().join("target"), PathBuf::from);
    std::fs::create_dir_all(&target).unwrap();
    let shot = target.join("ui-screenshot.png");
    let _ = std::fs::remove_file(&shot);
    let mut child = Command::new("node")
        .args(["--input-type=module", "-e", SCRIPT])
        .arg(&base)
        .arg(&shot)
        .arg(&browser)
        .current_dir(repo().join("interop"))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run node");
    let deadline = Instant::now() + Duration::from_secs(120);
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
    assert!(out.status.success(), "the browser test failed: {stderr}");
    assert!(stdout.contains("ALL OK"), "{stdout}");
    let png = std::fs::read(&shot).expect("the screenshot");
    assert!(
        png.starts_with(b"\x89PNG") && png.len() > 10_000,
        "a real screenshot"
    );
}
