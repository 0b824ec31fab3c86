"""The MCP server (the official `mcp` SDK, the `agent` extra) around `tools.AgentTools`: one tool per
operation, the plan, a run's log and the journal's recent events as resources, over stdio.

Each tool runs its blocking body in a worker thread (a wait for a run or an approval never stalls the
session's other requests) and answers a `CallToolResult`: the JSON document as text and as structured
content, `is_error` with `{"error": {"code", "message"}}` when it failed. The client's name from MCP's
initialize becomes the journal's face, `agent:<name>`, before each call writes anything.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from mcp.server.mcpserver import Context, MCPServer
from mcp.types import CallToolResult, TextContent

from eagle_console import __version__
from eagle_console.mcp.tools import AgentTools

INSTRUCTIONS = """\
eagle-console: a GPU node's game plan (phases and steps) with a journal of what happened. Work through the plan
with these tools instead of a shell: plan_status says what is next (and why nothing is), run_step starts a step
under a supervisor that outlives this server, wait_run waits for it, mark_step and note record decisions. Runs
that touch the GPUs or start services (and kill_orphans, rollbacks of services) wait for a person's approval
when approvals are on: the call returns the decision, or "awaiting_approval" after wait_s; poll it with
approval_status. Everything you do is journaled as agent:<your client name> and shown on every console."""


def _result(doc: Any, failed: bool) -> CallToolResult:
    text = json.dumps(doc, indent=1, default=str)
    structured = doc if isinstance(doc, dict) else {"items": doc}
    return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=structured,
                          is_error=failed)


def build_server(tools: AgentTools) -> MCPServer:
    server = MCPServer("eagle-console", version=__version__, instructions=INSTRUCTIONS, log_level="WARNING")

    async def call(ctx: Context | None, fn: Any, *args: Any, **kwargs: Any) -> CallToolResult:
        params = ctx.session.client_params if ctx is not None else None
        tools.set_client(params.client_info.name if params is not None else None)
        doc, failed = await asyncio.to_thread(tools.call, fn, *args, **kwargs)
        return _result(doc, failed)

    @server.tool()
    async def plan_status(ctx: Context) -> CallToolResult:
        """The plan's phases and steps with their statuses, latest runs, who changed each (and through which
        face), requests awaiting approval, and the next step to run — or why nothing is next."""
        return await call(ctx, tools.plan_status)

    @server.tool()
    async def run_step(step: str, ctx: Context, force: bool = False, wait_s: float = 30.0) -> CallToolResult:
        """Start a step (e.g. "0.3") under a detached supervisor. A step that needs a person's approval is not
        started: it waits as a request; this call waits up to wait_s for the decision and returns it (with the
        run it started), or status awaiting_approval. force: start despite unmet needs."""
        return await call(ctx, tools.run_step, step, force, wait_s)

    @server.tool()
    async def run_next(ctx: Context, wait_s: float = 30.0) -> CallToolResult:
        """Run the first pending step whose needs are met, in plan order (as run_step does)."""
        return await call(ctx, tools.run_next, wait_s)

    @server.tool()
    async def wait_run(run_id: int, ctx: Context, timeout_s: float = 60.0) -> CallToolResult:
        """Wait until a run ends (a service: until it is ready), at most timeout_s (600 at most); says how it
        ended, or still_going. The run goes on whatever happens to this call or this server."""
        return await call(ctx, tools.wait_run, run_id, timeout_s)

    @server.tool()
    async def approval_status(request_id: int, ctx: Context, wait_s: float = 0.0) -> CallToolResult:
        """A request's state: awaiting_approval, denied (by whom, with their note: nothing was started), or
        approved with what it started. wait_s: wait that long for a decision first."""
        return await call(ctx, tools.approval_status, request_id, wait_s)

    @server.tool()
    async def mark_step(step: str, status: str, ctx: Context, note: str | None = None) -> CallToolResult:
        """Set a step's status by hand (pending, in_progress, completed, failed, skipped, rolled_back) with an
        optional note saying why; recorded as yours."""
        return await call(ctx, tools.mark_step, step, status, note)

    @server.tool()
    async def note(step: str, text: str, ctx: Context) -> CallToolResult:
        """Add a note (a decision, an observation) to a step or a phase."""
        return await call(ctx, tools.note, step, text)

    @server.tool()
    async def todo_list(ctx: Context) -> CallToolResult:
        """The plan as todowrite items ({content, status, priority}), one per phase followed by its steps."""
        return await call(ctx, tools.todo_list)

    @server.tool()
    async def todowrite(todos: list[dict[str, Any]], ctx: Context, note: str | None = None) -> CallToolResult:
        """Take your todowrite list back as marks: each item's content matched to a phase's or step's label
        (todo_list gives them); steps whose status differs are marked. Unknown items refuse the whole list
        (nothing marked) and the error lists every known label."""
        return await call(ctx, tools.todowrite, todos, note)

    @server.tool()
    async def rollback_preview(target: str, ctx: Context) -> CallToolResult:
        """What rolling back a step or phase would undo, in order, plain and with its dependents (cascade),
        and why it would need approval."""
        return await call(ctx, tools.rollback_preview, target)

    @server.tool()
    async def rollback(target: str, ctx: Context, cascade: bool = False, force: bool = False,
                       wait_s: float = 30.0) -> CallToolResult:
        """Roll back a step or phase (cascade: its dependents first). Stopping a service waits for approval."""
        return await call(ctx, tools.rollback, target, cascade, force, wait_s)

    @server.tool()
    async def wait_rollback(rollback_id: int, ctx: Context, timeout_s: float = 60.0) -> CallToolResult:
        """Wait for a rollback's end, at most timeout_s."""
        return await call(ctx, tools.wait_rollback, rollback_id, timeout_s)

    @server.tool()
    async def step_log(step: str, ctx: Context, lines: int = 50) -> CallToolResult:
        """The last lines (200 at most) of a step's latest log."""
        return await call(ctx, tools.step_log, step, lines)

    @server.tool()
    async def server_summary(ctx: Context, step: str | None = None) -> CallToolResult:
        """The SGLang server log summary (server-log --json): stages, ready, decode throughput and accept
        length, errors, findings — of the given service step, else the latest service."""
        return await call(ctx, tools.server_summary, step)

    @server.tool()
    async def metrics(ctx: Context, step: str | None = None) -> CallToolResult:
        """One reading of the SGLang server's /metrics (metrics --json): accept length and rate, throughput,
        queue, TTFT/ITL, findings such as ACCEPT_LENGTH_ONE — of the given service step, else the latest."""
        return await call(ctx, tools.metrics, step)

    @server.tool()
    async def nccl_summary(ctx: Context, step: str | None = None) -> CallToolResult:
        """The NCCL summary (nccl --json) of the service's log: ranks, transports, env, findings."""
        return await call(ctx, tools.nccl_summary, step)

    @server.tool()
    async def gpus(ctx: Context) -> CallToolResult:
        """GPUs and the processes holding them (gpus --json), each holder tracked, orphan or other."""
        return await call(ctx, tools.gpus)

    @server.tool()
    async def orphans(ctx: Context) -> CallToolResult:
        """GPU holders with their class and why some are never signalled (orphans --json); kills nothing."""
        return await call(ctx, tools.orphans)

    @server.tool()
    async def kill_orphans(ctx: Context, grace: str | None = None, wait_s: float = 30.0) -> CallToolResult:
        """Kill the orphaned GPU workers (SIGTERM, SIGKILL after grace, e.g. "10s"): a request a person
        approves; waits up to wait_s for the decision and returns it with the kill report."""
        return await call(ctx, tools.kill_orphans, grace, wait_s)

    @server.tool()
    async def drafter_check(step: str, ctx: Context) -> CallToolResult:
        """The EAGLE-3 drafter check (drafter check --json) of the drafter the step's drafter.check names."""
        return await call(ctx, tools.drafter_check, step)

    @server.tool()
    async def compare_vocab(step: str, ctx: Context) -> CallToolResult:
        """The vocab mapping comparison (drafter compare-vocab --json) of the step's drafter.compare_vocab."""
        return await call(ctx, tools.compare_vocab, step)

    @server.tool()
    async def extraction(ctx: Context, step: str | None = None) -> CallToolResult:
        """Hidden-state extraction progress (extraction --json) of a step with watch.extraction."""
        return await call(ctx, tools.extraction, step)

    @server.tool()
    async def results(ctx: Context, step: str | None = None) -> CallToolResult:
        """Recorded results (benchmark tok/s, accept length, TTFT …) by step, with the plan's baseline."""
        return await call(ctx, tools.results, step)

    def resource_text(fn: Any, *args: Any) -> str:
        doc, _failed = tools.call(fn, *args)
        return json.dumps(doc, indent=1, default=str)

    @server.resource("eagle://plan", name="plan", mime_type="application/json",
                     description="The plan: phases, steps, what each does and needs approval; [env] by name only")
    async def plan_resource() -> str:
        return await asyncio.to_thread(resource_text, tools.plan_resource)

    @server.resource("eagle://journal/recent", name="journal", mime_type="application/json",
                     description="The journal's last 100 events, with who and through which face")
    async def journal_resource() -> str:
        return await asyncio.to_thread(resource_text, tools.recent_events)

    @server.resource("eagle://runs/{run_id}/log", name="run-log", mime_type="application/json",
                     description="The last 200 lines of a run's log")
    async def run_log_resource(run_id: str) -> str:
        return await asyncio.to_thread(resource_text, tools.run_log, run_id)

    return server


def serve(plan: Path, *, state_dir: Path | None, sim_dir: Path | None, approvals: bool) -> int:
    """Serve MCP on stdin/stdout until the client closes it. (The SDK points fd 1 at stderr meanwhile, so no
    stray print — ours or a child's — reaches the protocol.)"""
    tools = AgentTools(plan, state_dir=state_dir, sim_dir=sim_dir, approvals=approvals)
    try:
        build_server(tools).run("stdio")
    finally:
        tools.close()
    return 0
