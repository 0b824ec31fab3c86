"""An AI agent for the tests: the MCP SDK's own client (`ClientSession` over stdio) talking to a real
`eagle-console mcp PLAN` process, as an agent's host would start it from its MCP configuration."""

from __future__ import annotations

import importlib.util
import json
import os
import sys
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

# Looked up, not imported: every xdist worker collects this module, and importing the SDK (pydantic models,
# uvicorn) took ~0.6 s of CPU in each; only the worker that runs an agent test imports it (agent() below).
if importlib.util.find_spec("mcp") is None:
    pytest.skip("the agent extra (the MCP SDK) is not installed: pip install 'eagle-console[agent]'",
                allow_module_level=True)
if TYPE_CHECKING:
    from mcp import ClientSession

AGENT = "test-agent"  # the client name the journal records as agent:test-agent


class Agent:
    """A session plus one-line calls: `await agent.call("run_step", step="0.1")` → (document, is_error)."""

    def __init__(self, session: ClientSession) -> None:
        self.session = session

    async def call(self, tool: str, **args: Any) -> tuple[Any, bool]:
        result = await self.session.call_tool(tool, args)
        (content,) = result.content
        return json.loads(content.text), bool(result.is_error)

    async def ok(self, tool: str, **args: Any) -> Any:
        doc, failed = await self.call(tool, **args)
        assert not failed, f"{tool}({args}) failed: {doc}"
        return doc

    async def read(self, uri: str) -> Any:
        result = await self.session.read_resource(uri)
        return json.loads(result.contents[0].text)


@asynccontextmanager
async def agent(plan: Path, *flags: str, sim: Path | None = None, name: str = AGENT):
    """`eagle-console mcp PLAN [flags] [--sim SIM]` started over stdio, initialized as client `name`."""
    from mcp import ClientSession, StdioServerParameters, stdio_client
    from mcp.types import Implementation

    args = ["-m", "eagle_console", "mcp", str(plan), *flags, *(["--sim", str(sim)] if sim else [])]
    params = StdioServerParameters(command=sys.executable, args=args, env=dict(os.environ))
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write, client_info=Implementation(name=name, version="1.0")) as session:
            await session.initialize()
            yield Agent(session)
