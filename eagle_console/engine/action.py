"""Runs one built-in inside a supervised process (never inside the console).

    python -m eagle_console.engine.action --plan PLAN --step ID --mode run|check|rollback|undo
           [--state-dir DIR] [--run-id N] [--force] [--service-run JSON]

Everything printed goes to the step's log. A service built-in is exec'd in place of this process, so the
service is the supervisor's direct child and its session is the one that rollback stops.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import traceback
from pathlib import Path

from eagle_console.engine.builtins import NotAvailable, get_builtin
from eagle_console.engine.builtins.base import ActionContext, BuiltinError
from eagle_console.plan.model import Action


def _pick(step, mode: str) -> Action | None:
    if mode in ("run", "undo"):
        return step.action
    if mode == "check":
        return step.check
    return step.rollback


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="eagle_console.engine.action")
    ap.add_argument("--plan", required=True)
    ap.add_argument("--step", required=True)
    ap.add_argument("--mode", choices=("run", "check", "rollback", "undo"), default="run")
    ap.add_argument("--state-dir")
    ap.add_argument("--run-id", type=int)
    ap.add_argument("--force", action="store_true")
    ap.add_argument("--service-run", default="{}")
    args = ap.parse_args(argv)

    from eagle_console.plan.loader import PlanError, load_plan

    try:
        plan = load_plan(Path(args.plan), state_dir=Path(args.state_dir) if args.state_dir else None)
    except PlanError as exc:
        print(f"eagle-console: the plan no longer loads: {exc.format_first()}", flush=True)
        return 2
    step = plan.step(args.step)
    action = _pick(step, args.mode) if step else None
    if step is None or action is None or action.kind != "builtin" or not action.uses:
        print(f"eagle-console: step {args.step} has no built-in for mode {args.mode}", flush=True)
        return 2
    sim = os.environ.get("EAGLE_CONSOLE_SIM")
    ctx = ActionContext(
        plan=plan, step=step, args=dict(action.with_), state_dir=plan.state_dir,
        artifacts=plan.state_dir / "artifacts" / step.id, sim_dir=Path(sim) if sim else None,
        run_id=args.run_id, force=args.force, service_run=json.loads(args.service_run),
    )
    try:
        builtin = get_builtin(action.uses)
        problems = builtin.validate(ctx.args)
        if problems:
            for p in problems:
                print(f"{action.uses}: {p}", flush=True)
            return 1
        if args.mode == "undo":
            return int(builtin.undo(ctx))
        if builtin.service and args.mode == "run":
            argv_exec = builtin.service_argv(ctx)
            print(f"[eagle-console] exec: {' '.join(argv_exec)}", flush=True)
            sys.stdout.flush()
            os.execvp(argv_exec[0], argv_exec)
        return int(builtin.run(ctx))
    except (NotAvailable, BuiltinError) as exc:
        print(f"{action.uses}: {exc}", flush=True)
        return 1
    except FileNotFoundError as exc:
        print(f"{action.uses}: {exc}", flush=True)
        return 1
    except Exception:  # a bug in a built-in: the whole story belongs in the step log
        print(f"{action.uses}: internal error", flush=True)
        traceback.print_exc(file=sys.stdout)
        return 1


if __name__ == "__main__":
    sys.exit(main())
