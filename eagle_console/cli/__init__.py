"""The `eagle-console` entry point: one argparse tree, each command group a thin module over the core.

Command modules are imported here, so they must keep heavy imports (textual, torch, safetensors) inside
the functions that need them.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys

from eagle_console import __version__
from eagle_console.cli.common import CliError

# Each module exposes `register(subparsers)`, adding its commands with `set_defaults(func=...)`.
COMMAND_MODULES = (
    "eagle_console.cli.tui_cmds",
    "eagle_console.cli.demo_cmds",
    "eagle_console.cli.plan_cmds",
    "eagle_console.cli.run_cmds",
    "eagle_console.cli.gpu_cmds",
    "eagle_console.cli.server_cmds",
    "eagle_console.cli.bench_cmds",
    "eagle_console.cli.drafter_cmds",
)


CONSOLE_MODULE = "eagle_console.cli.tui_cmds"


def build_parser(modules: tuple[str, ...] = COMMAND_MODULES) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="eagle-console",
        description="Operations console for an SGLang + EAGLE-3 GPU node: a game plan you can run, mark and "
        "roll back, GPU processes and orphan killing, server/NCCL logs, drafter checks.",
    )
    parser.add_argument("--version", action="version", version=f"eagle-console {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in modules:
        importlib.import_module(name).register(sub)  # a missing command module is a bug: let it raise
    return parser


def opens_console(args_in: list[str]) -> bool:
    """`eagle-console`, `eagle-console PLAN.toml …` and `eagle-console tui …` open the console: they need
    only its command, so the other command modules are neither imported nor registered (~9 ms less before
    the console's first screen)."""
    return not args_in or args_in[0] == "tui" or args_in[0].endswith(".toml")


def main(argv: list[str] | None = None) -> int:
    args_in = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser((CONSOLE_MODULE,) if opens_console(args_in) else COMMAND_MODULES)
    commands = set(parser._subparsers._group_actions[0].choices) if parser._subparsers else set()  # type: ignore[union-attr]
    # `eagle-console [PLAN]` opens the console.
    if not args_in or (args_in[0] not in commands and not args_in[0].startswith("-")):
        args_in = ["tui", *args_in]
    args = parser.parse_args(args_in)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        return int(args.func(args) or 0)
    except CliError as exc:
        print(f"eagle-console: {exc}", file=sys.stderr)
        return exc.code
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0
    except Exception as exc:  # never a traceback for the operator; EAGLE_CONSOLE_DEBUG=1 shows it
        if os.environ.get("EAGLE_CONSOLE_DEBUG"):
            raise
        print(f"eagle-console: internal error: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 2
