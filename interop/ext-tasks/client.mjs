// `@modelcontextprotocol/ext-tasks` (pinned in interop/package.json) as a client of
// `mcp-tasks serve` over Streamable HTTP, in the 2026-07-28 era (tasks extension v2).
//
//   node interop/ext-tasks/client.mjs http://127.0.0.1:PORT/mcp
//
// The package drives tasks through a `ConnectedMcpSessionPort`; the port here is the
// transport a 2026-07-28 host gives it: each request POSTed on its own, with the
// `_meta` framing (protocol version, client info, capabilities declaring the extension)
// and the `MCP-Protocol-Version`, `Mcp-Method` and `Mcp-Name` headers. No initialize, no
// session. The server must run with a short `--task-after` (the tests use 100ms) so
// that `sleep`, `fail` and `error` become tasks. Each scenario prints one JSON line; the
// Rust test (crates/cli/tests/it/interop_ext_tasks.rs) checks them.
import {
  createApplicationInputHandler,
  withTasks,
} from "@modelcontextprotocol/ext-tasks/client";

const url = process.argv[2];
if (!url) {
  console.error("usage: client.mjs URL");
  process.exit(2);
}
const VERSION = "2026-07-28";
const EXT = "io.modelcontextprotocol/tasks";
const sent = [];

/**
 * The request's `Mcp-Name` value, when its method has one (streamable HTTP: `params.name`
 * of `tools/call` and `prompts/get`, `params.uri` of `resources/read`; SEP-2663:
 * `params.taskId` of `tasks/get|update|cancel`), in the Base64 sentinel form if it is
 * not plain ASCII.
 */
function mcpName(method, params) {
  const v =
    method === "tools/call" || method === "prompts/get"
      ? params?.name
      : method === "resources/read"
        ? params?.uri
        : method.startsWith("tasks/")
          ? params?.taskId
          : undefined;
  if (typeof v !== "string") return undefined;
  return /^[\x20-\x7e]*$/.test(v) ? v : `=?base64?${Buffer.from(v).toString("base64")}?=`;
}

let nextId = 1;
async function post(method, params) {
  const framed = {
    ...params,
    _meta: {
      ...(params?._meta ?? {}),
      "io.modelcontextprotocol/protocolVersion": VERSION,
      "io.modelcontextprotocol/clientInfo": { name: "ext-tasks-interop", version: "0.2.2" },
      "io.modelcontextprotocol/clientCapabilities": {
        elicitation: { form: {} },
        extensions: { [EXT]: {} },
      },
    },
  };
  const body = { jsonrpc: "2.0", id: nextId++, method, params: framed };
  const headers = {
    "content-type": "application/json",
    accept: "application/json, text/event-stream",
    "mcp-protocol-version": VERSION,
    "mcp-method": method,
  };
  const name = mcpName(method, params);
  if (name !== undefined) headers["mcp-name"] = name;
  sent.push(method);
  const res = await fetch(url, { method: "POST", headers, body: JSON.stringify(body) });
  const text = await res.text();
  let msg;
  try {
    msg = JSON.parse(text);
  } catch {
    throw new Error(`${method}: HTTP ${res.status} with a body that is not JSON: ${text}`);
  }
  if (msg.error) return { kind: "error", error: msg.error };
  return { kind: "result", result: msg.result };
}

let discovered;
const port = {
  endpointId: url,
  get taskCapabilities() {
    return { generation: "v2", capabilities: discovered?.capabilities?.extensions?.[EXT] ?? {} };
  },
  invalidated: false,
  async dispatch(request) {
    return post(request.method, request.params ?? {});
  },
  onServerRequest() {
    return () => {};
  },
  onNotification() {
    return () => {};
  },
  onInvalidated() {
    return () => {};
  },
};

const d = await post("server/discover", {});
if (d.kind !== "result") throw new Error(`server/discover: ${JSON.stringify(d.error)}`);
discovered = d.result;
if (!discovered.capabilities?.extensions?.[EXT]) {
  throw new Error(`the server does not declare ${EXT}: ${JSON.stringify(discovered)}`);
}

const asked = [];
const session = withTasks(port, {
  onInputRequest: createApplicationInputHandler({
    elicitation: (request) => {
      asked.push(request.params.message);
      return { action: "accept", content: { answer: `answered: ${request.params.message}` } };
    },
    sampling: () => {
      throw new Error("no sampling in this test");
    },
    roots: () => ({ roots: [] }),
  }),
});

function textOf(result) {
  return result?.content?.find((b) => b.type === "text")?.text;
}
function emit(scenario, fields) {
  console.log(JSON.stringify({ scenario, ...fields }));
}
async function settle(execution) {
  const statuses = [];
  const { outcome } = await execution.settle({
    onEvent: (e) => {
      if (e.type === "task") statuses.push(e.task.status);
    },
  });
  return { outcome, statuses };
}

try {
  // 1. completed: `sleep` outlives --task-after and becomes a task.
  {
    const ex = await session.callTool("sleep", { ms: 400 });
    const { outcome } = await settle(ex);
    emit("completed", {
      kind: ex.kind,
      taskId: ex.handle?.taskId,
      status: outcome.status,
      text: textOf(outcome.result),
      error: outcome.error?.message,
    });
  }
  // 2. input_required: `ask` (required) asks; the package answers with tasks/update.
  {
    const ex = await session.callTool("ask", { question: "Your name?" });
    const { outcome, statuses } = await settle(ex);
    emit("input_required", {
      kind: ex.kind,
      taskId: ex.handle?.taskId,
      status: outcome.status,
      sawInputRequired: statuses.includes("input_required"),
      asked,
      text: textOf(outcome.result),
    });
  }
  // 3. cancelled: a long sleep cancelled while it works.
  {
    const ex = await session.callTool("sleep", { ms: 60000 });
    const settled = settle(ex);
    await ex.cancel();
    const { outcome } = await settled;
    emit("cancelled", { kind: ex.kind, taskId: ex.handle?.taskId, status: outcome.status });
  }
  // 4. failed: a JSON-RPC error after --task-after.
  {
    const ex = await session.callTool("error", { message: "boom", code: -32050, ms: 300 });
    const { outcome } = await settle(ex);
    emit("failed", {
      kind: ex.kind,
      taskId: ex.handle?.taskId,
      status: outcome.status,
      error: outcome.error
        ? { name: outcome.error.name, message: outcome.error.message, code: outcome.error.code }
        : null,
    });
  }
  // 4b. isError ends `completed` (SEP-2663).
  {
    const ex = await session.callTool("fail", { message: "nope", ms: 300 });
    const { outcome } = await settle(ex);
    emit("is_error", {
      kind: ex.kind,
      status: outcome.status,
      isError: outcome.result?.isError === true,
      text: textOf(outcome.result),
    });
  }
  emit("methods", { sent: [...new Set(sent)].sort() });
} finally {
  await session.close();
}
