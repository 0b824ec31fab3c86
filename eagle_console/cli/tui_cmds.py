"""`eagle-console tui PLAN` and the bare `eagle-console [PLAN]`: open the console.

Textual is imported only inside `open_console`, so every other command starts without it.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from eagle_console.cli.common import CliError, add_sim, add_state_dir

# Set by the startup benchmark: exit right after the first paint and report heavy modules.
EXIT_AFTER_FIRST_PAINT = "EAGLE_CONSOLE_EXIT_AFTER_FIRST_PAINT"
HEAVY_MODULES = ("torch", "safetensors", "numpy")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "tui", help="open the console on PLAN (the default command: `eagle-console [PLAN]`)",
        description="The Textual console: the plan tree, GPUs, server/NCCL/output logs; r run, n next, m mark, "
        "u rollback, K kill orphans, ? help. With no PLAN: the only *.toml in ./plans/.",
    )
    p.add_argument("plan", nargs="?", default=None, metavar="PLAN", help="the plan file (TOML)")
    p.add_argument("--readonly", action="store_true", help="watch only: every key that changes anything is off")
    add_sim(p)
    add_state_dir(p)
    p.set_defaults(func=cmd_tui)


def find_plan(plan_arg: str | None, cwd: Path | None = None) -> Path:
    """PLAN as given, else the only *.toml in ./plans/; CliError(2) listing the candidates otherwise."""
    if plan_arg:
        path = Path(plan_arg)
        if not path.is_file():
            raise CliError(f"{plan_arg}: no such plan file")
        return path
    folder = (cwd or Path.cwd()) / "plans"
    found = sorted(folder.glob("*.toml")) if folder.is_dir() else []
    if len(found) == 1:
        return found[0]
    if not found:
        raise CliError("no PLAN given and no plans/*.toml here: eagle-console PLAN (or eagle-console demo)")
    names = ", ".join(str(p.relative_to(cwd or Path.cwd())) for p in found)
    raise CliError(f"no PLAN given and plans/ holds {len(found)} plans: pick one: {names}")


def cmd_tui(args: argparse.Namespace) -> int:
    from eagle_console.cli.common import sim_dir

    plan_path = find_plan(args.plan)
    return open_console(plan_path, sim_dir=sim_dir(args), readonly=args.readonly, state_dir=args.state_dir)


def open_console(plan_path: Path, sim_dir: Path | None = None, readonly: bool = False,
                 state_dir: str | os.PathLike[str] | None = None) -> int:
    """Load the plan (exit 2 with file:line:col when it does not load), open the console, return its exit code."""
    from eagle_console.cli.common import load_plan, open_journal

    plan_path = Path(plan_path).resolve()
    plan = load_plan(plan_path, str(state_dir) if state_dir else None)
    if sim_dir is not None:
        os.environ["EAGLE_CONSOLE_SIM"] = str(Path(sim_dir).resolve())  # runs started from here see the sim
    if state_dir:
        os.environ["EAGLE_CONSOLE_STATE"] = str(Path(state_dir).resolve())  # and so do live reloads
    journal = open_journal(plan)

    from eagle_console.tui.app import ConsoleApp
    from eagle_console.tui.context import ConsoleContext

    ctx = ConsoleContext(plan_path=plan_path, plan=plan, journal=journal,
                         sim_dir=Path(sim_dir).resolve() if sim_dir else None, readonly=readonly)
    app = ConsoleApp(ctx, Path(state_dir).resolve() if state_dir else None)
    first_paint_only = bool(os.environ.get(EXIT_AFTER_FIRST_PAINT))
    app.run(headless=first_paint_only)  # `q` exits with "N runs keep running: …" as its message
    if first_paint_only:
        heavy = sorted(m for m in HEAVY_MODULES if m in sys.modules)
        print(f"heavy modules loaded: {', '.join(heavy) if heavy else 'none'}")
    return int(app.return_code or 0)
