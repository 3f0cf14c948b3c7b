// Issue #2: the official TypeScript SDK client (1.32.2) against `mcp-tasks serve --stdio`,
// plain (non-task) requests.

import { describe, it } from 'node:test';
import assert from 'node:assert/strict';

import {
  CallToolResultSchema,
  CreateMessageRequestSchema,
  ErrorCode,
  LATEST_PROTOCOL_VERSION,
  McpError
} from '@modelcontextprotocol/sdk/types.js';

import { RELATED_TASK_META_KEY, isSdkProgressRace, rejection, withSession } from '../lib/harness.mjs';

const EXPECTED_TOOLS = {
  sleep: 'optional',
  fail: 'optional',
  error: 'optional',
  ask: 'required',
  summarize: 'optional',
  progress: 'optional',
  echo: undefined // no `execution` field at all
};

const textOf = result => {
  assert.ok(Array.isArray(result.content), `content must be an array, got ${JSON.stringify(result)}`);
  assert.equal(result.content.length, 1, `expected exactly one content block, got ${JSON.stringify(result.content)}`);
  assert.equal(result.content[0].type, 'text');
  return result.content[0].text;
};

/** A sampling handler that answers like a tiny fake model and records what it was asked. */
function fakeModel(seen, text = 'A one-line summary from the interop client.') {
  return async request => {
    seen.push(request);
    return { role: 'assistant', content: { type: 'text', text }, model: 'interop-fake-model', stopReason: 'endTurn' };
  };
}

describe('plain requests (issue #2)', () => {
  it(
    'initialize negotiates 2025-11-25 and advertises the tasks capability',
    withSession({}, async ({ client, wire }) => {
      const { request, response } = wire.lastExchange('initialize');
      assert.equal(request.msg.params.protocolVersion, LATEST_PROTOCOL_VERSION);
      assert.equal(LATEST_PROTOCOL_VERSION, '2025-11-25');
      assert.ok(response, 'initialize got no response');
      assert.equal(response.msg.error, undefined, `initialize failed: ${response.raw}`);
      const result = response.msg.result;
      assert.equal(result.protocolVersion, '2025-11-25');
      assert.equal(typeof result.serverInfo?.name, 'string');
      assert.equal(typeof result.serverInfo?.version, 'string');
      assert.ok(result.capabilities?.tools, 'capabilities.tools must be declared');
      assert.deepEqual(result.capabilities.tasks, { list: {}, cancel: {}, requests: { tools: { call: {} } } });
      // The SDK accepted it and sent notifications/initialized.
      assert.deepEqual(client.getServerCapabilities().tasks, result.capabilities.tasks);
      assert.ok(
        wire.entries.some(e => e.dir === 'out' && e.msg.method === 'notifications/initialized'),
        'SDK should have sent notifications/initialized'
      );
      // The connection still works after initialization.
      await client.ping();
    })
  );

  it(
    'tools/list shows the 7 demo tools with their execution.taskSupport',
    withSession({}, async ({ client, wire }) => {
      const listed = await client.listTools();
      const raw = wire.lastExchange('tools/list').response.msg.result.tools;
      assert.deepEqual(raw.map(t => t.name).sort(), Object.keys(EXPECTED_TOOLS).sort());
      assert.deepEqual(listed.tools.map(t => t.name).sort(), Object.keys(EXPECTED_TOOLS).sort());
      for (const tool of raw) {
        assert.equal(tool.inputSchema?.type, 'object', `${tool.name}: inputSchema.type must be "object"`);
        const expected = EXPECTED_TOOLS[tool.name];
        if (expected === undefined) {
          assert.ok(!('execution' in tool), `${tool.name} must have no execution field on the wire, got ${JSON.stringify(tool.execution)}`);
        } else {
          assert.equal(tool.execution?.taskSupport, expected, `${tool.name}: execution.taskSupport`);
        }
      }
      // The SDK derived its task bookkeeping from it.
      assert.equal(client.isToolTaskRequired('ask'), true);
      assert.equal(client.isToolTask('sleep'), true);
      assert.equal(client.isToolTask('echo'), false);
    })
  );

  it(
    'sleep returns "slept <ms>"',
    withSession({}, async ({ client, wire }) => {
      const started = performance.now();
      const result = await client.callTool({ name: 'sleep', arguments: { ms: 120 } });
      const elapsed = performance.now() - started;
      assert.equal(textOf(result), 'slept 120');
      assert.ok(!result.isError);
      assert.ok(elapsed >= 100, `sleep 120 returned after only ${elapsed.toFixed(0)} ms`);
      const raw = wire.lastExchange('tools/call').response.msg;
      assert.equal(raw.error, undefined);
      assert.equal(raw.result.task, undefined, 'a plain call must not create a task');
      assert.deepEqual(raw.result.content, [{ type: 'text', text: 'slept 120' }]);
    })
  );

  it(
    'fail returns an isError result carrying the message',
    withSession({}, async ({ client, wire }) => {
      const result = await client.callTool({ name: 'fail', arguments: { message: 'it went wrong' } });
      assert.equal(result.isError, true);
      assert.equal(textOf(result), 'it went wrong');
      const raw = wire.lastExchange('tools/call').response.msg;
      assert.equal(raw.error, undefined, 'fail is a tool error (isError), not a JSON-RPC error');
      assert.equal(raw.result.isError, true);
      assert.deepEqual(raw.result.content, [{ type: 'text', text: 'it went wrong' }]);
    })
  );

  it(
    'error fails with the JSON-RPC error the tool raised (code and message)',
    withSession({}, async ({ client, wire }) => {
      const err = await rejection(client.callTool({ name: 'error', arguments: { message: 'boom', code: -32050 } }), 'tools/call error');
      assert.ok(err instanceof McpError, `expected McpError, got ${err}`);
      assert.equal(err.code, -32050);
      const raw = wire.lastExchange('tools/call').response.msg;
      assert.equal(raw.result, undefined, `expected a JSON-RPC error, got ${JSON.stringify(raw)}`);
      assert.equal(raw.error.code, -32050);
      assert.equal(raw.error.message, 'boom');

      // Without `code` the tool fails with -32603.
      const err2 = await rejection(client.callTool({ name: 'error', arguments: { message: 'default code' } }), 'tools/call error');
      assert.equal(err2.code, ErrorCode.InternalError);
      const raw2 = wire.lastExchange('tools/call').response.msg;
      assert.deepEqual({ code: raw2.error?.code, message: raw2.error?.message }, { code: -32603, message: 'default code' });
    })
  );

  const sampled = [];
  it(
    "summarize is answered by the client's sampling handler",
    withSession(
      { capabilities: { sampling: {} }, handlers: [[CreateMessageRequestSchema, fakeModel(sampled)]] },
      async ({ client, wire }) => {
        const text = 'The quick brown fox jumps over the lazy dog, again and again, until the dog finally gets up.';
        const result = await client.callTool({ name: 'summarize', arguments: { text } });
        assert.ok(!result.isError, `summarize failed: ${JSON.stringify(result)}`);
        assert.equal(textOf(result), 'A one-line summary from the interop client.');
        assert.equal(sampled.length, 1, 'the sampling handler must be called exactly once');

        const [req] = wire.receivedRequests('sampling/createMessage');
        assert.ok(req, 'no sampling/createMessage request on the wire');
        const params = req.msg.params;
        assert.equal(params.maxTokens, 200);
        assert.equal(params.messages.length, 1);
        assert.equal(params.messages[0].role, 'user');
        assert.equal(params.messages[0].content.type, 'text');
        assert.ok(params.messages[0].content.text.includes(text), 'the sampling prompt should contain the text to summarize');
        assert.equal(params._meta?.[RELATED_TASK_META_KEY], undefined, 'a plain call has no related task');
        // Our answer went back as a normal JSON-RPC response, and before the tool result.
        const reply = wire.replyTo(req.msg.id);
        assert.ok(reply?.msg.result, `client reply missing: ${reply?.raw}`);
        const toolResponse = wire.lastExchange('tools/call').response;
        assert.ok(reply.seq < toolResponse.seq);
      }
    )
  );

  it(
    'progress: onprogress receives each step, every notification carries the progressToken',
    withSession({}, async ({ client, wire, errors }) => {
      const seen = [];
      const result = await client.callTool({ name: 'progress', arguments: { steps: 3, ms: 30 } }, CallToolResultSchema, {
        onprogress: p => seen.push(p)
      });
      assert.equal(textOf(result), 'done 3');
      const { request, response } = wire.lastExchange('tools/call');
      const token = request.msg.params._meta.progressToken;
      assert.notEqual(token, undefined);
      const notes = wire.receivedNotifications('notifications/progress');
      const expected = [
        [1, 3],
        [2, 3],
        [3, 3]
      ];
      assert.deepEqual(
        notes.map(n => [n.msg.params.progress, n.msg.params.total]),
        expected
      );
      for (const n of notes) {
        assert.deepEqual(n.msg.params.progressToken, token);
        assert.ok(n.seq < response.seq, 'progress for a plain request must precede its response');
      }
      // onprogress got every step, except that SDK 1.32.2 can drop the last one when it is read
      // in the same chunk as the response (typescript-sdk#2580; checked on the wire in withSession).
      const got = seen.map(p => [p.progress, p.total]);
      assert.ok(got.length >= expected.length - 1, `onprogress got only ${JSON.stringify(got)}`);
      assert.deepEqual(got, expected.slice(0, got.length));
      if (got.length < expected.length) {
        assert.ok(errors.some(e => isSdkProgressRace(e, wire)), 'a progress step was lost without the SDK race explaining it');
      }
    })
  );

  it(
    'echo returns its text',
    withSession({}, async ({ client, wire }) => {
      const result = await client.callTool({ name: 'echo', arguments: { text: 'héllo, wörld ✓' } });
      assert.equal(textOf(result), 'héllo, wörld ✓');
      assert.deepEqual(wire.lastExchange('tools/call').response.msg.result.content, [{ type: 'text', text: 'héllo, wörld ✓' }]);
    })
  );

  it(
    'a plain tools/call of the task-required tool `ask` is -32601 on the wire',
    withSession({ capabilities: { elicitation: { form: {} } } }, async ({ client, wire }) => {
      await client.listTools();
      // The SDK itself refuses (locally, nothing sent) once it knows `ask` is required...
      const before = wire.entries.length;
      const local = await rejection(client.callTool({ name: 'ask', arguments: { question: 'why?' } }), 'SDK callTool(ask)');
      assert.equal(local.code, ErrorCode.InvalidRequest);
      assert.equal(wire.sentRequests('tools/call').length, 0, 'the SDK guard must not have sent anything');
      assert.equal(wire.entries.length, before);
      // ...so send the raw request as a misbehaving client would.
      const err = await rejection(
        client.request({ method: 'tools/call', params: { name: 'ask', arguments: { question: 'why?' } } }, CallToolResultSchema),
        'plain tools/call ask'
      );
      assert.equal(err.code, ErrorCode.MethodNotFound);
      const raw = wire.lastExchange('tools/call').response.msg;
      assert.equal(raw.result, undefined, `expected a JSON-RPC error, got ${JSON.stringify(raw)}`);
      assert.equal(raw.error.code, -32601);
      assert.equal(typeof raw.error.message, 'string');
      assert.equal(wire.receivedRequests('elicitation/create').length, 0, 'the tool must not have run');
    })
  );
});
