"""`sglang.server`: launch SGLang (or the simulated server) as a service; undo waits for its GPU memory.

The engine execs `service_argv` in the action process, so the server leads its own session; rollback
stops that session's process group, then `undo` waits until no process of the session holds a GPU file
and the GPUs' memory is back to its level before the launch (`gpu_release`: SIGKILL frees memory only
when the process is fully gone, orphaned schedulers keep the session id after their launcher dies, and
in a container NVML's pids cannot be matched to ours).
"""

from __future__ import annotations

import os
from typing import Any

from eagle_console.engine.builtins.base import ActionContext, Builtin, BuiltinError
from eagle_console.plan.model import Ready

DEFAULT_READY_TIMEOUT_S = 40 * 60.0  # K2.5 weight loading + CUDA graph capture on a cold node
DEFAULT_RELEASE_TIMEOUT_S = 120.0


def python_problems(args: dict[str, Any]) -> list[str]:
    """The `python` key names the interpreter that runs SGLang (its own venv, never the console's):
    it must be an executable file, or a command found on PATH."""
    import shutil

    from eagle_console.sglang.args import LaunchArgsError, python_command

    try:
        exe = python_command(args)[0]
    except LaunchArgsError:
        return []  # launch_findings has said what is wrong with it
    if os.sep in exe:
        if not os.path.isfile(exe):
            return [f"`python`: {exe} does not exist"]
        if not os.access(exe, os.X_OK):
            return [f"`python`: {exe} is not executable"]
        return []
    if shutil.which(exe) is None:
        return [f"`python`: {exe} is not on PATH (give the full path of SGLang's interpreter)"]
    return []


class SglangServer(Builtin):
    name = "sglang.server"

    def validate(self, args: dict[str, Any]) -> list[str]:
        from eagle_console.sglang.args import launch_findings
        from eagle_console.sglang.multinode import is_multinode, multinode_problems, single_node_args

        if is_multinode(args):
            problems = multinode_problems(args)
            args = single_node_args(args)
        else:
            problems = []
        problems += [f"{f.code}: {f.message}" for f in launch_findings(args) if f.severity == "error"]
        return problems + python_problems(args)

    def service_argv(self, ctx: ActionContext) -> list[str]:
        from eagle_console.engine.builtins.gpu_release import record_pre_launch
        from eagle_console.sglang.multinode import is_multinode

        if is_multinode(ctx.args):
            from eagle_console.engine.builtins.sglang_ranks import ranks_service_argv

            return ranks_service_argv(ctx, self.name)
        from eagle_console.sglang.args import LaunchArgsError, build_launch_argv, launch_findings

        record_pre_launch(ctx)  # what undo waits to see again (the GPUs' memory before this server)
        for f in launch_findings(ctx.args):
            if f.severity != "error":
                ctx.say(f"{self.name}: {f.severity} {f.code}: {f.message}")
        try:
            return build_launch_argv(ctx.args)
        except LaunchArgsError as exc:
            raise BuiltinError(str(exc)) from None

    def default_ready(self, ctx: ActionContext) -> Ready | None:
        from eagle_console.sglang.multinode import is_multinode

        host = str(ctx.args.get("host", "127.0.0.1"))
        if host in ("0.0.0.0", "::", ""):
            host = "127.0.0.1"
            if is_multinode(ctx.args):  # readiness is rank 0's, on the first node
                from eagle_console.engine.builtins.sglang_ranks import rank0_host

                host = rank0_host(ctx.args, host)
        port = ctx.args.get("port", 30000)
        timeout = ctx.timeout_s or DEFAULT_READY_TIMEOUT_S
        return Ready(http=f"http://{host}:{port}/health", timeout_s=timeout)

    def undo(self, ctx: ActionContext) -> int:
        from eagle_console.engine.builtins.gpu_release import wait_released
        from eagle_console.sglang.multinode import is_multinode

        if is_multinode(ctx.args):
            from eagle_console.engine.builtins.sglang_ranks import stop_ranks

            return stop_ranks(ctx, self.name)

        return wait_released(ctx, self.name, DEFAULT_RELEASE_TIMEOUT_S)
