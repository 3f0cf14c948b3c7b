// The official TypeScript SDK client through a round-robin proxy over several
// `mcp-tasks serve` replicas on one PostgreSQL database, no session affinity. Driven by
// crates/cli/tests/it/replicas_ts.rs, which starts the replicas (with a short
// `--sse-hold`, so that every SSE stream is resumed with `Last-Event-ID`, mostly on
// another replica) and the proxy, and SIGKILLs a replica when this script asks for it.
//
//   node lib/replicas.mjs URL TOKEN
//
// Each flow prints `ok <flow>`; `KILL` asks the driver to kill a replica (it answers with
// a line on stdin); `ALL OK` ends a run where every flow passed.

import assert from 'node:assert/strict';
import { createInterface } from 'node:readline';
import { setTimeout as delay } from 'node:timers/promises';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import {
  CallToolResultSchema,
  CreateTaskResultSchema,
  ElicitRequestSchema,
  ListTasksResultSchema,
  TaskStatusNotificationSchema
} from '@modelcontextprotocol/sdk/types.js';

const [url, token] = process.argv.slice(2);

// Every HTTP exchange, to prove what went over the wire (resumptions above all).
const exchanges = [];
async function tappedFetch(input, init) {
  const headers = new Headers(init?.headers);
  const entry = { method: init?.method ?? 'GET', lastEventId: headers.get('last-event-id') };
  exchanges.push(entry);
  const r = await fetch(input, init);
  entry.status = r.status;
  return r;
}

const transport = new StreamableHTTPClientTransport(new URL(url), {
  fetch: tappedFetch,
  requestInit: { headers: { Authorization: `Bearer ${token}` } },
  reconnectionOptions: { initialReconnectionDelay: 50, maxReconnectionDelay: 500, reconnectionDelayGrowFactor: 1.5, maxRetries: 20 }
});
const client = new Client({ name: 'ts-sdk-replicas', version: '0' }, { capabilities: { elicitation: { form: {} } } });
const asked = [];
client.setRequestHandler(ElicitRequestSchema, async request => {
  asked.push(request.params);
  return { action: 'accept', content: { answer: `answer ${asked.length}` } };
});
const statuses = [];
client.setNotificationHandler(TaskStatusNotificationSchema, n => {
  statuses.push(n.params);
});
const errors = [];
let killed = false;
client.onerror = e => errors.push({ message: String(e?.message ?? e), afterKill: killed });
await client.connect(transport);
assert.ok(transport.sessionId, 'a session id');

async function last(stream) {
  let out;
  for await (const m of stream) out = m;
  return out;
}

async function until(what, cond, ms = 10000) {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await delay(20);
  }
}

// Acknowledged results, checked again after the kill.
const acknowledged = [];

async function progressTask(steps, ms) {
  const progress = [];
  let taskId;
  const r = await last(
    (async function* () {
      for await (const m of client.experimental.tasks.callToolStream(
        { name: 'progress', arguments: { steps, ms } },
        CallToolResultSchema,
        { task: { ttl: 600000 }, onprogress: p => progress.push(p) }
      )) {
        if (m.type === 'taskCreated') taskId = m.task.taskId;
        yield m;
      }
    })()
  );
  assert.equal(r.type, 'result', JSON.stringify(r));
  acknowledged.push({ taskId, result: r.result });
  // Notifications travel on the GET stream, the result on tasks/result: either may come
  // first.
  await until(`${steps} progress notifications of ${taskId} (got ${JSON.stringify(progress)})`, () => progress.length >= steps);
  await until(`the completed status of ${taskId}`, () => statuses.some(s => s.taskId === taskId && s.status === 'completed'));
  assert.equal(progress.length, steps, JSON.stringify(progress));
  for (let i = 1; i < progress.length; i++) assert.ok(progress[i].progress > progress[i - 1].progress, JSON.stringify(progress));
  return taskId;
}

// 1. Task calls with progress tokens: the tool runs on one replica, the client's GET
// stream is on whichever the proxy picked (and moves: the server closes it every second).
for (let i = 0; i < 2; i++) await progressTask(8, 250);
console.log('ok progress');

// 2. Status notifications: every task above ended with its `completed` notification
// (checked in progressTask); one more kind, a task call without progress.
{
  let taskId;
  for await (const m of client.experimental.tasks.callToolStream(
    { name: 'sleep', arguments: { ms: 100 } }, CallToolResultSchema, { task: { ttl: 600000 } })) {
    if (m.type === 'taskCreated') taskId = m.task.taskId;
    if (m.type === 'result') acknowledged.push({ taskId, result: m.result });
    if (m.type === 'error') throw m.error;
  }
  await until(`the completed status of ${taskId}`, () => statuses.some(s => s.taskId === taskId && s.status === 'completed'));
}
console.log('ok status');

// 3. Elicitation answered: `ask` through input_required; tasks/result and the answer land
// on whichever replica the proxy picks. (The SDK makes a required tool a task once it
// has listed the tools.)
await client.listTools();
for (let i = 1; i <= 3; i++) {
  const r = await last(client.experimental.tasks.callToolStream(
    { name: 'ask', arguments: { question: `question ${i}` } }, CallToolResultSchema));
  assert.equal(r.type, 'result', JSON.stringify(r));
  assert.equal(r.result.content[0].text, `answer ${i}`);
  assert.equal(asked[i - 1].message, `question ${i}`);
}
assert.equal(asked.length, 3, JSON.stringify(asked));
console.log('ok elicitation');

// 4. Resumption with Last-Event-ID: a tasks/result that waits longer than the server
// holds a connection is resumed by the SDK with GET and Last-Event-ID, on another
// replica, and still gets its response.
{
  const created = await client.request({ method: 'tools/call', params: {
    name: 'sleep', arguments: { ms: 3500 }, task: { ttl: 600000 } } }, CreateTaskResultSchema);
  const before = exchanges.length;
  const result = await client.experimental.tasks.getTaskResult(created.task.taskId, CallToolResultSchema);
  assert.equal(result.content[0].text, 'slept 3500', JSON.stringify(result));
  acknowledged.push({ taskId: created.task.taskId, result });
  const resumed = exchanges.slice(before).filter(e => e.method === 'GET' && e.lastEventId && e.lastEventId.split('-').length >= 3);
  assert.ok(resumed.length >= 1, `the tasks/result stream was resumed: ${JSON.stringify(exchanges.slice(before))}`);
  assert.ok(resumed.every(e => e.status === 200), JSON.stringify(resumed));
  const standalone = exchanges.filter(e => e.method === 'GET' && e.lastEventId && e.lastEventId.split('-').length === 2);
  assert.ok(standalone.length >= 1, 'the GET stream was resumed too');
  assert.ok(standalone.every(e => e.status === 200), JSON.stringify(standalone));
}
console.log('ok resumption');

// 5. List and cancel.
const slow = await client.request({ method: 'tools/call', params: {
  name: 'sleep', arguments: { ms: 600000 }, task: {} } }, CreateTaskResultSchema);
for (let i = 0; i < 3; i++) {
  const listed = await client.request({ method: 'tasks/list', params: {} }, ListTasksResultSchema);
  assert.ok(listed.tasks.some(t => t.taskId === slow.task.taskId), JSON.stringify(listed));
}
console.log('ok list');
const cancelled = await client.experimental.tasks.cancelTask(slow.task.taskId);
assert.equal(cancelled.status, 'cancelled');
for (let i = 0; i < 3; i++) {
  const t = await client.experimental.tasks.getTask(slow.task.taskId);
  assert.equal(t.status, 'cancelled');
}
await until('the cancelled status', () => statuses.some(s => s.taskId === slow.task.taskId && s.status === 'cancelled'));
console.log('ok cancel');

// 6. SIGKILL of a replica: everything acknowledged before is still there, on the
// replicas left, and the session goes on.
killed = true;
console.log('KILL');
const lines = createInterface({ input: process.stdin });
await new Promise(resolve => lines.once('line', resolve));
lines.close();
for (let round = 0; round < 3; round++) {
  for (const { taskId, result } of acknowledged) {
    const t = await client.experimental.tasks.getTask(taskId);
    assert.equal(t.status, 'completed', JSON.stringify(t));
    const again = await client.experimental.tasks.getTaskResult(taskId, CallToolResultSchema);
    assert.deepEqual(again.content, result.content);
  }
}
const listed = await client.request({ method: 'tasks/list', params: {} }, ListTasksResultSchema);
for (const { taskId } of acknowledged) assert.ok(listed.tasks.some(t => t.taskId === taskId), taskId);
assert.equal((await client.experimental.tasks.getTask(slow.task.taskId)).status, 'cancelled');
await progressTask(4, 100);
console.log('ok after kill');

await transport.terminateSession();
await client.close();
const real = errors.filter(e => !/abort/i.test(e.message) && !(e.afterKill && /disconnect|terminated|fetch failed|reconnect|ECONNRESET|socket/i.test(e.message)));
assert.deepEqual(real, [], 'transport errors');
console.log('ALL OK');
