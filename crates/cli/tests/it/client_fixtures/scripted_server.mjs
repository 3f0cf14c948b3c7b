// A scripted stdio MCP server for the terminal tests (`term_pty.rs`), for requests our demo
// server does not make. No dependencies.
//
// * `form` (plain call): sends `elicitation/create` with a boolean, a single-choice enum and
//   an integer with a default; returns the `ElicitResult` as JSON text;
// * `task_form` (plain call): sends the same elicitation *task-augmented*, polls the
//   client's task with `tasks/get` until it ends, fetches it with `tasks/result`, and
//   returns `{created, statuses, result}` as JSON text;
// * `hang` (as a task): a task that never ends, whose `tasks/cancel` is never answered.
import { createInterface } from 'node:readline';

const send = m => process.stdout.write(JSON.stringify({ jsonrpc: '2.0', ...m }) + '\n');
const pending = new Map();
let nextId = 0;

// A request to the client; resolves with its whole response (result or error).
function request(method, params) {
  nextId += 1;
  const id = `s${nextId}`;
  const answered = new Promise(resolve => pending.set(id, resolve));
  send({ id, method, params });
  return answered;
}

const FORM = {
  mode: 'form',
  message: 'Order a pizza?',
  requestedSchema: {
    type: 'object',
    properties: {
      confirm: { type: 'boolean', title: 'Confirm the order' },
      size: { type: 'string', enum: ['s', 'm', 'l'], enumNames: ['Small', 'Medium', 'Large'] },
      count: { type: 'integer', minimum: 1, maximum: 5, default: 1 },
    },
    required: ['confirm', 'size'],
  },
};
const NOW = '2025-11-25T10:00:00.000Z';
const HANG = {
  taskId: 'hang-1', status: 'working', createdAt: NOW, lastUpdatedAt: NOW, ttl: 60000,
  pollInterval: 100,
};
const TOOLS = [
  { name: 'form', inputSchema: { type: 'object' } },
  { name: 'task_form', inputSchema: { type: 'object' } },
  { name: 'hang', inputSchema: { type: 'object' }, execution: { taskSupport: 'optional' } },
];

const text = obj => ({ content: [{ type: 'text', text: JSON.stringify(obj) }] });
const sleep = ms => new Promise(resolve => setTimeout(resolve, ms));

async function call(id, params) {
  const name = params.name;
  if (name === 'form') {
    const r = await request('elicitation/create', FORM);
    send({ id, result: text(r.result ?? r) });
  } else if (name === 'task_form') {
    const created = (await request('elicitation/create', { ...FORM, task: { ttl: 60000 } }))
      .result.task;
    const statuses = [];
    for (;;) {
      const t = (await request('tasks/get', { taskId: created.taskId })).result;
      statuses.push(t.status);
      if (['completed', 'failed', 'cancelled'].includes(t.status)) break;
      await sleep(200);
    }
    const result = await request('tasks/result', { taskId: created.taskId });
    send({ id, result: text({ created, statuses, result: result.result ?? result }) });
  } else if (name === 'hang' && params.task) {
    send({ id, result: { task: HANG } });
  } else {
    send({ id, error: { code: -32602, message: 'unknown tool' } });
  }
}

for await (const line of createInterface({ input: process.stdin })) {
  if (!line.trim()) continue;
  const msg = JSON.parse(line);
  if (!('method' in msg)) {
    const resolve = pending.get(msg.id);
    if (resolve) {
      pending.delete(msg.id);
      resolve(msg);
    }
    continue;
  }
  if (!('id' in msg)) continue;
  const { id, method } = msg;
  const params = msg.params ?? {};
  if (method === 'initialize') {
    send({
      id,
      result: {
        protocolVersion: '2025-11-25',
        capabilities: {
          tools: {},
          tasks: { list: {}, cancel: {}, requests: { tools: { call: {} } } },
        },
        serverInfo: { name: 'fake', version: '0' },
      },
    });
  } else if (method === 'tools/list') {
    send({ id, result: { tools: TOOLS } });
  } else if (method === 'tools/call') {
    call(id, params);
  } else if (method === 'tasks/get') {
    send({ id, result: HANG });
  } else if (method === 'tasks/result' || method === 'tasks/cancel') {
    // Never answered.
  } else if (method === 'tasks/list') {
    send({ id, result: { tasks: [HANG] } });
  } else {
    send({ id, error: { code: -32601, message: method } });
  }
}
