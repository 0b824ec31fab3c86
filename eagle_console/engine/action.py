"""Runs one built-in inside a supervised process (never inside the console).

    EAGLE_CONSOLE_CALL=JSON python -m eagle_console.engine.action --uses NAME

The JSON (in the environment: a command line is every local user's to read, and `with` may hold a URL
with a password) is a `spec.BuiltinCall` the engine resolved when it started the run or the rollback: the `with`
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
from eagle_console.engine.spec import decode_call
from eagle_console.node import selfmark
from eagle_console.pyenv import CALL_VAR, forget_own_entry


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="eagle_console.engine.action")
    ap.add_argument("--uses", help="the built-in's name (for ps; the call is in $EAGLE_CONSOLE_CALL)")
    ap.add_argument("--call", help="the BuiltinCall as JSON, by hand only: an argv is every user's to read")
    args = ap.parse_args(argv)
    selfmark.mark(selfmark.ENGINE)  # close-on-exec: a service exec'd below is not marked
    forget_own_entry()  # a server it execs, or a process it starts, gets the operator's PYTHONPATH
    text = args.call if args.call is not None else os.environ.pop(CALL_VAR, None)  # not for its children
    if text is None:
        print(f"eagle-console: no built-in call (${CALL_VAR} is not set)", flush=True)
        return 2
    try:
        call = decode_call(text)
    except (ValueError, TypeError) as exc:
        print(f"eagle-console: unreadable built-in call: {exc}", flush=True)
        return 2
    if args.uses is not None and args.uses != call.uses:
        print(f"eagle-console: --uses {args.uses} but the call is {call.uses}", flush=True)
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
