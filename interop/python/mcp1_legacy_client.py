"""The official Python SDK `mcp` 1.30 (pinned in requirements-mcp1.txt), which speaks
only 2025-11-25, as a legacy client of `mcp-tasks serve --stdio`: the same process
that serves the 2026-07-28 era keeps serving `initialize` and the 2025-11-25 tasks.

    mcp1_legacy_client.py /path/to/mcp-tasks

Each scenario prints one JSON line; crates/cli/tests/it/interop_fastmcp.rs checks them.
"""

from __future__ import annotations

import asyncio
import json
import sys

from mcp import ClientSession, StdioServerParameters, types
from mcp.client.stdio import stdio_client


def emit(scenario: str, **fields: object) -> None:
    print(json.dumps({"scenario": scenario, **fields}), flush=True)


async def answer(context, params):
    return types.ElicitResult(action="accept", content={"answer": f"answered: {params.message}"})


async def until_terminal(session: ClientSession, task_id: str) -> types.GetTaskResult:
    async for status in session.experimental.poll_task(task_id):
        last = status
    return last


async def main() -> int:
    params = StdioServerParameters(
        command=sys.argv[1], args=["serve", "--stdio", "--store", "memory"]
    )
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write, elicitation_callback=answer) as session:
            init = await session.initialize()
            emit("initialize", version=init.protocolVersion,
                 tasks=init.capabilities.tasks is not None)

            created = await session.experimental.call_tool_as_task("sleep", {"ms": 200})
            t = await until_terminal(session, created.task.taskId)
            r = await session.experimental.get_task_result(created.task.taskId, types.CallToolResult)
            emit("completed", status=t.status, text=r.content[0].text)

            created = await session.experimental.call_tool_as_task("ask", {"question": "Your name?"})
            r = await session.experimental.get_task_result(created.task.taskId, types.CallToolResult)
            t = await session.experimental.get_task(created.task.taskId)
            emit("input_required", status=t.status, text=r.content[0].text)

            created = await session.experimental.call_tool_as_task("sleep", {"ms": 60000})
            c = await session.experimental.cancel_task(created.task.taskId)
            emit("cancelled", status=c.status)

            created = await session.experimental.call_tool_as_task(
                "error", {"message": "boom", "code": -32050}
            )
            t = await until_terminal(session, created.task.taskId)
            try:
                await session.experimental.get_task_result(created.task.taskId, types.CallToolResult)
                error = None
            except Exception as e:  # McpError carries the task's JSON-RPC error
                error = {"code": getattr(getattr(e, "error", None), "code", None), "message": str(e)}
            emit("failed", status=t.status, error=error)
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
