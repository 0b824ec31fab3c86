"""`gpu.wait_free`: pass once every GPU in scope uses at most `max_used_mib` MiB."""

from __future__ import annotations

import time
from typing import Any

from eagle_console.engine.builtins.base import ActionContext, Builtin, BuiltinError, seconds, value_errors

POLL_S = 0.5


class GpuWaitFree(Builtin):
    name = "gpu.wait_free"
    undo_marks = "waiting changes nothing: marked rolled back"

    def validate(self, args: dict[str, Any]) -> list[str]:
        from eagle_console.node.holders import gpu_indices  # as gpu_kill: not when only its traits are read

        problems = []
        bound = args.get("max_used_mib", 1024)
        if isinstance(bound, bool) or not isinstance(bound, (int, float)) or bound < 0:
            problems.append("`max_used_mib` is a number of MiB >= 0")
        problems += value_errors(lambda: gpu_indices(args.get("gpus"), "gpus"),
                                 lambda: seconds(args.get("timeout", "120s")))
        return problems

    def run(self, ctx: ActionContext) -> int:
        from eagle_console.node.gpus import cannot_read, open_backend
        from eagle_console.node.holders import gpu_indices

        problems = self.validate(ctx.args)
        if problems:
            raise BuiltinError("; ".join(problems))
        bound = float(ctx.args.get("max_used_mib", 1024))
        wanted = gpu_indices(ctx.args.get("gpus"), "gpus")
        timeout = seconds(ctx.args.get("timeout", "120s"))
        backend = open_backend(ctx.sim_dir)
        started = time.monotonic()
        last_said = ""
        try:
            while True:
                sample = backend.sample()
                if sample.backend == "none":
                    raise BuiltinError(cannot_read(sample.backend, sample.error))
                gpus = [g for g in sample.gpus if wanted is None or g.index in wanted]
                missing = sorted(set(wanted or []) - {g.index for g in sample.gpus})
                if missing:
                    raise BuiltinError(f"no such GPU: {missing}")
                over = {g.index: g.memory_used_mib for g in gpus
                        if g.memory_used_mib is None or g.memory_used_mib > bound}
                worst = max((g.memory_used_mib or 0.0 for g in gpus), default=0.0)
                if not over:
                    waited = round(time.monotonic() - started, 2)
                    ctx.say(f"all {len(gpus)} GPUs at or under {bound:g} MiB (max {worst:.0f} MiB) "
                            f"after {waited}s")
                    ctx.result("wait_s", waited)
                    ctx.result("max_used_mib", round(worst, 1))
                    return 0
                text = ", ".join(f"GPU {i}: {'N/A' if v is None else f'{v:.0f}'} MiB" for i, v in over.items())
                if text != last_said:
                    ctx.say(f"waiting for {text} (bound {bound:g} MiB)")
                    last_said = text
                if time.monotonic() - started > timeout:
                    raise BuiltinError(f"still over {bound:g} MiB after {timeout:g}s: {text}")
                time.sleep(POLL_S)
        finally:
            backend.close()
