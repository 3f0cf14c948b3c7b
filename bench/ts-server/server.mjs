// The TypeScript SDK's task server, written the way the SDK 1.32.2 intends (its
// examples/server/simpleStreamableHttp.js): one McpServer per session over
// StreamableHTTPServerTransport, the tasks capability, a shared InMemoryTaskStore with its
// InMemoryTaskMessageQueue, and a `sleep {ms}` tool registered with
// experimental.tasks.registerToolTask. Defaults everywhere; no request logging.
//
//   node server.mjs [PORT]     (default 3000; prints `listening on http://127.0.0.1:PORT/mcp`)
import { randomUUID } from 'node:crypto';
import * as z from 'zod/v4';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { createMcpExpressApp } from '@modelcontextprotocol/sdk/server/express.js';
import { isInitializeRequest } from '@modelcontextprotocol/sdk/types.js';
import { InMemoryTaskStore, InMemoryTaskMessageQueue } from '@modelcontextprotocol/sdk/experimental/tasks/stores/in-memory.js';

const port = Number(process.argv[2] ?? 3000);
const taskStore = new InMemoryTaskStore();

function getServer() {
    const server = new McpServer(
        { name: 'ts-sdk-task-server', version: '1.0.0' },
        {
            capabilities: { tasks: { list: {}, cancel: {}, requests: { tools: { call: {} } } } },
            taskStore,
            taskMessageQueue: new InMemoryTaskMessageQueue()
        }
    );
    server.experimental.tasks.registerToolTask(
        'sleep',
        {
            description: 'Wait for `ms` milliseconds, then return `slept <ms>`.',
            inputSchema: { ms: z.number().int().min(0) },
            execution: { taskSupport: 'optional' }
        },
        {
            async createTask({ ms }, { taskStore, taskRequestedTtl }) {
                const task = await taskStore.createTask({ ttl: taskRequestedTtl });
                (async () => {
                    await new Promise(resolve => setTimeout(resolve, ms));
                    await taskStore.storeTaskResult(task.taskId, 'completed', {
                        content: [{ type: 'text', text: `slept ${ms}` }]
                    });
                })();
                return { task };
            },
            async getTask(_args, { taskId, taskStore }) {
                return await taskStore.getTask(taskId);
            },
            async getTaskResult(_args, { taskId, taskStore }) {
                return await taskStore.getTaskResult(taskId);
            }
        }
    );
    return server;
}

const app = createMcpExpressApp();
const transports = new Map();

app.post('/mcp', async (req, res) => {
    const sessionId = req.headers['mcp-session-id'];
    try {
        let transport = sessionId ? transports.get(sessionId) : undefined;
        if (!transport) {
            if (sessionId || !isInitializeRequest(req.body)) {
                res.status(sessionId ? 404 : 400).json({
                    jsonrpc: '2.0',
                    error: { code: -32000, message: sessionId ? 'Session not found' : 'Bad Request: No valid session ID provided' },
                    id: null
                });
                return;
            }
            transport = new StreamableHTTPServerTransport({
                sessionIdGenerator: () => randomUUID(),
                onsessioninitialized: sid => {
                    transports.set(sid, transport);
                }
            });
            transport.onclose = () => {
                if (transport.sessionId) transports.delete(transport.sessionId);
            };
            await getServer().connect(transport);
        }
        await transport.handleRequest(req, res, req.body);
    } catch (error) {
        console.error('Error handling MCP request:', error);
        if (!res.headersSent) {
            res.status(500).json({ jsonrpc: '2.0', error: { code: -32603, message: 'Internal server error' }, id: null });
        }
    }
});

const sessionRequest = async (req, res) => {
    const transport = transports.get(req.headers['mcp-session-id']);
    if (!transport) {
        res.status(404).send('Session not found');
        return;
    }
    await transport.handleRequest(req, res);
};
app.get('/mcp', sessionRequest);
app.delete('/mcp', sessionRequest);

app.listen(port, '127.0.0.1', error => {
    if (error) {
        console.error(error);
        process.exit(1);
    }
    console.error(`listening on http://127.0.0.1:${port}/mcp`);
});

process.on('SIGTERM', () => process.exit(0));
process.on('SIGINT', () => process.exit(0));
