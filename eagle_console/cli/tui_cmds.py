"""`eagle-console tui PLAN` (and the bare `eagle-console [PLAN]`): open the console.

Textual is imported only inside `open_console`, so the rest of the CLI starts without it. The `demo`
command (cli/demo_cmds.py) builds its node and plan, then calls `open_console` too.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import os
import signal
import sys
from collections.abc import Iterator
from pathlib import Path

from eagle_console.cli.common import CliError, add_sim, add_state_dir, load_plan, open_journal
from eagle_console.cli.terminal_out import TerminalOut


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "tui", help="open the console on PLAN (the default command)",
        description="The Textual console: the plan tree with live statuses, GPUs, logs. With no PLAN: the only "
        "*.toml in ./plans/.",
    )
    p.add_argument("plan", nargs="?", metavar="PLAN", help="the plan file (default: the only ./plans/*.toml)")
    p.add_argument("--readonly", action="store_true", help="watch only: every key that changes anything is off")
    add_sim(p)
    add_state_dir(p)
    p.set_defaults(func=cmd_tui)


def default_plan(folder: Path = Path("plans")) -> Path:
    """The only *.toml in ./plans/, else CliError naming what is there."""
    found = sorted(folder.glob("*.toml")) if folder.is_dir() else []
    if len(found) == 1:
        return found[0]
    if not found:
        raise CliError(f"no PLAN given and no *.toml in {folder}/; usage: eagle-console tui PLAN")
    names = ", ".join(str(f) for f in found)
    raise CliError(f"no PLAN given and {len(found)} plans in {folder}/: {names}; say which: eagle-console PLAN")


def cmd_tui(args: argparse.Namespace) -> int:
    from eagle_console.cli.common import sim_dir

    plan = Path(args.plan) if args.plan else default_plan()
    return open_console(plan, state_dir=args.state_dir, readonly=args.readonly, sim_dir=sim_dir(args))


def open_console(plan_path: str | os.PathLike[str], *, state_dir: str | None = None, readonly: bool = False,
                 sim_dir: Path | None = None, runs_stop_on_quit: bool = False) -> int:
    """Load the plan (CliError on a bad one), run the console until quit, say what keeps running (unless
    `runs_stop_on_quit`: the caller, the demo, stops them and says so)."""
    from eagle_console.node import selfmark

    selfmark.mark(selfmark.CONSOLE)  # also when called from Python, not through main()
    # Startup builds mostly long-lived objects (modules, styles, widgets); cyclic collections during it
    # only walk them again and again (~60 ms before the first frame). The App collects once, freezes
    # what survived and turns collection back on after its first frame (ConsoleApp._settle_gc).
    gc.disable()
    try:
        return _run_console(plan_path, state_dir=state_dir, readonly=readonly, sim_dir=sim_dir,
                            runs_stop_on_quit=runs_stop_on_quit)
    finally:
        gc.enable()


def _run_console(plan_path: str | os.PathLike[str], *, state_dir: str | None, readonly: bool,
                 sim_dir: Path | None, runs_stop_on_quit: bool = False) -> int:
    plan = load_plan(plan_path, state_dir)
    if sim_dir is not None:  # runs started from this console see the simulated node too
        os.environ["EAGLE_CONSOLE_SIM"] = str(Path(sim_dir).resolve())
    journal = open_journal(plan, readonly=readonly)  # --readonly writes nothing, not even a reconcile
    override = state_dir or os.environ.get("EAGLE_CONSOLE_STATE")
    from eagle_console.tui.app import make_app
    from eagle_console.tui.startup import EXIT_AFTER_FIRST_PAINT

    app = make_app(plan, journal, readonly=readonly, sim_dir=sim_dir,
                   state_dir_override=Path(override) if override else None, runs_stop_on_quit=runs_stop_on_quit)
    headless = bool(os.environ.get(EXIT_AFTER_FIRST_PAINT))  # the startup benchmark runs without a terminal
    out = TerminalOut(sys.__stderr__)
    sys.__stderr__ = out  # what Textual's driver writes the screen to (cli/terminal_out.py)
    try:
        with hangup_quits(app) if runs_stop_on_quit else contextlib.nullcontext():
            code = app.run(headless=headless)
    finally:
        sys.__stderr__ = out.stream
    crashed = app.return_code not in (None, 0)  # Textual sets 1 when the App died of an exception
    if app.first_paint is not None:
        fp = app.first_paint
        mods = " ".join(f"{m}={'yes' if v else 'no'}" for m, v in fp.modules.items())
        print(f"first-paint {fp.seconds:.4f}s modules {mods}")
    # `q` has already said "N runs keep running: …" (App.exit's message, printed once the screen is gone).
    app.ctx.journal.close()
    if crashed:  # Textual printed the traceback; say it in one line and exit non-zero (was status 0)
        reason = app._exception
        print(f"eagle-console: the console stopped on an error: "
              f"{type(reason).__name__ + ': ' + str(reason) if reason else 'see above'}", file=sys.stderr)
        return app.return_code or 1
    return int(code or 0)


@contextlib.contextmanager
def hangup_quits(app) -> Iterator[None]:  # noqa: ANN001 - the ConsoleApp (Textual is imported late)
    """For the demo: SIGHUP (the ssh window closed, the tmux session killed) and SIGTERM quit the console
    as `q` does, so the demo then stops its simulated processes; they killed it at once and left them. The
    app is asked on its own loop: SystemExit raised inside the loop would leave its poller running."""
    import asyncio

    def quit_on(signum: int, _frame: object) -> None:
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # before the app's loop runs, or after: end as the default would, but cleanly
            raise SystemExit(128 + signum) from None
        loop.call_soon_threadsafe(app.exit, 128 + signum)

    before = {sig: signal.getsignal(sig) for sig in (signal.SIGHUP, signal.SIGTERM)}
    for sig in before:
        signal.signal(sig, quit_on)
    try:
        yield
    finally:
        for sig, handler in before.items():
            signal.signal(sig, handler)
