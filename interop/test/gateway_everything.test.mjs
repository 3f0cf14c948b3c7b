// Issue #10: the gateway (`mcp-tasks serve --stdio --upstream-cmd ...`) in front of the
// real @modelcontextprotocol/server-everything@2026.8.31 over stdio, driven by the
// official TypeScript SDK 1.32.2 client: its plain tools as tasks, its own task tool
// `simulate-research-query` through upstream tasks, `trigger-elicitation-request`
// answered through tasks/result, `trigger-long-running-operation` with progress and with
// a cancel that reaches the upstream (seen in a log of what the upstream received).

import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { CallToolResultSchema, CreateTaskResultSchema, ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';

import { REPO_ROOT, TappedStdioTransport, WireLog, annotate, delay, drain, pollTask, relatedTaskOf, serverBinary } from '../lib/harness.mjs';

const EVERYTHING = resolve(REPO_ROOT, 'interop', 'node_modules', '@modelcontextprotocol', 'server-everything', 'dist', 'index.js');
const TAP = resolve(REPO_ROOT, 'crates', 'cli', 'tests', 'it', 'gateway_fixtures', 'tap.mjs');
const AS_TASKS = ['get-sum', 'echo', 'trigger-elicitation-request', 'trigger-long-running-operation'];

/** The gateway in front of server-everything, what the upstream receives logged. */
async function gateway({ capabilities = {}, handlers = [] } = {}) {
  assert.ok(existsSync(EVERYTHING), `${EVERYTHING} missing: run npm ci --prefix interop`);
  const dir = mkdtempSync(join(tmpdir(), 'mcp-tasks-gateway-'));
  const upstreamLog = join(dir, 'upstream-in.log');
  const args = ['serve', '--stdio', '--store', 'memory', '--upstream-cmd', `node ${TAP} ${upstreamLog} node ${EVERYTHING} stdio`];
  for (const t of AS_TASKS) args.push('--tool-task-support', `${t}=optional`);
  const wire = new WireLog();
  const transport = new TappedStdioTransport(
    { command: serverBinary(), args, env: { ...process.env, RUST_LOG: process.env.RUST_LOG ?? 'warn' }, stderr: 'pipe' },
    wire
  );
  let stderrText = '';
  transport.stderr?.on('data', chunk => {
    stderrText += chunk.toString('utf8');
  });
  const client = new Client({ name: 'gateway-interop', version: '0.0.0' }, { capabilities });
  const errors = [];
  client.onerror = e => errors.push(e);
  for (const [schema, handler] of handlers) client.setRequestHandler(schema, handler);
  await client.connect(transport, { timeout: 20000 });
  const upstream = () =>
    existsSync(upstreamLog)
      ? readFileSync(upstreamLog, 'utf8').split('\n').filter(Boolean).map(l => JSON.parse(l))
      : [];
  return { client, wire, errors, upstream, stderr: () => stderrText, close: () => client.close().catch(() => {}) };
}

function session(opts, fn) {
  return async () => {
    const s = await gateway(opts);
    try {
      await fn(s);
      assert.deepEqual(s.errors.map(String), [], 'the SDK client reported errors');
    } catch (e) {
      throw annotate(e, s);
    } finally {
      await s.close();
    }
  };
}

async function until(pred, what, timeoutMs = 15000) {
  const start = performance.now();
  for (;;) {
    const v = pred();
    if (v) return v;
    if (performance.now() - start > timeoutMs) throw new Error(`timed out waiting for ${what}`);
    await delay(20);
  }
}

describe('gateway in front of server-everything 2026.8.31 (issue #10)', () => {
  it(
    'initialize merges the upstream; tools keep its taskSupport, overridden ones are optional',
    session({}, async ({ client }) => {
      const caps = client.getServerCapabilities();
      assert.deepEqual(caps.tasks, { list: {}, cancel: {}, requests: { tools: { call: {} } } });
      assert.ok(caps.prompts && caps.resources && caps.logging, `upstream capabilities lost: ${JSON.stringify(caps)}`);
      assert.equal(client.getServerVersion().name, 'mcp-servers/everything');
      const { tools } = await client.listTools();
      const support = Object.fromEntries(tools.map(t => [t.name, t.execution?.taskSupport]));
      assert.equal(support['simulate-research-query'], 'required');
      assert.equal(support['get-sum'], 'optional');
      assert.equal(support['get-tiny-image'], 'forbidden');
      const prompts = await client.listPrompts();
      assert.ok(prompts.prompts.some(p => p.name === 'simple-prompt'), 'prompts pass through');
    })
  );

  it(
    'a plain tool (get-sum) as a task: CreateTaskResult, then its exact result',
    session({}, async ({ client, wire }) => {
      await client.listTools();
      const plain = await client.callTool({ name: 'get-sum', arguments: { a: 19, b: 23 } });
      const messages = await drain(
        client.experimental.tasks.callToolStream({ name: 'get-sum', arguments: { a: 19, b: 23 } }, CallToolResultSchema, { task: {} })
      );
      assert.equal(messages[0].type, 'taskCreated', JSON.stringify(messages));
      assert.equal(messages.at(-1).type, 'result', JSON.stringify(messages.at(-1)));
      const taskId = messages[0].task.taskId;
      assert.deepEqual(messages.at(-1).result.content, plain.content);
      const raw = wire.lastExchange('tasks/result').response.msg.result;
      assert.deepEqual(relatedTaskOf(raw), { taskId });
      assert.equal((await client.experimental.tasks.getTask(taskId)).status, 'completed');
    })
  );

  it(
    'simulate-research-query runs through an upstream task',
    session({}, async ({ client, upstream }) => {
      await client.listTools();
      const messages = await drain(client.experimental.tasks.callToolStream({ name: 'simulate-research-query', arguments: { topic: 'tides' } }));
      assert.equal(messages.at(-1).type, 'result', JSON.stringify(messages.at(-1)));
      assert.match(messages.at(-1).result.content[0].text, /Research Report: tides/);
      const call = upstream().find(m => m.params?.name === 'simulate-research-query');
      assert.ok(call?.params?.task, 'the upstream was called with a task');
      const upstreamTask = upstream().find(m => m.method === 'tasks/result')?.params?.taskId;
      assert.ok(upstreamTask && upstreamTask !== messages[0].task.taskId, 'the gateway keeps its own task id');
    })
  );

  it(
    'trigger-elicitation-request as a task is answered through tasks/result',
    session(
      {
        capabilities: { elicitation: { form: {} } },
        handlers: [[ElicitRequestSchema, async () => ({ action: 'accept', content: { name: 'Ada Lovelace', check: true, integer: 7 } })]]
      },
      async ({ client, wire }) => {
        await client.listTools();
        const { task } = await client.request(
          { method: 'tools/call', params: { name: 'trigger-elicitation-request', arguments: {} } },
          CreateTaskResultSchema,
          { task: {} }
        );
        const waiting = await pollTask(client, task.taskId, t => t.status !== 'working');
        assert.equal(waiting.status, 'input_required');
        const result = await client.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema);
        assert.ok(result.content.some(c => c.text?.includes('Ada Lovelace')), JSON.stringify(result));
        const [req] = wire.receivedRequests('elicitation/create');
        assert.deepEqual(relatedTaskOf(req.msg.params), { taskId: task.taskId });
        const open = wire.sentRequests('tasks/result', m => m.params.taskId === task.taskId).find(r => r.seq < req.seq);
        assert.ok(open, 'elicitation/create came on a pending tasks/result');
        assert.equal((await client.experimental.tasks.getTask(task.taskId)).status, 'completed');
      }
    )
  );

  it(
    'trigger-long-running-operation as a task reports progress with the original token',
    session({}, async ({ client, wire }) => {
      const seen = [];
      const { task } = await client.request(
        { method: 'tools/call', params: { name: 'trigger-long-running-operation', arguments: { duration: 1, steps: 3 } } },
        CreateTaskResultSchema,
        { task: {}, onprogress: p => seen.push(p) }
      );
      const result = await client.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema);
      assert.match(result.content[0].text, /Long running operation completed/);
      const token = wire.lastExchange('tools/call').request.msg.params._meta.progressToken;
      const notes = wire.receivedNotifications('notifications/progress');
      assert.deepEqual(notes.map(n => n.msg.params.progress), [1, 2, 3]);
      for (const n of notes) {
        assert.deepEqual(n.msg.params.progressToken, token);
        assert.deepEqual(relatedTaskOf(n.msg.params), { taskId: task.taskId });
      }
      assert.deepEqual(seen.map(p => p.progress), [1, 2, 3]);
    })
  );

  it(
    'cancelling trigger-long-running-operation reaches the upstream',
    session({}, async ({ client, wire, upstream }) => {
      const { task } = await client.request(
        { method: 'tools/call', params: { name: 'trigger-long-running-operation', arguments: { duration: 30, steps: 30 } } },
        CreateTaskResultSchema,
        { task: {}, onprogress: () => {} }
      );
      await wire.waitFor(e => e.msg.method === 'notifications/progress', 10000, 'the first progress');
      const cancelled = await client.experimental.tasks.cancelTask(task.taskId);
      assert.equal(cancelled.status, 'cancelled');
      const call = upstream().find(m => m.params?.name === 'trigger-long-running-operation');
      const cancel = await until(() => upstream().find(m => m.method === 'notifications/cancelled'), 'notifications/cancelled upstream');
      assert.deepEqual(cancel.params.requestId, call.id);
      const before = wire.receivedNotifications('notifications/progress').length;
      await delay(2500);
      assert.equal(wire.receivedNotifications('notifications/progress').length, before, 'progress after the cancel');
      assert.equal((await client.experimental.tasks.getTask(task.taskId)).status, 'cancelled');
    })
  );
});
