// Issue #10: a stdio upstream killed mid-call, seen by the official TypeScript SDK
// 1.32.2 client through the gateway: the task fails with a clear statusMessage, new calls
// get -32603 "upstream unavailable" while it restarts, stored tasks stay readable, and
// the restarted upstream serves again.

import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { CallToolResultSchema, CreateTaskResultSchema } from '@modelcontextprotocol/sdk/types.js';

import { REPO_ROOT, TappedStdioTransport, WireLog, annotate, delay, pollTask, serverBinary } from '../lib/harness.mjs';

const FAKE = resolve(REPO_ROOT, 'crates', 'cli', 'tests', 'it', 'gateway_fixtures', 'fake_upstream.mjs');

describe('gateway: a stdio upstream killed mid-call (issue #10)', () => {
  it('fails the task, refuses calls while down, keeps tasks readable, comes back', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'mcp-tasks-gateway-kill-'));
    const pidfile = join(dir, 'pid');
    const wire = new WireLog();
    const transport = new TappedStdioTransport(
      {
        command: serverBinary(),
        args: ['serve', '--stdio', '--store', 'memory', '--upstream-cmd', `node ${FAKE}`, '--upstream-env', `FAKE_PIDFILE=${pidfile}`],
        env: { ...process.env, RUST_LOG: process.env.RUST_LOG ?? 'warn' },
        stderr: 'pipe'
      },
      wire
    );
    let stderr = '';
    transport.stderr?.on('data', c => (stderr += c));
    const client = new Client({ name: 'gateway-kill', version: '0.0.0' }, { capabilities: {} });
    await client.connect(transport, { timeout: 20000 });
    const s = { wire, stderr: () => stderr };
    try {
      const done = await client.request(
        { method: 'tools/call', params: { name: 'echo', arguments: { text: 'kept' } } },
        CreateTaskResultSchema,
        { task: {} }
      );
      await pollTask(client, done.task.taskId);
      const { task } = await client.request(
        { method: 'tools/call', params: { name: 'slow', arguments: { ms: 60000 } } },
        CreateTaskResultSchema,
        { task: {} }
      );
      await delay(200);
      process.kill(Number(readFileSync(pidfile, 'utf8')), 'SIGKILL');
      const failed = await pollTask(client, task.taskId);
      assert.equal(failed.status, 'failed');
      assert.match(failed.statusMessage, /upstream unavailable: the upstream process was killed by signal 9/);

      await assert.rejects(
        client.callTool({ name: 'echo', arguments: { text: 'x' } }),
        e => e.code === -32603 && /upstream unavailable/.test(e.message)
      );
      const kept = await client.experimental.tasks.getTaskResult(done.task.taskId, CallToolResultSchema);
      assert.deepEqual(kept.content, [{ type: 'text', text: 'kept' }]);

      let back;
      for (let i = 0; i < 100 && !back; i++) {
        await delay(100);
        back = await client.callTool({ name: 'echo', arguments: { text: 'back' } }).catch(() => undefined);
      }
      assert.deepEqual(back?.content, [{ type: 'text', text: 'back' }]);
    } catch (e) {
      throw annotate(e, s);
    } finally {
      await client.close().catch(() => {});
    }
  });
});
