"""Runs one built-in inside a supervised process (never inside the console).

    python -m eagle_console.engine.action --call JSON

The JSON is a `spec.BuiltinCall` the engine resolved when it started the run or the rollback: the `with`
table as interpolated then, the step, the state and artifacts folders, the mode. This process never loads
the plan, so an edit made since cannot change what runs. Everything printed goes to the step's log. A
service built-in is exec'd in place of this process, so the service is the supervisor's direct child and
its session is the one that rollback stops.
"""

from __future__ import annotations

import argparse
import os
import sys
import traceback
from pathlib import Path

from eagle_console.engine.builtins import NotAvailable, get_builtin
from eagle_console.engine.builtins.base import ActionContext, BuiltinError
from eagle_console.engine.pyenv import forget_own_entry
from eagle_console.engine.spec import decode_call
from eagle_console.node import selfmark


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="eagle_console.engine.action")
    ap.add_argument("--call", required=True, help="the BuiltinCall, as JSON")
    args = ap.parse_args(argv)
    selfmark.mark(selfmark.ENGINE)  # close-on-exec: a service exec'd below is not marked
    forget_own_entry()  # a server it execs, or a process it starts, gets the operator's PYTHONPATH
    try:
        call = decode_call(args.call)
    except (ValueError, TypeError) as exc:
        print(f"eagle-console: unreadable built-in call: {exc}", flush=True)
        return 2
    sim = os.environ.get("EAGLE_CONSOLE_SIM")
    ctx = ActionContext.from_call(call, sim_dir=Path(sim) if sim else None)
    try:
        builtin = get_builtin(call.uses)
        problems = builtin.validate(ctx.args)
        if problems:
            for p in problems:
                print(f"{call.uses}: {p}", flush=True)
            return 1
        if call.mode == "undo":
            return int(builtin.undo(ctx))
        if builtin.service and call.mode == "run":
            argv_exec = builtin.service_argv(ctx)
            print(f"[eagle-console] exec: {' '.join(argv_exec)}", flush=True)
            sys.stdout.flush()
            os.execvp(argv_exec[0], argv_exec)
        return int(builtin.run(ctx))
    except (NotAvailable, BuiltinError, FileNotFoundError) as exc:
        return failed(f"{call.uses}: {exc}")
    except Exception:  # a bug in a built-in: the whole story belongs in the step log
        print(f"{call.uses}: internal error", flush=True)
        traceback.print_exc(file=sys.stdout)
        return 1


def failed(why: str) -> int:
    """Say why in the log, and once more as `::reason` for the run's record (the supervisor keeps it)."""
    print(why, flush=True)
    print("::reason " + " ".join(why.split()), flush=True)  # one line: the reason is a single journal field
    return 1


if __name__ == "__main__":
    sys.exit(main())
