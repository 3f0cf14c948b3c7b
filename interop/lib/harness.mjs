// Test harness: spawns `mcp-tasks serve --stdio --store memory` through the
// official TypeScript SDK's StdioClientTransport and records every raw
// JSON-RPC line in both directions, so tests can assert on the wire and not
// only on what the SDK's helpers make of it (the SDK rewrites some failures,
// e.g. a failed task becomes a generic "Task X failed" -32603 error).

import { existsSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { setTimeout as delay } from 'node:timers/promises';
import assert from 'node:assert/strict';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { RELATED_TASK_META_KEY } from '@modelcontextprotocol/sdk/types.js';

export { RELATED_TASK_META_KEY };
export const MODEL_IMMEDIATE_RESPONSE_KEY = 'io.modelcontextprotocol/model-immediate-response';

const here = dirname(fileURLToPath(import.meta.url));
export const REPO_ROOT = resolve(here, '..', '..');

/** The server binary: $MCP_TASKS_BIN, else <repo>/target/debug/mcp-tasks. */
export function serverBinary() {
  return process.env.MCP_TASKS_BIN || resolve(REPO_ROOT, 'target', 'debug', 'mcp-tasks');
}

export const SERVER_ARGS = ['serve', '--stdio', '--store', 'memory'];

/**
 * An ordered log of raw JSON-RPC messages.
 * Each entry: { seq, dir: 'out' | 'in', t (ms since the log began), raw (the exact line), msg (JSON.parse(raw)) }.
 * 'out' is client -> server, 'in' is server -> client.
 */
export class WireLog {
  constructor() {
    this.entries = [];
    this.t0 = performance.now();
    this._waiters = [];
  }

  record(dir, raw) {
    let msg;
    try {
      msg = JSON.parse(raw);
    } catch (e) {
      msg = { __unparseable: String(e) };
    }
    const entry = { seq: this.entries.length, dir, t: performance.now() - this.t0, raw, msg };
    this.entries.push(entry);
    for (const w of [...this._waiters]) {
      if (w.pred(entry)) {
        this._waiters.splice(this._waiters.indexOf(w), 1);
        w.resolve(entry);
      }
    }
  }

  /** Requests sent by the client (optionally only for one method / matching a predicate). */
  sentRequests(method, pred = () => true) {
    return this.entries.filter(
      e => e.dir === 'out' && e.msg.id !== undefined && e.msg.method !== undefined && (!method || e.msg.method === method) && pred(e.msg)
    );
  }

  /** Requests sent by the server to the client. */
  receivedRequests(method, pred = () => true) {
    return this.entries.filter(
      e => e.dir === 'in' && e.msg.id !== undefined && e.msg.method !== undefined && (!method || e.msg.method === method) && pred(e.msg)
    );
  }

  /** Notifications received from the server. */
  receivedNotifications(method, pred = () => true) {
    return this.entries.filter(
      e => e.dir === 'in' && e.msg.id === undefined && e.msg.method !== undefined && (!method || e.msg.method === method) && pred(e.msg)
    );
  }

  /** The server's response (result or error) to the client's request with this id. */
  responseTo(id) {
    return this.entries.find(e => e.dir === 'in' && e.msg.method === undefined && e.msg.id === id);
  }

  /** The client's response to the server's request with this id. */
  replyTo(id) {
    return this.entries.find(e => e.dir === 'out' && e.msg.method === undefined && e.msg.id === id);
  }

  /** The last request the client sent for `method` (matching `pred`), with its response. */
  lastExchange(method, pred = () => true) {
    const reqs = this.sentRequests(method, pred);
    assertDefined(reqs.length > 0, `no ${method} request on the wire`, this);
    const request = reqs[reqs.length - 1];
    return { request, response: this.responseTo(request.msg.id) };
  }

  /** Wait until an entry matching pred is recorded (or was already). */
  waitFor(pred, timeoutMs = 5000, what = 'a wire message') {
    const existing = this.entries.find(pred);
    if (existing) return Promise.resolve(existing);
    return new Promise((resolveP, reject) => {
      const w = { pred, resolve: v => { clearTimeout(timer); resolveP(v); } };
      const timer = setTimeout(() => {
        this._waiters.splice(this._waiters.indexOf(w), 1);
        reject(new Error(`timed out after ${timeoutMs} ms waiting for ${what}\n${this.dump()}`));
      }, timeoutMs);
      this._waiters.push(w);
    });
  }

  /** Human-readable transcript, used in failure messages. */
  dump(last = 40) {
    const shown = this.entries.slice(-last);
    const lines = shown.map(e => `${String(e.seq).padStart(3)} ${e.t.toFixed(0).padStart(6)}ms ${e.dir === 'out' ? 'C->S' : 'S->C'} ${e.raw}`);
    const skipped = this.entries.length - shown.length;
    return `--- wire transcript${skipped ? ` (last ${last} of ${this.entries.length})` : ''} ---\n${lines.join('\n')}\n--- end ---`;
  }
}

function assertDefined(cond, message, wire) {
  if (!cond) throw new Error(`${message}\n${wire ? wire.dump() : ''}`);
}

/**
 * StdioClientTransport that records the exact bytes on the wire.
 * Outgoing: the exact line the SDK writes (it writes JSON.stringify(message) + '\n').
 * Incoming: the child's stdout split on '\n', independently of the SDK's own parsing
 * (the SDK validates every message with zod before handing it over).
 */
export class TappedStdioTransport extends StdioClientTransport {
  constructor(params, wire) {
    super(params);
    this.wire = wire;
    this._rawIn = '';
  }

  async start() {
    const started = super.start();
    // spawn() ran synchronously inside super.start(); attach before any data can arrive.
    const stdout = this._process?.stdout;
    if (stdout) {
      stdout.on('data', chunk => {
        this._rawIn += chunk.toString('utf8');
        let nl;
        while ((nl = this._rawIn.indexOf('\n')) !== -1) {
          const line = this._rawIn.slice(0, nl).replace(/\r$/, '');
          this._rawIn = this._rawIn.slice(nl + 1);
          if (line.trim() !== '') this.wire.record('in', line);
        }
      });
    }
    return started;
  }

  send(message, options) {
    this.wire.record('out', JSON.stringify(message));
    return super.send(message, options);
  }
}

/**
 * Start the server and connect an SDK client to it.
 * options.capabilities: client capabilities to declare.
 * options.handlers: [[RequestSchema, handler], ...] installed before connect.
 * Returns { client, transport, wire, stderr(), close() }.
 */
export async function connect({ capabilities = {}, handlers = [], name = 'mcp-tasks-interop' } = {}) {
  const bin = serverBinary();
  if (!existsSync(bin)) {
    throw new Error(`server binary not found at ${bin}: build it with \`cargo build -p mcp-tasks\` or set MCP_TASKS_BIN`);
  }
  const wire = new WireLog();
  const transport = new TappedStdioTransport(
    {
      command: bin,
      args: SERVER_ARGS,
      env: { ...process.env, RUST_LOG: process.env.RUST_LOG ?? 'warn' },
      stderr: 'pipe'
    },
    wire
  );
  let stderrText = '';
  transport.stderr?.on('data', chunk => {
    stderrText += chunk.toString('utf8');
    if (process.env.INTEROP_SERVER_STDERR) process.stderr.write(chunk);
  });
  const client = new Client({ name, version: '0.0.0' }, { capabilities });
  const errors = [];
  client.onerror = err => errors.push(err);
  for (const [schema, handler] of handlers) client.setRequestHandler(schema, handler);
  try {
    await client.connect(transport, { timeout: 10000 });
  } catch (e) {
    await transport.close().catch(() => {});
    e.message += `\n${wire.dump()}\n--- server stderr ---\n${stderrText.slice(-4000)}`;
    throw e;
  }
  return {
    client,
    transport,
    wire,
    errors,
    stderr: () => stderrText,
    async close() {
      await client.close().catch(() => {});
    }
  };
}

const PROGRESS_RACE = 'Received a progress notification for an unknown token: ';

/**
 * SDK 1.32.2 bug (modelcontextprotocol/typescript-sdk#2580, open): when a progress
 * notification and the response to its request are read in the same stdout chunk, the
 * SDK dispatches the notification in a microtask but handles the response synchronously,
 * dropping the progress handler first; it then reports the (valid, in-order) notification
 * as "unknown token". True only if the wire shows that notification *before* the response
 * to the request that carried the token, i.e. the server did nothing wrong.
 */
export function isSdkProgressRace(err, wire) {
  const msg = err?.message ?? '';
  if (!msg.startsWith(PROGRESS_RACE)) return false;
  let note;
  try {
    note = JSON.parse(msg.slice(PROGRESS_RACE.length));
  } catch {
    return false;
  }
  const token = note?.params?.progressToken;
  const request = wire.sentRequests(undefined, m => m.params?._meta?.progressToken === token)[0];
  if (!request) return false;
  const response = wire.responseTo(request.msg.id);
  const onWire = wire.receivedNotifications(
    'notifications/progress',
    m => m.params?.progressToken === token && m.params?.progress === note.params.progress
  )[0];
  return Boolean(response && onWire && onWire.seq < response.seq);
}

/** Append the wire transcript and the server's stderr to an error's message. */
export function annotate(e, session) {
  const extra = `\n${session.wire.dump()}\n--- server stderr (tail) ---\n${session.stderr().slice(-2000)}`;
  if (e && typeof e === 'object') {
    try {
      e.message = `${e.message}${extra}`;
    } catch {
      /* read-only message */
    }
  }
  return e;
}

/**
 * A node:test body that runs `fn(session, t)` against a fresh server process;
 * on failure the error carries the full wire transcript.
 */
export function withSession(opts, fn) {
  return async t => {
    const session = await connect(opts);
    const timeoutMs = opts.timeoutMs ?? Number(process.env.INTEROP_TEST_TIMEOUT_MS ?? 20000);
    let timer;
    const timeout = new Promise((_, reject) => {
      timer = setTimeout(() => reject(new Error(`test timed out after ${timeoutMs} ms (server stuck?)`)), timeoutMs);
    });
    try {
      await Promise.race([fn(session, t), timeout]);
      // Anything the SDK itself complained about (unknown response id, progress for an
      // unknown token, a message that failed its schema, ...) is a wire problem too.
      const errors = session.errors.filter(e => {
        if (isSdkProgressRace(e, session.wire)) {
          t.diagnostic?.(`ignored SDK issue typescript-sdk#2580 (progress dispatched after its response): ${e.message.slice(0, 200)}`);
          return false;
        }
        return true;
      });
      if (errors.length > 0) {
        throw new Error(`the SDK client reported errors:\n${errors.map(e => `  - ${e?.stack ?? e}`).join('\n')}`);
      }
    } catch (e) {
      throw annotate(e, session);
    } finally {
      clearTimeout(timer);
      await session.close();
    }
  };
}

/** Await a promise that must reject; returns the rejection reason. */
export async function rejection(promise, what = 'the request') {
  let value;
  try {
    value = await promise;
  } catch (e) {
    return e;
  }
  throw new Error(`${what} resolved but was expected to fail: ${JSON.stringify(value)}`);
}

export function isIsoTimestamp(s) {
  return typeof s === 'string' && /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/.test(s) && !Number.isNaN(Date.parse(s));
}

export { delay };

export const TERMINAL = new Set(['completed', 'failed', 'cancelled']);

/**
 * Poll tasks/get (through the SDK) until `pred(task)` holds, waiting the task's own
 * pollInterval between polls, as a well-behaved requestor does.
 */
export async function pollTask(client, taskId, pred = t => TERMINAL.has(t.status), { timeoutMs = 15000 } = {}) {
  const started = performance.now();
  for (;;) {
    const task = await client.experimental.tasks.getTask(taskId);
    if (pred(task)) return task;
    if (performance.now() - started > timeoutMs) {
      throw new Error(`task ${taskId} still ${task.status} after ${timeoutMs} ms of polling`);
    }
    await delay(task.pollInterval ?? 100);
  }
}

/** Drain an SDK response stream (callToolStream / requestStream) into an array. */
export async function drain(stream) {
  const messages = [];
  for await (const m of stream) messages.push(m);
  return messages;
}

const STATUSES = new Set(['working', 'input_required', 'completed', 'failed', 'cancelled']);

/** Assert that a raw wire object is a spec `Task` (schema 2025-11-25 #/$defs/Task). */
export function assertTask(task, where = 'task') {
  assert.equal(typeof task, 'object', `${where}: not an object`);
  assert.ok(typeof task.taskId === 'string' && task.taskId.length > 0, `${where}: taskId must be a non-empty string, got ${JSON.stringify(task.taskId)}`);
  assert.ok(STATUSES.has(task.status), `${where}: bad status ${JSON.stringify(task.status)}`);
  assert.ok(isIsoTimestamp(task.createdAt), `${where}: createdAt must be ISO 8601, got ${JSON.stringify(task.createdAt)}`);
  assert.ok(isIsoTimestamp(task.lastUpdatedAt), `${where}: lastUpdatedAt must be ISO 8601, got ${JSON.stringify(task.lastUpdatedAt)}`);
  assert.ok(Date.parse(task.lastUpdatedAt) >= Date.parse(task.createdAt), `${where}: lastUpdatedAt before createdAt`);
  assert.ok('ttl' in task, `${where}: ttl is required (null for unlimited), it is missing`);
  assert.ok(task.ttl === null || Number.isInteger(task.ttl), `${where}: ttl must be an integer or null, got ${JSON.stringify(task.ttl)}`);
  if (task.pollInterval !== undefined) {
    assert.ok(Number.isInteger(task.pollInterval) && task.pollInterval > 0, `${where}: pollInterval must be a positive integer, got ${JSON.stringify(task.pollInterval)}`);
  }
  if (task.statusMessage !== undefined) assert.equal(typeof task.statusMessage, 'string', `${where}: statusMessage`);
}

/** The related-task metadata of a raw message's result or params, if any. */
export function relatedTaskOf(obj) {
  return obj?._meta?.[RELATED_TASK_META_KEY];
}
