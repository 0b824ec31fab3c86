"""`gpu.kill`: signal the GPU holders in scope (SIGTERM, grace, SIGKILL) and wait for their memory."""

from __future__ import annotations

from typing import Any

from eagle_console.engine.builtins.base import ActionContext, Builtin, BuiltinError

# node.holders and node.gpus (psutil, /proc scans: ~40 ms) load when a kill is validated or run, not when
# the console reads this class's traits for its first frame (ops.console.builtin_class_or_none)


def unreadable(found: Any) -> str | None:
    """Why the GPUs could not be read at all (no backend: no driver, NVML failing), else None. A backend
    that answered with some queries failing can still be read: its error is only said in the log."""
    from eagle_console.node.gpus import cannot_read

    if not found.unavailable:
        return None
    return cannot_read(found.backend_name, found.error)


class GpuKill(Builtin):
    name = "gpu.kill"
    undo_marks = "killed processes cannot be brought back: marked rolled back (run it again to kill again)"
    kill_preview = True

    def validate(self, args: dict[str, Any]) -> list[str]:
        from eagle_console.node.holders import KillArgs

        return KillArgs.problems(args)

    def run(self, ctx: ActionContext) -> int:
        from eagle_console.journal.kills import kill_summary
        from eagle_console.node import holders as kills
        from eagle_console.node.grace import GraceError, resolve_grace

        try:
            request = kills.KillArgs.read(ctx.args)
        except ValueError as exc:
            raise BuiltinError(str(exc)) from None
        scope = request.scope
        try:
            grace = resolve_grace(request.grace, "`grace`")
        except GraceError as exc:  # EAGLE_CONSOLE_KILL_GRACE of the action's environment
            raise BuiltinError(str(exc)) from None
        journal = ctx.journal()  # its runs are the tracked ones (the action does not load the plan)
        try:
            with kills.scan(ctx.sim_dir, journal) as found:
                if found.error:
                    ctx.say(f"GPU backend {found.backend_name}: {found.error}")
                # No backend: only the /proc fd scan saw holders, and nothing can say their memory came
                # back. The step fails (as `orphans --kill` exits 1), after killing what the scan found.
                blind = unreadable(found)
                targets = kills.choose(found, scope, request.match, request.gpus)
                self._say_holders(ctx, found.holders, {t.pid for t in targets}, found.refused)
                if not targets:
                    if blind:
                        raise BuiltinError(f"{blind}; nothing was signalled, and holders only the driver "
                                           f"sees may remain")
                    ctx.say(f"nothing to kill in scope {scope!r}")
                    ctx.result("killed", 0)
                    ctx.result("freed_mib", 0.0)
                    return 0

                def countdown(left: float, alive: list[int]) -> None:
                    ctx.say(f"  {left:4.0f}s left of the grace period; waiting for {len(alive)}: "
                            f"{' '.join(map(str, alive))}")

                record = kills.kill(found, targets, grace=grace, scope=scope, face="step", journal=journal,
                                    step_id=ctx.step_id, run_id=ctx.run_id, sig=request.signal, progress=countdown,
                                    say=ctx.say)
        finally:
            journal.close()
        ctx.save("kill.json", record._asdict())
        ctx.result("killed", len(record.killed))
        if blind:  # no `freed_mib`: nothing measured it
            ctx.say(f"killed {len(record.killed)}: {record.killed}; survivors {record.survivors}")
            raise BuiltinError(f"{blind}; signalled {len(record.killed)} holder(s) of the device files "
                               f"(survivors {record.survivors}), but whether the GPUs' memory came back is unknown")
        ctx.say(kill_summary(record.killed, record.survivors, record.freed_mib))
        ctx.result("freed_mib", record.freed_total)
        for gpu, mib in record.freed_mib.items():
            ctx.result(f"freed_mib_gpu{gpu}", mib)
        if record.survivors:
            raise BuiltinError(f"still alive after SIGKILL: {record.survivors}")
        why = {r["pid"]: r["reason"] for r in record.refused}
        left = kills.orphans_left(targets, why)
        if left:  # another user's orphan, another namespace's: in scope, not signalled, its memory held
            raise BuiltinError("orphans not signalled, their GPU memory stays in use: "
                               + "; ".join(f"{h.pid} ({why[h.pid]})" for h in left))
        return 0

    @staticmethod
    def _say_holders(ctx: ActionContext, holders: list, chosen: set[int], refused: dict[int, str]) -> None:
        """One line per holder: `*` in scope, `x` never signalled (the reason follows), blank otherwise."""
        for h in holders:
            why = refused.get(h.pid)
            mark = "x" if why else "*" if h.pid in chosen else " "
            ctx.say(f"{mark} {h.pid:>7} gpus {','.join(map(str, h.gpus)) or '-':<7} "
                    f"{(h.used_mib or 0):>8.0f} MiB {h.cls:<7} {h.reason or '':<28} {h.command[:70]}")
            if why:
                ctx.say(f"          refused {h.pid}: {why}")
