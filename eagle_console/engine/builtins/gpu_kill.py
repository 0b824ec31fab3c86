"""`gpu.kill`: signal the GPU holders in scope (SIGTERM, grace, SIGKILL) and wait for their memory."""

from __future__ import annotations

import re
import signal
from typing import Any

from eagle_console.engine.builtins.base import ActionContext, Builtin, BuiltinError, seconds, value_errors


def parse_signal(value: Any) -> int:
    name = str(value or "TERM").upper()
    name = name if name.startswith("SIG") else f"SIG{name}"
    try:
        return int(signal.Signals[name])
    except KeyError:
        raise ValueError(f"unknown signal {value!r} (use TERM, INT, KILL, ...)") from None


def _int_list(value: Any, what: str) -> list[int] | None:
    if value is None:
        return None
    if not isinstance(value, list) or not all(isinstance(v, int) and not isinstance(v, bool) for v in value):
        raise ValueError(f"`{what}` is a list of GPU indices, like [0, 1]")
    return list(value)


class GpuKill(Builtin):
    name = "gpu.kill"
    undo_marks = "killed processes cannot be brought back: marked rolled back (run it again to kill again)"
    confirm = True

    def validate(self, args: dict[str, Any]) -> list[str]:
        from eagle_console.node.kill import SCOPES

        problems = []
        scope = args.get("scope", "orphans")
        if scope not in SCOPES:
            problems.append(f"`scope` must be one of {', '.join(SCOPES)}, not {scope!r}")
        match = args.get("match", [])
        if isinstance(match, str):
            match = [match]
        if not isinstance(match, list) or not all(isinstance(m, str) for m in match):
            problems.append("`match` is a list of regexes")
        else:
            for m in match:
                try:
                    re.compile(m)
                except re.error as exc:
                    problems.append(f"`match` regex {m!r}: {exc}")
            if scope == "match" and not match:
                problems.append("scope 'match' needs `match` regexes")
        problems += value_errors(lambda: _int_list(args.get("gpus"), "gpus"),
                                 lambda: parse_signal(args.get("signal")),
                                 lambda: seconds(args.get("grace", "10s")))
        return problems

    def run(self, ctx: ActionContext) -> int:
        from eagle_console.node.gpus import open_backend
        from eagle_console.node.kill import kill_holders, select_targets
        from eagle_console.node.procs import scan_holders, tracked_runs

        problems = self.validate(ctx.args)
        if problems:
            raise BuiltinError("; ".join(problems))
        scope = ctx.args.get("scope", "orphans")
        match = ctx.args.get("match", [])
        match = [match] if isinstance(match, str) else match
        gpus = _int_list(ctx.args.get("gpus"), "gpus")
        sig = parse_signal(ctx.args.get("signal"))
        grace = seconds(ctx.args.get("grace", "10s"))
        backend = open_backend(ctx.sim_dir)
        try:
            sample = backend.sample()
            if sample.error:
                ctx.say(f"GPU backend {sample.backend}: {sample.error}")
            journal = ctx.journal()
            try:
                tracked = tracked_runs(journal)
            finally:
                journal.close()
            holders = scan_holders(sample, tracked, device_prefix=backend.device_prefix)
            targets = select_targets(holders, scope, match, gpus)
            chosen = {t.pid for t in targets}
            for h in holders:
                mark = "*" if h.pid in chosen else " "
                ctx.say(f"{mark} {h.pid:>7} gpus {','.join(map(str, h.gpus)) or '-':<7} "
                        f"{(h.used_mib or 0):>8.0f} MiB {h.cls:<7} {h.reason or '':<28} {h.command[:70]}")
            if not targets:
                ctx.say(f"nothing to kill in scope {scope!r}")
                ctx.result("killed", 0)
                ctx.result("freed_mib", 0.0)
                return 0

            def countdown(left: float, alive: list[int]) -> None:
                ctx.say(f"  {left:4.0f}s left of the grace period; waiting for {len(alive)}: "
                        f"{' '.join(map(str, alive))}")

            report = kill_holders(targets, backend=backend, grace=grace, sig=sig, progress=countdown,
                                  say=ctx.say)
        finally:
            backend.close()
        ctx.save("kill.json", report)
        ctx.journal().append("kill", ctx.step_id, ctx.run_id, None, scope=scope, **report)
        freed_total = round(sum(report["freed_mib"].values()), 1)
        ctx.say(f"killed {len(report['killed'])}: {report['killed']}; freed {freed_total} MiB "
                f"{report['freed_mib']}; survivors {report['survivors']}")
        ctx.result("killed", len(report["killed"]))
        ctx.result("freed_mib", freed_total)
        for gpu, mib in report["freed_mib"].items():
            ctx.result(f"freed_mib_gpu{gpu}", mib)
        if report["survivors"]:
            raise BuiltinError(f"still alive after SIGKILL: {report['survivors']}")
        return 0
