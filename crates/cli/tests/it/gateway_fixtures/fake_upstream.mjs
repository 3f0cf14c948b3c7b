// A small stdio MCP server for the gateway tests. No dependencies.
//
// Every line it receives is appended to $FAKE_LOG (one JSON message per line), so tests
// can see exactly what reached the upstream. Environment:
//   FAKE_LOG        file to append received messages to
//   FAKE_TASKS=1    declare tasks.requests.tools.call (tool `job` then runs as a task)
//   FAKE_PIDFILE    file to write this process's pid to
//   FAKE_ENV_DUMP   file to write this process's environment to (JSON), at start
//   FAKE_FLOOD=N    on notifications/initialized, send N notifications/message (1 KiB
//                   each) at once, then write the file $FAKE_FLOODED
//   FAKE_FLOOD_REQUESTS=N  ... and as many roots/list requests first (their answers are
//                   only logged)
//   FAKE_EARLY=1    tasks/result of a task still running answers at once with -32602
//                   "Task not completed yet" (FastMCP 3.4.11), and the task completes
//                   right after that answer
//   FAKE_PY=1       tasks/result of a failed task answers {_meta} only (Python mcp 1.30)
//
// Tools: `echo {text}`, `slow {ms}` (answers after ms; a notifications/cancelled for it
// stops it silently), `die` (exits mid-call), `ask {question}` (elicitation/create, then
// answers with what came back), `steps {n}` (n progress notifications with the call's
// progressToken, then a result), `boom` (a JSON-RPC error -32042 with data),
// `job {ms, pad}` (taskSupport required when FAKE_TASKS=1: a task that completes after
// ms, its text padded with `pad` x's), `failjob {ms, valid}` (a task that ends `failed`
// after ms; its result is a CallToolResult without isError with `valid`, else what
// FAKE_PY says), `big {bytes, endless}` (a text result of that many x's; with `endless`
// the start of the answer and the x's, and never the rest of the line), `askjob {question, ms}`
// (FAKE_TASKS=1: a task that, after ms, asks elicitation/create *without* related-task `_meta`, as
// FastMCP 3.4.11 does, then completes with `answer: <the answer or error as JSON>`).
// Any other method is answered with {"method": m, "params": p} (an echo, for round
// trips). The request `x/emit {method, params}` makes it send that notification.
import { appendFileSync, writeFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { randomUUID } from 'node:crypto';

const log = process.env.FAKE_LOG;
if (process.env.FAKE_PIDFILE) writeFileSync(process.env.FAKE_PIDFILE, String(process.pid));
if (process.env.FAKE_ENV_DUMP) writeFileSync(process.env.FAKE_ENV_DUMP, JSON.stringify(process.env));
const early = process.env.FAKE_EARLY === '1';
const py = process.env.FAKE_PY === '1';
const tasksOn = process.env.FAKE_TASKS === '1';

const send = m => process.stdout.write(JSON.stringify({ jsonrpc: '2.0', ...m }) + '\n');
const reply = (id, result) => send({ id, result });
const fail = (id, error) => send({ id, error });
const text = t => ({ content: [{ type: 'text', text: t }] });

const timers = new Map(); // request id (JSON) -> timer
const waiting = new Map(); // our request id -> resolve
const tasks = new Map(); // task id -> { status, result, waiters: [] }
let nextId = 1;

function ask(method, params) {
  const id = `fake-${nextId++}`;
  send({ id, method, params });
  return new Promise(resolve => waiting.set(id, resolve));
}

const tools = [
  { name: 'echo', description: 'echo', inputSchema: { type: 'object' }, annotations: { readOnlyHint: true }, _meta: { 'x/k': 1 } },
  { name: 'slow', inputSchema: { type: 'object' } },
  { name: 'die', description: 'exits mid-call', inputSchema: { type: 'object' } },
  { name: 'ask', description: 'elicits', inputSchema: { type: 'object' } },
  { name: 'steps', description: 'progress', inputSchema: { type: 'object' } },
  { name: 'boom', description: 'json-rpc error', inputSchema: { type: 'object' } },
  { name: 'big', description: 'a large result', inputSchema: { type: 'object' } },
  ...(tasksOn ? [
    { name: 'job', description: 'a task', inputSchema: { type: 'object' }, execution: { taskSupport: 'required' } },
    { name: 'failjob', description: 'a task that fails', inputSchema: { type: 'object' }, execution: { taskSupport: 'required' } },
    { name: 'askjob', description: 'a task that asks', inputSchema: { type: 'object' }, execution: { taskSupport: 'required' } }
  ] : [])
];

function task(id) {
  const t = tasks.get(id);
  return { taskId: id, status: t.status, ...(t.statusMessage ? { statusMessage: t.statusMessage } : {}), createdAt: t.createdAt, lastUpdatedAt: t.createdAt, ttl: 60000, pollInterval: 100 };
}

// A task for the call `id` that `end`s after ms (unless cancelled first); `early` ends it
// at once (see FAKE_EARLY).
function startTask(id, params, ms, end, early) {
  if (!params.task) return fail(id, { code: -32601, message: `${params.name} requires a task` });
  const tid = randomUUID();
  const t = { id: tid, status: 'working', createdAt: new Date().toISOString(), waiters: [] };
  tasks.set(tid, t);
  setTimeout(() => {
    if (t.status !== 'working') return;
    end(t);
    for (const w of t.waiters) w();
  }, ms);
  if (early) t.complete = () => early(t);
  return reply(id, { task: task(tid) });
}

async function callTool(id, params) {
  const args = params.arguments ?? {};
  const token = params._meta?.progressToken;
  switch (params.name) {
    case 'echo':
      return reply(id, text(String(args.text)));
    case 'slow':
      timers.set(JSON.stringify(id), setTimeout(() => { timers.delete(JSON.stringify(id)); reply(id, text(`slept ${args.ms}`)); }, args.ms));
      return;
    case 'die':
      setTimeout(() => process.exit(3), 50);
      return;
    case 'ask': {
      const answer = await ask('elicitation/create', { message: args.question, requestedSchema: { type: 'object', properties: { answer: { type: 'string' } } } });
      return reply(id, text(JSON.stringify(answer.result ?? answer.error)));
    }
    case 'steps':
      for (let i = 1; i <= args.n; i++) {
        if (token !== undefined) send({ method: 'notifications/progress', params: { progressToken: token, progress: i, total: args.n, message: `step ${i}` } });
        await new Promise(r => setTimeout(r, 20));
      }
      return reply(id, text('done'));
    case 'boom':
      return fail(id, { code: -32042, message: 'boom', data: { why: 'asked to fail' } });
    case 'big':
      if (args.endless) {
        process.stdout.write(`{"jsonrpc":"2.0","id":${JSON.stringify(id)},"result":{"content":[{"type":"text","text":"`);
        return process.stdout.write('x'.repeat(args.bytes));
      }
      return reply(id, text('x'.repeat(args.bytes)));
    case 'failjob':
      return startTask(id, params, args.ms ?? 0, t => {
        t.status = 'failed';
        t.statusMessage = 'the job failed';
        t.result = args.valid ? text('failed quietly') : py ? { _meta: { 'io.modelcontextprotocol/related-task': { taskId: t.id } } } : { ...text('failed'), isError: true };
      });
    case 'askjob': {
      if (!params.task) return fail(id, { code: -32601, message: 'askjob requires a task' });
      const tid = randomUUID();
      const t = { id: tid, status: 'working', createdAt: new Date().toISOString(), waiters: [] };
      tasks.set(tid, t);
      reply(id, { task: task(tid) });
      await new Promise(r => setTimeout(r, args.ms ?? 0));
      t.status = 'input_required';
      const answer = await ask('elicitation/create', { message: args.question, requestedSchema: { type: 'object', properties: { answer: { type: 'string' } } } });
      if (t.status !== 'input_required') return;
      t.status = 'completed';
      t.result = text(`answer: ${JSON.stringify(answer.result ?? answer.error)}`);
      for (const w of t.waiters) w();
      return;
    }
    case 'job': {
      const done = pad => t => {
        t.status = 'completed';
        t.result = { ...text(`job done after ${args.ms}${'x'.repeat(pad)}`), structuredContent: { ms: args.ms } };
      };
      return startTask(id, params, args.ms, done(args.pad ?? 0), done(0));
    }
    default:
      return fail(id, { code: -32602, message: `Unknown tool ${params.name}` });
  }
}

async function onRequest(m) {
  const { id, method, params } = m;
  switch (method) {
    case 'initialize':
      return reply(id, {
        protocolVersion: params.protocolVersion,
        capabilities: { tools: { listChanged: true }, resources: { subscribe: true }, logging: {}, 'x-fake': { deep: [1, { two: 2 }] }, ...(tasksOn ? { tasks: { cancel: {}, requests: { tools: { call: {} } } } } : {}) },
        serverInfo: { name: 'fake-upstream', version: '1.0.0', title: 'Fake' },
        instructions: 'fake instructions',
        'x-extra': true
      });
    case 'tools/list':
      return reply(id, { tools });
    case 'tools/call':
      return callTool(id, params);
    case 'tasks/get':
      if (!tasks.has(params.taskId)) return fail(id, { code: -32602, message: 'Failed to retrieve task: Task not found' });
      return reply(id, task(params.taskId));
    case 'tasks/result': {
      const t = tasks.get(params.taskId);
      if (!t) return fail(id, { code: -32602, message: 'Failed to retrieve task: Task not found' });
      const done = () => reply(id, { ...t.result, _meta: { 'io.modelcontextprotocol/related-task': { taskId: params.taskId } } });
      if (t.status === 'completed' || t.status === 'failed') return done();
      if (t.status === 'cancelled') return fail(id, { code: -32001, message: 'cancelled' });
      if (early) {
        // FastMCP 3.4.11: no blocking; and here the task ends just after this answer.
        fail(id, { code: -32602, message: 'Task not completed yet' });
        if (t.complete) setImmediate(t.complete);
        return;
      }
      t.waiters.push(() => (t.status === 'completed' || t.status === 'failed' ? done() : fail(id, { code: -32001, message: 'cancelled' })));
      return;
    }
    case 'tasks/cancel': {
      const t = tasks.get(params.taskId);
      if (!t) return fail(id, { code: -32602, message: 'Task not found' });
      t.status = 'cancelled';
      for (const w of t.waiters) w();
      return reply(id, task(params.taskId));
    }
    case 'x/emit':
      send({ method: params.method, params: params.params });
      return reply(id, {});
    case 'x/ask-client':
      return reply(id, await ask(params.method, params.params));
    default:
      return reply(id, { method, params, _meta: params?._meta });
  }
}

createInterface({ input: process.stdin }).on('line', line => {
  if (!line.trim()) return;
  if (log) appendFileSync(log, line + '\n');
  const m = JSON.parse(line);
  if (m.method !== undefined && m.id !== undefined) {
    onRequest(m);
  } else if (m.method === 'notifications/initialized' && process.env.FAKE_FLOOD) {
    const n = Number(process.env.FAKE_FLOOD);
    const data = 'y'.repeat(1024);
    for (let i = 1; i <= Number(process.env.FAKE_FLOOD_REQUESTS ?? 0); i++) send({ id: `flood-${i}`, method: 'roots/list', params: { _meta: { i } } });
    for (let i = 1; i < n; i++) send({ method: 'notifications/message', params: { level: 'info', data: `${i} ${data}` } });
    process.stdout.write(JSON.stringify({ jsonrpc: '2.0', method: 'notifications/message', params: { level: 'info', data: `${n} last` } }) + '\n',
      () => writeFileSync(process.env.FAKE_FLOODED, 'done'));
  } else if (m.method === 'notifications/cancelled') {
    const key = JSON.stringify(m.params.requestId);
    clearTimeout(timers.get(key));
    timers.delete(key);
  } else if (m.method === undefined && waiting.has(m.id)) {
    waiting.get(m.id)(m);
    waiting.delete(m.id);
  }
}).on('close', () => process.exit(0));
