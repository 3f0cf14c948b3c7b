"""FastMCP 4 (`fastmcp[tasks]`, pinned in constraints-fastmcp4.txt) as a 2026-07-28
server with the tasks extension (SEP-2663), for our CLI and our gateway.

    fastmcp_server.py --stdio
    fastmcp_server.py --port PORT     # Streamable HTTP at http://127.0.0.1:PORT/mcp

FastMCP speaks only the modern era. Its task tools (`task=True`: tasks when the client
opts in; `required`: always) run on the in-memory Docket backend (`memory://`):

* `sleep {ms}`      sleeps and returns `slept <ms>` (a long one is the one to cancel);
* `ask {question}`  asks with the guard pattern: returns an `InputRequiredResult` with
                    one `elicitation/create` for `answer`, then returns `answered: ...`
                    (the task is `input_required` until the client's `tasks/update`);
* `error {message, code, ms}`  raises a JSON-RPC error: the task ends `failed` with it.

Tests: crates/cli/tests/it/interop_fastmcp_server.rs.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from datetime import timedelta

import mcp_types
from mcp.shared.exceptions import MCPError

from fastmcp import Context, FastMCP
from fastmcp.utilities.tasks import TaskConfig

# Short polls keep the tests quick (FastMCP's default pollInterval is 5 s).
POLL = timedelta(milliseconds=100)
OPTIONAL = TaskConfig(mode="optional", poll_interval=POLL)
REQUIRED = TaskConfig(mode="required", poll_interval=POLL)
from fastmcp_tasks import TasksExtension

mcp = FastMCP("fastmcp-interop-server")
mcp.add_extension(TasksExtension(url="memory://"))


@mcp.tool(task=OPTIONAL)
async def sleep(ms: int) -> str:
    """Sleep `ms` milliseconds."""
    await asyncio.sleep(ms / 1000)
    return f"slept {ms}"


@mcp.tool(task=REQUIRED)
async def ask(question: str, ctx: Context) -> str | mcp_types.InputRequiredResult:
    """Ask the client one question (elicitation) and return its answer."""
    responses = ctx.input_responses
    if not responses or "answer" not in responses:
        return mcp_types.InputRequiredResult(
            input_requests={
                "answer": mcp_types.ElicitRequest(
                    params=mcp_types.ElicitRequestFormParams(
                        message=question,
                        requested_schema={
                            "type": "object",
                            "properties": {"answer": {"type": "string"}},
                            "required": ["answer"],
                        },
                    )
                )
            }
        )
    answer = responses["answer"]
    content = getattr(answer, "content", None)
    if content is None and isinstance(answer, dict):
        content = answer.get("content")
    return f"answered: {(content or {}).get('answer')}"


@mcp.tool(task=OPTIONAL)
async def error(message: str, code: int = -32050, ms: int = 0) -> str:
    """Raise the JSON-RPC error `code`/`message` after `ms` milliseconds."""
    await asyncio.sleep(ms / 1000)
    raise MCPError(code=code, message=message)


def main() -> int:
    p = argparse.ArgumentParser()
    g = p.add_mutually_exclusive_group(required=True)
    g.add_argument("--stdio", action="store_true")
    g.add_argument("--port", type=int)
    a = p.parse_args()
    os.environ.setdefault("FASTMCP_SHOW_CLI_BANNER", "false")
    if a.stdio:
        mcp.run(transport="stdio", show_banner=False)
    else:
        mcp.run(
            transport="http", host="127.0.0.1", port=a.port, show_banner=False,
            log_level="warning",
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
