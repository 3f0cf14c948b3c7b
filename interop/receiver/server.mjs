// A stdio MCP server built on the official TypeScript SDK 1.32.2 (McpServer) whose tools
// task-augment the requests they send to the client: our client is the task *receiver*.
//
// Each tool reports what the SDK saw as one JSON text block, for the Rust test
// (crates/cli/tests/it/client_receiver_ts.rs) to check:
//
//   elicit_as_task {message, ttl?}  elicitation/create with `task` through the SDK's
//       experimental `server.experimental.tasks.elicitInputStream` (CreateTaskResult,
//       tasks/get polls at the client's pollInterval, tasks/result), then tasks/result
//       again as raw JSON (to see its related-task _meta) and tasks/list.
//   sample_as_task {prompt}         the same for sampling/createMessage
//       (`createMessageStream`).
//   cancel_elicitation {message}    elicitation/create with `task` through the low-level
//       `server.request(..., { task })`, then tasks/get, tasks/cancel, tasks/get and
//       tasks/result (which must fail: the task was cancelled).
//
// Run by the test as `node interop/receiver/server.mjs` (the client spawns it on stdio), or
// `node interop/receiver/server.mjs --http` (Streamable HTTP, one stateful session, on a
// free port of 127.0.0.1; it prints `listening on URL` on stdout).

import * as z from 'zod/v4';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { createServer } from 'node:http';
import { randomUUID } from 'node:crypto';
import { CreateTaskResultSchema } from '@modelcontextprotocol/sdk/types.js';

// Any JSON object, unchanged (the SDK's own schemas would strip what we want to see).
const Raw = z.looseObject({});

const nameSchema = {
    type: 'object',
    properties: { name: { type: 'string', description: 'Your name' } },
    required: ['name']
};

function text(obj) {
    return { content: [{ type: 'text', text: JSON.stringify(obj) }] };
}

function describeError(e) {
    return { code: e?.code ?? null, message: String(e?.message ?? e) };
}

/** Drain one of the SDK's task streams into a report. */
async function drain(low, stream) {
    const tasks = low.experimental.tasks;
    const report = { created: null, statuses: [], result: null, error: null };
    for await (const m of stream) {
        switch (m.type) {
            case 'taskCreated':
                report.created = m.task;
                break;
            case 'taskStatus':
                report.statuses.push(m.task.status);
                report.lastTask = m.task;
                break;
            case 'result':
                report.result = m.result;
                break;
            case 'error':
                report.error = describeError(m.error);
                break;
        }
    }
    if (report.created) {
        const taskId = report.created.taskId;
        try {
            report.rawResult = await low.request({ method: 'tasks/result', params: { taskId } }, Raw);
        } catch (e) {
            report.rawResultError = describeError(e);
        }
        try {
            report.listed = await tasks.listTasks();
        } catch (e) {
            report.listError = describeError(e);
        }
    }
    report.clientTasksCapability = low.getClientCapabilities()?.tasks ?? null;
    return report;
}

function makeServer() {
const server = new McpServer({ name: 'receiver-probe', version: '1.0.0' });
const low = server.server;
const tasks = low.experimental.tasks;

server.registerTool(
    'elicit_as_task',
    {
        description: 'Ask the client for a name with a task-augmented elicitation/create.',
        inputSchema: { message: z.string(), ttl: z.number().int().optional() }
    },
    async ({ message, ttl }) => {
        const stream = tasks.elicitInputStream(
            { mode: 'form', message, requestedSchema: nameSchema },
            { task: { ttl: ttl ?? 60000 } }
        );
        return text(await drain(low, stream));
    }
);

server.registerTool(
    'sample_as_task',
    {
        description: "Ask the client's model with a task-augmented sampling/createMessage.",
        inputSchema: { prompt: z.string() }
    },
    async ({ prompt }) => {
        const stream = tasks.createMessageStream(
            { messages: [{ role: 'user', content: { type: 'text', text: prompt } }], maxTokens: 100 },
            { task: { ttl: 60000 } }
        );
        return text(await drain(low, stream));
    }
);

server.registerTool(
    'cancel_elicitation',
    {
        description: 'Start a task-augmented elicitation on the client, then cancel it.',
        inputSchema: { message: z.string() }
    },
    async ({ message }) => {
        const report = {};
        const created = await low.request(
            { method: 'elicitation/create', params: { mode: 'form', message, requestedSchema: nameSchema } },
            CreateTaskResultSchema,
            { task: { ttl: 60000 } }
        );
        report.created = created.task;
        const taskId = created.task.taskId;
        await new Promise(r => setTimeout(r, 300));
        report.before = await tasks.getTask(taskId);
        report.cancel = await tasks.cancelTask(taskId);
        report.after = await tasks.getTask(taskId);
        try {
            report.result = await low.request({ method: 'tasks/result', params: { taskId } }, Raw);
        } catch (e) {
            report.resultError = describeError(e);
        }
        try {
            await tasks.cancelTask(taskId);
        } catch (e) {
            report.secondCancelError = describeError(e);
        }
        return text(report);
    }
);

return server;
}

if (process.argv.includes('--http')) {
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: () => randomUUID() });
    await makeServer().connect(transport);
    const http = createServer((req, res) => {
        transport.handleRequest(req, res).catch(e => {
            console.error(e);
            if (!res.headersSent) res.writeHead(500).end();
        });
    });
    http.listen(0, '127.0.0.1', () => {
        console.log(`listening on http://127.0.0.1:${http.address().port}/mcp`);
    });
} else {
    await makeServer().connect(new StdioServerTransport());
}
