// A stdio MCP server whose `tasks/result` behaves as FastMCP 3.4.11's does: on a task that
// is not terminal it does not block (as the spec says it MUST) but answers at once with
// -32602 "Task not completed yet (current state: working)". No dependencies.
//
// Tool `work {ms, fail?, forget?}` (taskSupport optional): as a task it is `working` for
// `ms`, then `completed` with "worked <ms>" (with `fail`: `failed`, and like FastMCP
// tasks/result then gives a CallToolResult with isError); with `forget` the task is
// forgotten at once (tasks/get and tasks/result: -32602 "Invalid taskId: ... not found").
// Environment: EARLY_POLL_MS, the pollInterval it suggests (default 100).
// It logs how many tasks/result and tasks/get it answered to stderr when stdin ends.
import { createInterface } from 'node:readline';
import { randomUUID } from 'node:crypto';

const pollInterval = Number(process.env.EARLY_POLL_MS ?? 100);
const send = m => process.stdout.write(JSON.stringify({ jsonrpc: '2.0', ...m }) + '\n');
const reply = (id, result) => send({ id, result });
const fail = (id, code, message) => send({ id, error: { code, message } });
const text = (t, isError) => ({ content: [{ type: 'text', text: t }], ...(isError ? { isError: true } : {}) });
const now = () => new Date().toISOString();
const tasks = new Map();
const counts = { 'tasks/result': 0, 'tasks/get': 0 };

const view = t => ({
  taskId: t.id, status: t.status, createdAt: t.createdAt, lastUpdatedAt: t.updatedAt,
  ttl: 60000, pollInterval,
});

function toolsCall(id, p) {
  const args = p.arguments ?? {};
  const ms = Number(args.ms ?? 0);
  if (p.name !== 'work') return fail(id, -32602, `Unknown tool: ${p.name}`);
  if (!p.task) {
    return setTimeout(() => reply(id, text(`worked ${ms}`, args.fail)), ms);
  }
  const created = now();
  const t = { id: randomUUID(), status: 'working', createdAt: created, updatedAt: created };
  if (!args.forget) tasks.set(t.id, t);
  setTimeout(() => {
    t.status = args.fail ? 'failed' : 'completed';
    t.updatedAt = now();
    t.result = text(args.fail ? `failed after ${ms}` : `worked ${ms}`, args.fail);
  }, ms);
  reply(id, { task: view(t) });
}

function handle(m) {
  if (m.method === undefined || m.id === undefined) return; // responses, notifications
  const p = m.params ?? {};
  if (m.method in counts) counts[m.method]++;
  const t = tasks.get(p.taskId);
  const unknown = () => fail(m.id, -32602, `Invalid taskId: ${p.taskId} not found`);
  switch (m.method) {
    case 'initialize':
      return reply(m.id, {
        protocolVersion: '2025-11-25',
        capabilities: { tools: {}, tasks: { list: {}, cancel: {}, requests: { tools: { call: {} } } } },
        serverInfo: { name: 'early-result', version: '3.4.11' },
      });
    case 'ping':
      return reply(m.id, {});
    case 'tools/list':
      return reply(m.id, {
        tools: [{ name: 'work', inputSchema: { type: 'object', properties: { ms: { type: 'integer' } } }, execution: { taskSupport: 'optional' } }],
      });
    case 'tools/call':
      return toolsCall(m.id, p);
    case 'tasks/get':
      return t ? reply(m.id, view(t)) : unknown();
    case 'tasks/result':
      if (!t) return unknown();
      if (t.status !== 'completed' && t.status !== 'failed') {
        return fail(m.id, -32602, `Task not completed yet (current state: ${t.status})`);
      }
      return reply(m.id, { ...t.result, _meta: { 'io.modelcontextprotocol/related-task': { taskId: t.id } } });
    case 'tasks/list':
      return reply(m.id, { tasks: [...tasks.values()].map(view) });
    default:
      return fail(m.id, -32601, `Method not found: ${m.method}`);
  }
}

const rl = createInterface({ input: process.stdin });
rl.on('line', line => { if (line.trim()) handle(JSON.parse(line)); });
rl.on('close', () => {
  process.stderr.write(`early-result: answered ${JSON.stringify(counts)}\n`);
  process.exit(0);
});
