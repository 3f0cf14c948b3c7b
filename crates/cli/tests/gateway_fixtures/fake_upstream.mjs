// A small stdio MCP server for the gateway tests. No dependencies.
//
// Every line it receives is appended to $FAKE_LOG (one JSON message per line), so tests
// can see exactly what reached the upstream. Environment:
//   FAKE_LOG        file to append received messages to
//   FAKE_TASKS=1    declare tasks.requests.tools.call (tool `job` then runs as a task)
//   FAKE_PIDFILE    file to write this process's pid to
//
// Tools: `echo {text}`, `slow {ms}` (answers after ms; a notifications/cancelled for it
// stops it silently), `die` (exits mid-call), `ask {question}` (elicitation/create, then
// answers with what came back), `steps {n}` (n progress notifications with the call's
// progressToken, then a result), `boom` (a JSON-RPC error -32042 with data),
// `job {ms}` (taskSupport required when FAKE_TASKS=1: a task that completes after ms).
// Any other method is answered with {"method": m, "params": p} (an echo, for round
// trips). The request `x/emit {method, params}` makes it send that notification.
import { appendFileSync, writeFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { randomUUID } from 'node:crypto';

const log = process.env.FAKE_LOG;
if (process.env.FAKE_PIDFILE) writeFileSync(process.env.FAKE_PIDFILE, String(process.pid));
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
  ...(tasksOn ? [{ name: 'job', description: 'a task', inputSchema: { type: 'object' }, execution: { taskSupport: 'required' } }] : [])
];

function task(id) {
  const t = tasks.get(id);
  return { taskId: id, status: t.status, createdAt: t.createdAt, lastUpdatedAt: t.createdAt, ttl: 60000, pollInterval: 100 };
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
    case 'job': {
      if (!params.task) return fail(id, { code: -32601, message: 'job requires a task' });
      const tid = randomUUID();
      const createdAt = new Date().toISOString();
      tasks.set(tid, { status: 'working', createdAt, waiters: [] });
      setTimeout(() => {
        const t = tasks.get(tid);
        if (!t || t.status !== 'working') return;
        t.status = 'completed';
        t.result = { ...text(`job done after ${args.ms}`), structuredContent: { ms: args.ms } };
        for (const w of t.waiters) w();
      }, args.ms);
      return reply(id, { task: task(tid) });
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
      if (t.status === 'completed') return done();
      if (t.status === 'cancelled') return fail(id, { code: -32001, message: 'cancelled' });
      t.waiters.push(() => (t.status === 'completed' ? done() : fail(id, { code: -32001, message: 'cancelled' })));
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
  } else if (m.method === 'notifications/cancelled') {
    const key = JSON.stringify(m.params.requestId);
    clearTimeout(timers.get(key));
    timers.delete(key);
  } else if (m.method === undefined && waiting.has(m.id)) {
    waiting.get(m.id)(m);
    waiting.delete(m.id);
  }
}).on('close', () => process.exit(0));
