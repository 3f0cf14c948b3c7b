// Issue #4: tasks that need the requestor: elicitation and sampling relayed on tasks/result
// (input_required), and progress for the whole task lifetime, with the official
// TypeScript SDK client (1.32.2) answering as the client would.

import { describe, it } from 'node:test';
import assert from 'node:assert/strict';

import {
  CallToolResultSchema,
  CreateMessageRequestSchema,
  CreateTaskResultSchema,
  ElicitRequestSchema
} from '@modelcontextprotocol/sdk/types.js';

import { assertTask, delay, drain, pollTask, relatedTaskOf, withSession } from '../lib/harness.mjs';

const ANSWER_SCHEMA = { type: 'object', properties: { answer: { type: 'string' } }, required: ['answer'] };

/** A form-mode elicitation handler that gives `reply` and records the requests. */
function elicitor(seen, reply) {
  return async request => {
    seen.push(request);
    return typeof reply === 'function' ? reply(request) : reply;
  };
}

function fakeModel(seen, text) {
  return async request => {
    seen.push(request);
    return { role: 'assistant', content: { type: 'text', text }, model: 'interop-fake-model', stopReason: 'endTurn' };
  };
}

/**
 * The wire story of one input_required round trip for `taskId`:
 * the server's request (`method`) must carry related-task, arrive while a tasks/result
 * for the task is pending, after a tasks/get that showed input_required, and be
 * answered by the client with a normal JSON-RPC response.
 */
function assertRelayedOnTasksResult(wire, method, taskId) {
  const requests = wire.receivedRequests(method);
  assert.equal(requests.length, 1, `expected exactly one ${method} request, got ${requests.length}`);
  const [req] = requests;
  assert.deepEqual(
    relatedTaskOf(req.msg.params),
    { taskId },
    `${method} must carry _meta["io.modelcontextprotocol/related-task"] = {taskId: "${taskId}"}`
  );

  const reply = wire.replyTo(req.msg.id);
  assert.ok(reply, `the client never answered ${method} id ${JSON.stringify(req.msg.id)}`);
  assert.ok(reply.msg.result, `the client answered ${method} with an error: ${reply.raw}`);

  const shownInputRequired = wire
    .sentRequests('tasks/get', m => m.params.taskId === taskId)
    .map(r => wire.responseTo(r.msg.id))
    .find(r => r?.msg.result?.status === 'input_required');
  assert.ok(shownInputRequired, 'no tasks/get showed input_required');
  assert.ok(shownInputRequired.seq < reply.seq, 'tasks/get showed input_required only after the answer');

  const results = wire.sentRequests('tasks/result', m => m.params.taskId === taskId);
  const open = results.find(r => {
    const resp = wire.responseTo(r.msg.id);
    return r.seq < req.seq && (!resp || resp.seq > req.seq);
  });
  assert.ok(open, `${method} was not sent while a tasks/result for the task was pending`);
  return { request: req, reply, tasksResult: open };
}

describe('input_required and progress for tasks (issue #4)', () => {
  it(
    '`ask` as a task: elicitation/create on tasks/result, answered by the client',
    withSession(
      {
        capabilities: { elicitation: { form: {} } },
        handlers: [[ElicitRequestSchema, elicitor([], { action: 'accept', content: { answer: 'forty-two' } })]]
      },
      async ({ client, wire }) => {
        await client.listTools();
        // `ask` is required: the SDK's stream makes it a task by itself.
        const question = 'What is the answer to life, the universe and everything?';
        const messages = await drain(client.experimental.tasks.callToolStream({ name: 'ask', arguments: { question } }));
        assert.equal(messages[0].type, 'taskCreated', `stream: ${JSON.stringify(messages)}`);
        assert.equal(messages.at(-1).type, 'result', `stream ended with ${JSON.stringify(messages.at(-1))}`);
        const taskId = messages[0].task.taskId;
        const statuses = messages.filter(m => m.type === 'taskStatus').map(m => m.task.status);
        assert.equal(statuses.at(-1), 'input_required', `SDK saw statuses ${statuses}`);

        const call = wire.lastExchange('tools/call');
        assert.deepEqual(call.request.msg.params.task, {}, 'the SDK made the required tool a task');
        assert.equal(call.response.msg.result?.task?.taskId, taskId);

        const { request, reply, tasksResult } = assertRelayedOnTasksResult(wire, 'elicitation/create', taskId);
        const params = request.msg.params;
        assert.ok(params.mode === undefined || params.mode === 'form', `form mode expected, got mode ${JSON.stringify(params.mode)}`);
        assert.equal(params.message, question);
        assert.deepEqual(params.requestedSchema, ANSWER_SCHEMA);
        assert.deepEqual(reply.msg.result, { action: 'accept', content: { answer: 'forty-two' } });

        const final = wire.responseTo(tasksResult.msg.id).msg;
        assert.ok(final.result, `tasks/result failed: ${JSON.stringify(final)}`);
        assert.deepEqual(final.result.content, [{ type: 'text', text: 'forty-two' }]);
        assert.deepEqual(relatedTaskOf(final.result), { taskId });
        assert.deepEqual(messages.at(-1).result.content, [{ type: 'text', text: 'forty-two' }]);

        const after = await client.experimental.tasks.getTask(taskId);
        assert.equal(after.status, 'completed');
      }
    )
  );

  it(
    '`ask` declined and cancelled by the user gives "(decline)" / "(cancel)"',
    async () => {
      for (const action of ['decline', 'cancel']) {
        await withSession(
          { capabilities: { elicitation: { form: {} } }, handlers: [[ElicitRequestSchema, elicitor([], { action })]] },
          async ({ client, wire }) => {
            await client.listTools();
            const messages = await drain(client.experimental.tasks.callToolStream({ name: 'ask', arguments: { question: 'Proceed?' } }));
            assert.equal(messages.at(-1).type, 'result', `stream ended with ${JSON.stringify(messages.at(-1))}`);
            const taskId = messages[0].task.taskId;
            const { reply } = assertRelayedOnTasksResult(wire, 'elicitation/create', taskId);
            assert.deepEqual(reply.msg.result, { action });
            assert.deepEqual(messages.at(-1).result.content, [{ type: 'text', text: `(${action})` }]);
          }
        )();
      }
    }
  );

  it(
    '`ask` waits in input_required until the requestor calls tasks/result',
    withSession(
      {
        capabilities: { elicitation: {} },
        handlers: [[ElicitRequestSchema, elicitor([], r => ({ action: 'accept', content: { answer: `re: ${r.params.message}` } }))]]
      },
      async ({ client, wire }) => {
        const { task } = await client.request(
          { method: 'tools/call', params: { name: 'ask', arguments: { question: 'colour?' } } },
          CreateTaskResultSchema,
          { task: { ttl: 30000 } }
        );
        assertTask(task, 'CreateTaskResult.task');
        const waiting = await pollTask(client, task.taskId, t => t.status !== 'working');
        assert.equal(waiting.status, 'input_required');
        await delay(200);
        assert.equal((await client.experimental.tasks.getTask(task.taskId)).status, 'input_required');
        assert.equal(wire.receivedRequests('elicitation/create').length, 0, 'elicitation/create sent before any tasks/result was pending');

        const result = await client.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema);
        assert.deepEqual(result.content, [{ type: 'text', text: 're: colour?' }]);
        assertRelayedOnTasksResult(wire, 'elicitation/create', task.taskId);
        assert.equal((await client.experimental.tasks.getTask(task.taskId)).status, 'completed');
      }
    )
  );

  const sampled = [];
  it(
    '`summarize` as a task: sampling/createMessage on tasks/result, answered by the client',
    withSession(
      { capabilities: { sampling: {} }, handlers: [[CreateMessageRequestSchema, fakeModel(sampled, 'Tasks make long calls pollable.')]] },
      async ({ client, wire }) => {
        await client.listTools();
        const text = 'Tasks let a requestor start a long-running request, poll its status, and fetch its result later.';
        const messages = await drain(
          client.experimental.tasks.callToolStream({ name: 'summarize', arguments: { text } }, CallToolResultSchema, { task: {} })
        );
        assert.equal(messages[0].type, 'taskCreated', `stream: ${JSON.stringify(messages)}`);
        assert.equal(messages.at(-1).type, 'result', `stream ended with ${JSON.stringify(messages.at(-1))}`);
        const taskId = messages[0].task.taskId;
        assert.equal(sampled.length, 1);

        const { request, reply, tasksResult } = assertRelayedOnTasksResult(wire, 'sampling/createMessage', taskId);
        const params = request.msg.params;
        assert.equal(params.maxTokens, 200);
        assert.equal(params.messages.length, 1);
        assert.equal(params.messages[0].role, 'user');
        assert.equal(params.messages[0].content.type, 'text');
        assert.ok(params.messages[0].content.text.includes(text), 'the sampling prompt should contain the text to summarize');
        assert.equal(reply.msg.result.model, 'interop-fake-model');

        const final = wire.responseTo(tasksResult.msg.id).msg;
        assert.ok(final.result, `tasks/result failed: ${JSON.stringify(final)}`);
        assert.deepEqual(final.result.content, [{ type: 'text', text: 'Tasks make long calls pollable.' }]);
        assert.deepEqual(relatedTaskOf(final.result), { taskId });
      }
    )
  );

  it(
    '`progress` as a task: every notification carries the original progressToken, after CreateTaskResult too',
    withSession({}, async ({ client, wire }) => {
      const seen = [];
      const { task } = await client.request(
        { method: 'tools/call', params: { name: 'progress', arguments: { steps: 4, ms: 60 } } },
        CreateTaskResultSchema,
        { task: {}, onprogress: p => seen.push(p) }
      );
      const taskId = task.taskId;
      const result = await client.experimental.tasks.getTaskResult(taskId, CallToolResultSchema);
      assert.deepEqual(result.content, [{ type: 'text', text: 'done 4' }]);

      const created = wire.sentRequests('tools/call').at(-1);
      const token = created.msg.params._meta?.progressToken;
      assert.notEqual(token, undefined, 'the SDK put a progressToken on the request');
      const createdResponse = wire.responseTo(created.msg.id);
      const finalResponse = wire.lastExchange('tasks/result').response;

      const notes = wire.receivedNotifications('notifications/progress');
      assert.deepEqual(
        notes.map(n => [n.msg.params.progress, n.msg.params.total]),
        [
          [1, 4],
          [2, 4],
          [3, 4],
          [4, 4]
        ]
      );
      for (const n of notes) {
        assert.deepEqual(n.msg.params.progressToken, token, `progressToken changed: ${n.raw}`);
        assert.ok(n.seq > createdResponse.seq, 'progress of this task came before CreateTaskResult');
        assert.ok(n.seq < finalResponse.seq, 'progress must precede the final result');
        assert.deepEqual(relatedTaskOf(n.msg.params), { taskId }, `progress notification without related-task _meta: ${n.raw}`);
      }
      // The SDK routed them to onprogress although the tools/call itself was answered long before.
      assert.deepEqual(
        seen.map(p => [p.progress, p.total]),
        [
          [1, 4],
          [2, 4],
          [3, 4],
          [4, 4]
        ]
      );
    })
  );
});
