"""FastMCP 4 (`fastmcp[tasks]`, pinned in requirements-fastmcp4.txt) as a client of
`mcp-tasks serve`, in the 2026-07-28 era with the tasks extension (SEP-2663).

    fastmcp_client.py --url http://127.0.0.1:PORT/mcp
    fastmcp_client.py --stdio /path/to/mcp-tasks [--task-after 100ms]

The server must run with a short `--task-after` (the tests use 100ms) so that the
`optional` demo tools (`sleep`, `fail`, `error`) become tasks. Each scenario prints one
JSON line `{"scenario", "status", ...}`; the Rust test
(crates/cli/tests/it/interop_fastmcp.rs) checks them. Exit status 0 only when every
scenario ran; the checks of what they returned are the Rust test's.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys

from fastmcp import Client
from fastmcp.client.transports import StdioTransport
from fastmcp.exceptions import ToolError
from fastmcp_tasks.client import call_tool_task


def emit(scenario: str, **fields: object) -> None:
    print(json.dumps({"scenario": scenario, **fields}), flush=True)


def text_of(result: object) -> str | None:
    content = getattr(result, "content", None) or []
    for block in content:
        text = getattr(block, "text", None)
        if text is not None:
            return text
    return None


async def answer(message, response_type, params, context):
    """The elicitation handler: accepts with `answered: <the question>`."""
    return {"answer": f"answered: {message}"}


async def run(client: Client) -> None:
    # The era FastMCP negotiated (mode="auto" probes server/discover).
    emit("era", version=str(getattr(client, "protocol_version", None)))

    # 1. completed: an `optional` tool that outlives --task-after becomes a task.
    task = await call_tool_task(client, "sleep", {"ms": 400})
    first = task.create_result
    done = await task.wait(timeout=30)
    result = await task.result()
    emit(
        "completed",
        task_id=task.task_id,
        created_status=first.status,
        status=done.status,
        text=text_of(result),
    )

    # 1b. The same, transparently: call_tool polls tasks/get to the end.
    result = await client.call_tool("sleep", {"ms": 300})
    emit("transparent", status="completed", text=text_of(result))

    # 2. input_required: `ask` (taskSupport required) asks; the handler answers via
    #    tasks/update.
    task = await call_tool_task(client, "ask", {"question": "Your name?"})
    parked = await task.wait(state="input_required", timeout=30)
    keys = sorted((getattr(parked, "input_requests", None) or {}).keys())
    result = await task.result()
    final = await task.status()
    emit(
        "input_required",
        task_id=task.task_id,
        parked=parked.status,
        keys=len(keys),
        status=final.status,
        text=text_of(result),
    )

    # 3. cancelled: a long sleep, cancelled while working.
    task = await call_tool_task(client, "sleep", {"ms": 60000})
    await task.wait(state="working", timeout=30)
    await task.cancel()
    final = await task.wait(timeout=30)
    emit("cancelled", task_id=task.task_id, status=final.status)

    # 4. failed: a JSON-RPC error after --task-after ends `failed` with the error inline.
    task = await call_tool_task(
        client, "error", {"message": "boom", "code": -32050, "ms": 300}, raise_on_error=False
    )
    final = await task.wait(timeout=30)
    error = final.error
    emit(
        "failed",
        task_id=task.task_id,
        status=final.status,
        error=error if isinstance(error, dict) or error is None else error.model_dump(mode="json"),
    )

    # 4b. isError ends `completed` (SEP-2663), and FastMCP raises ToolError for it.
    task = await call_tool_task(
        client, "fail", {"message": "nope", "ms": 300}, raise_on_error=False
    )
    final = await task.wait(timeout=30)
    result = await task.result()
    emit(
        "is_error",
        task_id=task.task_id,
        status=final.status,
        is_error=bool(getattr(result, "is_error", False)),
        text=text_of(result),
    )


async def main() -> int:
    p = argparse.ArgumentParser()
    g = p.add_mutually_exclusive_group(required=True)
    g.add_argument("--url")
    g.add_argument("--stdio", metavar="MCP_TASKS_BIN")
    p.add_argument("--task-after", default="100ms")
    a = p.parse_args()
    if a.url:
        target: object = a.url
    else:
        target = StdioTransport(
            command=a.stdio,
            args=["serve", "--stdio", "--store", "memory", "--task-after", a.task_after],
        )
    client = Client(target, elicitation_handler=answer, timeout=60)
    async with client:
        await run(client)
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
