// Issue #3: task-augmented tools/call through the official TypeScript SDK client (1.32.2):
// lifecycle, polling, blocking tasks/result, cancellation, failures, listing.

import { describe, it } from 'node:test';
import assert from 'node:assert/strict';

import { CallToolResultSchema, CreateTaskResultSchema, ErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js';

import {
  MODEL_IMMEDIATE_RESPONSE_KEY,
  assertTask,
  delay,
  drain,
  pollTask,
  rejection,
  relatedTaskOf,
  withSession
} from '../lib/harness.mjs';

/** Task-augmented tools/call through the SDK's request-level `task` option. */
function createTask(client, name, args, task = {}) {
  return client.request({ method: 'tools/call', params: { name, arguments: args } }, CreateTaskResultSchema, { task });
}

/** The raw tools/call exchange that created `taskId`. */
function creationOf(wire, taskId) {
  const req = wire
    .sentRequests('tools/call')
    .find(r => wire.responseTo(r.msg.id)?.msg.result?.task?.taskId === taskId);
  assert.ok(req, `no tools/call on the wire created task ${taskId}`);
  return { request: req, response: wire.responseTo(req.msg.id) };
}

/** All raw tasks/<method> exchanges about `taskId`, in wire order. */
function exchanges(wire, method, taskId) {
  return wire
    .sentRequests(method, m => m.params?.taskId === taskId)
    .map(request => ({ request, response: wire.responseTo(request.msg.id) }));
}

const CANCELLED_RESULT_CODE = -32001;

describe('tasks (issue #3)', () => {
  it(
    'polled lifecycle of `sleep` as a task: CreateTaskResult, tasks/get honouring pollInterval, tasks/result with related-task',
    withSession({}, async ({ client, wire }) => {
      await client.listTools();
      const messages = await drain(
        client.experimental.tasks.callToolStream({ name: 'sleep', arguments: { ms: 400 } }, CallToolResultSchema, { task: { ttl: 60000 } })
      );
      const types = messages.map(m => m.type);
      assert.equal(types[0], 'taskCreated', `stream: ${JSON.stringify(messages)}`);
      assert.equal(types.at(-1), 'result', `stream ended with ${JSON.stringify(messages.at(-1))}`);
      const taskId = messages[0].task.taskId;

      // CreateTaskResult on the wire.
      const created = creationOf(wire, taskId);
      assert.deepEqual(created.request.msg.params.task, { ttl: 60000 }, 'the SDK sends params.task');
      const createResult = created.response.msg.result;
      assertTask(createResult.task, 'CreateTaskResult.task');
      assert.equal(createResult.task.status, 'working');
      assert.equal(createResult.task.createdAt, createResult.task.lastUpdatedAt, 'a new task was last updated when it was created');
      assert.ok(Number.isInteger(createResult.task.pollInterval), 'pollInterval should be offered');
      assert.equal(typeof createResult._meta?.[MODEL_IMMEDIATE_RESPONSE_KEY], 'string', `_meta["${MODEL_IMMEDIATE_RESPONSE_KEY}"] must be a string`);
      assert.equal(createResult.content, undefined, 'CreateTaskResult carries the task, not the tool result');
      assert.equal(relatedTaskOf(createResult), undefined, 'CreateTaskResult has the taskId in task, no related-task _meta');

      // tasks/get polling, honouring pollInterval.
      const gets = exchanges(wire, 'tasks/get', taskId);
      assert.ok(gets.length >= 2, `expected the SDK to poll more than once for a 400 ms task, got ${gets.length}`);
      assert.equal(gets[0].response.msg.result.status, 'working', 'the first poll (right after creation) sees working');
      assert.equal(gets.at(-1).response.msg.result.status, 'completed');
      for (const [i, g] of gets.entries()) {
        const t = g.response.msg.result;
        assert.ok(t, `tasks/get #${i} failed: ${g.response.raw}`);
        assertTask(t, `tasks/get #${i}`);
        assert.equal(t.taskId, taskId);
        assert.equal(t.createdAt, createResult.task.createdAt, 'createdAt must not change between reads');
        assert.deepEqual(t.ttl, createResult.task.ttl, 'ttl must not change between reads');
        assert.ok(['working', 'completed'].includes(t.status), `unexpected status ${t.status}`);
        assert.equal(relatedTaskOf(t), undefined, 'tasks/get result SHOULD NOT carry related-task _meta');
        // SDK 1.32.2 quirk: callToolStream hands its options (with `task`) on to tasks/get and
        // tasks/result, so they go out with a stray `params.task: {}`. The receiver must answer
        // them as what they are (a Task), not as task-augmented requests.
        assert.equal(t.task, undefined, `tasks/get answered like a task-augmented request: ${g.response.raw}`);
        if (i > 0) {
          const prev = gets[i - 1];
          const waited = g.request.t - prev.response.t;
          const interval = prev.response.msg.result.pollInterval;
          assert.ok(waited >= interval - 5, `poll #${i} came ${waited.toFixed(0)} ms after the previous answer, pollInterval was ${interval}`);
          assert.ok(Date.parse(t.lastUpdatedAt) >= Date.parse(prev.response.msg.result.lastUpdatedAt), 'lastUpdatedAt went backwards');
        }
      }

      // tasks/result: the exact CallToolResult plus related-task _meta.
      const [res] = exchanges(wire, 'tasks/result', taskId);
      assert.ok(res, 'the SDK should have fetched the result with tasks/result');
      const payload = res.response.msg.result;
      assert.ok(payload, `tasks/result failed: ${res.response.raw}`);
      assert.deepEqual(payload.content, [{ type: 'text', text: 'slept 400' }]);
      assert.ok(!payload.isError);
      assert.deepEqual(relatedTaskOf(payload), { taskId }, 'tasks/result MUST carry _meta related-task {taskId}');
      assert.equal(payload.task, undefined);
      assert.deepEqual(messages.at(-1).result.content, [{ type: 'text', text: 'slept 400' }]);

      // Fetching the result again gives the same result (it is not consumed).
      const again = await client.experimental.tasks.getTaskResult(taskId, CallToolResultSchema);
      assert.deepEqual(again.content, payload.content);
      assert.deepEqual(exchanges(wire, 'tasks/result', taskId).at(-1).response.msg.result, payload);

      // The receiver announced the completion (notifications/tasks/status).
      const status = wire.receivedNotifications('notifications/tasks/status', m => m.params?.taskId === taskId);
      assert.ok(status.some(n => n.msg.params.status === 'completed'), 'expected a notifications/tasks/status with status completed');
      for (const n of status) {
        assertTask(n.msg.params, 'notifications/tasks/status params');
        assert.equal(relatedTaskOf(n.msg.params), undefined, 'notifications/tasks/status SHOULD NOT carry related-task _meta');
      }
    })
  );

  it(
    'tasks/result blocks until the task is terminal',
    withSession({}, async ({ client, wire }) => {
      const t0 = performance.now();
      const { task } = await createTask(client, 'sleep', { ms: 500 });
      assert.equal(task.status, 'working');
      const result = await client.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema);
      const elapsed = performance.now() - t0;
      assert.deepEqual(result.content, [{ type: 'text', text: 'slept 500' }]);
      assert.ok(elapsed >= 450, `tasks/result answered after ${elapsed.toFixed(0)} ms, before the 500 ms task could finish`);
      const [res] = exchanges(wire, 'tasks/result', task.taskId);
      assert.deepEqual(relatedTaskOf(res.response.msg.result), { taskId: task.taskId });
      const after = await client.experimental.tasks.getTask(task.taskId);
      assert.equal(after.status, 'completed');
    })
  );

  it(
    'cancelled `sleep`: tasks/cancel -> cancelled, stays cancelled, tasks/result is an error',
    withSession({}, async ({ client, wire }) => {
      const { task } = await createTask(client, 'sleep', { ms: 20000 });
      const taskId = task.taskId;
      // A requestor already blocked on tasks/result...
      const pending = rejection(client.experimental.tasks.getTaskResult(taskId, CallToolResultSchema), 'tasks/result of a cancelled task');
      await delay(100);
      const t0 = performance.now();
      const cancelled = await client.experimental.tasks.cancelTask(taskId);
      assert.equal(cancelled.status, 'cancelled');
      const [c] = exchanges(wire, 'tasks/cancel', taskId);
      const cancelResult = c.response.msg.result;
      assert.ok(cancelResult, `tasks/cancel failed: ${c.response.raw}`);
      assertTask(cancelResult, 'tasks/cancel result');
      assert.equal(cancelResult.taskId, taskId);
      assert.equal(cancelResult.status, 'cancelled');
      assert.equal(cancelResult.createdAt, task.createdAt);
      assert.equal(relatedTaskOf(cancelResult), undefined, 'tasks/cancel result SHOULD NOT carry related-task _meta');

      // ...is released with the cancellation error, long before the sleep would have ended.
      const err = await pending;
      assert.ok(performance.now() - t0 < 3000, 'the blocked tasks/result was not released promptly by the cancel');
      assert.ok(err instanceof McpError, `expected McpError, got ${err}`);
      const [blocked] = exchanges(wire, 'tasks/result', taskId);
      assert.equal(blocked.response.msg.result, undefined, `tasks/result of a cancelled task must be an error: ${blocked.response.raw}`);
      assert.equal(blocked.response.msg.error.code, CANCELLED_RESULT_CODE);
      assert.equal(typeof blocked.response.msg.error.message, 'string');

      // Still cancelled later (a late completion of the work must not flip it).
      assert.equal((await client.experimental.tasks.getTask(taskId)).status, 'cancelled');
      await delay(300);
      const later = await client.experimental.tasks.getTask(taskId);
      assert.equal(later.status, 'cancelled');
      assert.equal(later.createdAt, task.createdAt);

      // A fresh tasks/result gives the same error.
      const err2 = await rejection(client.experimental.tasks.getTaskResult(taskId, CallToolResultSchema), 'tasks/result');
      assert.equal(err2.code, CANCELLED_RESULT_CODE);
      assert.deepEqual(exchanges(wire, 'tasks/result', taskId).at(-1).response.msg.error, blocked.response.msg.error);

      // Cancelling again: the task is terminal -> -32602.
      const err3 = await rejection(client.experimental.tasks.cancelTask(taskId), 'second tasks/cancel');
      assert.equal(err3.code, ErrorCode.InvalidParams);
      assert.equal(exchanges(wire, 'tasks/cancel', taskId).at(-1).response.msg.error?.code, -32602);
    })
  );

  it(
    'failed `error` task: raw tasks/result error has the tool\'s code and message',
    withSession({}, async ({ client, wire }) => {
      await client.listTools();
      // The SDK's own stream only reports a generic failure for a failed task...
      const messages = await drain(
        client.experimental.tasks.callToolStream({ name: 'error', arguments: { message: 'boom', code: -32050 } }, CallToolResultSchema, { task: {} })
      );
      assert.equal(messages[0].type, 'taskCreated');
      assert.equal(messages.at(-1).type, 'error', `stream: ${JSON.stringify(messages)}`);
      const taskId = messages[0].task.taskId;
      assert.equal(exchanges(wire, 'tasks/get', taskId).at(-1).response.msg.result.status, 'failed');

      // ...so fetch the result and look at the wire: it is the tool's JSON-RPC error, exactly.
      const err = await rejection(client.experimental.tasks.getTaskResult(taskId, CallToolResultSchema), 'tasks/result of a failed task');
      assert.ok(err instanceof McpError);
      assert.equal(err.code, -32050);
      const [res] = exchanges(wire, 'tasks/result', taskId);
      const raw = res.response.msg;
      assert.equal(raw.result, undefined, `expected a JSON-RPC error, got ${res.response.raw}`);
      assert.equal(raw.error.code, -32050);
      assert.equal(raw.error.message, 'boom');
      // The same error as the plain call gives.
      const plain = await rejection(client.callTool({ name: 'error', arguments: { message: 'boom', code: -32050 } }), 'plain error');
      assert.equal(plain.code, -32050);
      const plainRaw = wire.lastExchange('tools/call', m => !m.params.task).response.msg.error;
      assert.deepEqual(raw.error, plainRaw, 'tasks/result must return exactly what the plain call returns');
    })
  );

  it(
    'failed `fail` task (isError): task failed, tasks/result is the unchanged CallToolResult',
    withSession({}, async ({ client, wire }) => {
      const { task } = await createTask(client, 'fail', { message: 'nope' });
      const final = await pollTask(client, task.taskId);
      assert.equal(final.status, 'failed');
      const result = await client.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema);
      assert.equal(result.isError, true);
      const [res] = exchanges(wire, 'tasks/result', task.taskId);
      const payload = res.response.msg.result;
      assert.ok(payload, `tasks/result of an isError task must be a result: ${res.response.raw}`);
      assert.equal(payload.isError, true);
      assert.deepEqual(payload.content, [{ type: 'text', text: 'nope' }]);
      assert.deepEqual(relatedTaskOf(payload), { taskId: task.taskId });
    })
  );

  it(
    'tasks/list contains the created tasks',
    withSession({}, async ({ client, wire }) => {
      const a = (await createTask(client, 'sleep', { ms: 10 })).task;
      const b = (await createTask(client, 'sleep', { ms: 10000 })).task;
      const c = (await createTask(client, 'fail', { message: 'x' })).task;
      await client.experimental.tasks.getTaskResult(a.taskId, CallToolResultSchema);
      await client.experimental.tasks.cancelTask(b.taskId);
      await pollTask(client, c.taskId);

      const listed = [];
      let cursor;
      for (let page = 0; page < 50; page++) {
        const r = await client.experimental.tasks.listTasks(cursor);
        listed.push(...r.tasks);
        cursor = r.nextCursor;
        if (!cursor) break;
      }
      const byId = new Map(listed.map(t => [t.taskId, t]));
      for (const [t, status] of [
        [a, 'completed'],
        [b, 'cancelled'],
        [c, 'failed']
      ]) {
        const l = byId.get(t.taskId);
        assert.ok(l, `task ${t.taskId} missing from tasks/list`);
        assert.equal(l.status, status);
        assert.equal(l.createdAt, t.createdAt);
      }
      for (const { response } of wire.sentRequests('tasks/list').map(r => ({ response: wire.responseTo(r.msg.id) }))) {
        const result = response.msg.result;
        assert.ok(Array.isArray(result?.tasks), `tasks/list failed: ${response.raw}`);
        result.tasks.forEach((t, i) => assertTask(t, `tasks/list tasks[${i}]`));
        assert.equal(relatedTaskOf(result), undefined, 'tasks/list result SHOULD NOT carry related-task _meta');
      }
    })
  );

  it(
    'cancel of a completed task is -32602 and leaves it completed',
    withSession({}, async ({ client, wire }) => {
      const { task } = await createTask(client, 'sleep', { ms: 10 });
      await client.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema);
      const err = await rejection(client.experimental.tasks.cancelTask(task.taskId), 'tasks/cancel of a completed task');
      assert.equal(err.code, ErrorCode.InvalidParams);
      const [c] = exchanges(wire, 'tasks/cancel', task.taskId);
      assert.equal(c.response.msg.result, undefined, `expected an error: ${c.response.raw}`);
      assert.equal(c.response.msg.error.code, -32602);
      assert.equal((await client.experimental.tasks.getTask(task.taskId)).status, 'completed');
      const result = await client.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema);
      assert.deepEqual(result.content, [{ type: 'text', text: 'slept 10' }]);
    })
  );

  it(
    'protocol errors: task call of `echo` is -32601; unknown taskId is -32602',
    withSession({}, async ({ client, wire }) => {
      const err = await rejection(createTask(client, 'echo', { text: 'hi' }), 'task-augmented tools/call echo');
      assert.equal(err.code, ErrorCode.MethodNotFound);
      assert.equal(wire.lastExchange('tools/call').response.msg.error?.code, -32601);

      const bogus = '00000000-0000-4000-8000-000000000000';
      for (const [what, call] of [
        ['tasks/get', () => client.experimental.tasks.getTask(bogus)],
        ['tasks/result', () => client.experimental.tasks.getTaskResult(bogus, CallToolResultSchema)],
        ['tasks/cancel', () => client.experimental.tasks.cancelTask(bogus)]
      ]) {
        const e = await rejection(call(), `${what} of an unknown task`);
        assert.equal(e.code, ErrorCode.InvalidParams, `${what}: ${e.message}`);
        assert.equal(wire.lastExchange(what).response.msg.error?.code, -32602, what);
      }
    })
  );
});
