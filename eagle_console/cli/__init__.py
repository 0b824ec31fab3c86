"""The `eagle-console` entry point: one argparse tree, each command group a thin module over the core.

Command modules are imported here, so they must keep heavy imports (textual, torch, safetensors) inside
the functions that need them.
"""

from __future__ import annotations

import argparse
import difflib
import importlib
import os
import sys
from typing import NoReturn

from eagle_console import __version__
from eagle_console.cli import color
from eagle_console.cli.common import CliError
from eagle_console.journal.faults import JournalError
from eagle_console.node import selfmark
from eagle_console.ports import NoFreePort

# Each module exposes `register(subparsers)`, adding its commands with `set_defaults(func=...)`.
COMMAND_MODULES = (
    "eagle_console.cli.tui_cmds",
    "eagle_console.cli.serve_cmds",
    "eagle_console.cli.demo_cmds",
    "eagle_console.cli.init_cmds",
    "eagle_console.cli.plan_cmds",
    "eagle_console.cli.run_cmds",
    "eagle_console.cli.gpu_cmds",
    "eagle_console.cli.server_cmds",
    "eagle_console.cli.metrics_cmds",
    "eagle_console.cli.bench_cmds",
    "eagle_console.cli.drafter_cmds",
    "eagle_console.cli.mcp_cmds",
    "eagle_console.cli.completion",
)


CONSOLE_MODULE = "eagle_console.cli.tui_cmds"

# The --help epilog; docs/cli.md says the same at more length.
EPILOG = """\
exit status:
  0    success
  1    the operation ran and failed (a failed step or check, a finding of severity error)
  2    bad usage or bad input (unknown command or option, invalid plan, unknown step, missing file);
       one line on stderr
  130  interrupted (^C)

environment:
  EAGLE_CONSOLE_STATE        state directory (journal, logs) instead of .eagle-console/<plan id>/
  EAGLE_CONSOLE_SIM          read the simulated node in this folder instead of the real GPUs
  EAGLE_CONSOLE_GPU_BACKEND  force the GPU backend: nvml, sim or none
  EAGLE_CONSOLE_KILL_GRACE   SIGTERM-to-SIGKILL grace for kills, timeouts, rollbacks (default 10s)
  EAGLE_CONSOLE_DEBUG        1: show the traceback of an internal error
  EAGLE_CONSOLE_PORTS        LOW-HIGH: the ports the console picks for what it starts (demo server, Ray)
  EAGLE_CONSOLE_NODES        JSON file of the nodes a multi-node sglang.server runs on this machine
  EAGLE_CONSOLE_NODE_RUNNER  module:factory of the runner that reaches other nodes (the cluster extra)
  EAGLE_CONSOLE_TOKEN        serve: the token a browser must give (never --token: ps shows argv)
  EAGLE_CONSOLE_RAY_CONNECT_S  cluster: seconds to reach the Ray head (default 20)
  EAGLE_CONSOLE_RAY_CALL_S   cluster: seconds a question to the cluster may take (default 10)
  EAGLE_CONSOLE_RAY_RETRY_S  cluster: seconds before an unreachable head is asked again (default 5)
  EAGLE_CONSOLE_RAY_KEEP_S   cluster: seconds the user's Ray driver stays without an asker (300; 0: none)
  EAGLE_CONSOLE_NODE_STATE   cluster node: where node runs' records are kept (~/.local/state/...)
  NO_COLOR                   set and not empty: no colour unless --color always

Completion: eagle-console completion bash|zsh. Every --json document carries "schema": 1.
Reference: docs/cli.md."""


def _did_you_mean(word: str, choices) -> str:
    close = difflib.get_close_matches(str(word), [str(c) for c in choices], n=1, cutoff=0.6)
    return f", did you mean {close[0]!r}?" if close else ""


class Parser(argparse.ArgumentParser):
    """argparse with one rule for bad usage: one line on stderr (no usage block), exit 2, and a "did you
    mean" on a mistyped choice (subcommand, status, --format) or option (`--jsn`), at every level."""

    def _check_value(self, action: argparse.Action, value) -> None:
        if action.choices is not None and value not in action.choices:
            what = "command" if isinstance(action, argparse._SubParsersAction) else "choice"
            hint = _did_you_mean(value, action.choices)
            known = ", ".join(map(str, action.choices))
            raise argparse.ArgumentError(action, f"unknown {what} {value!r}{hint} (choose from {known})")

    def parse_args(self, args=None, namespace=None):  # type: ignore[override]
        # argparse hands words no subcommand knows up to the top, which then names neither the subcommand
        # nor its options: the deepest command chosen says it, with its own options to suggest from.
        parsed, extras = self.parse_known_args(args, namespace)
        if extras:
            chosen = _chosen_parser(self, parsed)
            chosen.error(_unknown_words(extras, chosen))
        return parsed

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: {message} (see {self.prog} --help)\n")


def _chosen_parser(parser: argparse.ArgumentParser, ns: argparse.Namespace) -> argparse.ArgumentParser:
    """The (sub)parser of the command `ns` holds: `eagle-console drafter check`'s for `drafter check …`."""
    while True:
        subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        name = getattr(ns, subs[0].dest, None) if subs else None
        if name not in (subs[0].choices if subs else {}):
            return parser
        parser = subs[0].choices[name]


def _unknown_words(extras: list[str], parser: argparse.ArgumentParser) -> str:
    flags = [w for w in extras if w.startswith("-") and w != "-"]
    if not flags:
        return f"unexpected argument{'s' if len(extras) > 1 else ''} {' '.join(map(repr, extras))}"
    flag = flags[0].split("=", 1)[0]
    close = difflib.get_close_matches(flag, list(parser._option_string_actions), n=1, cutoff=0.6)
    text = f"unknown option {flag}" + (f", did you mean {close[0]}?" if close else "")
    return text + (f" (unexpected: {' '.join(extras)})" if len(extras) > 1 else "")


def _add_color_everywhere(parser: argparse.ArgumentParser) -> None:
    """`--color` is accepted before and after the command (`status PLAN --color never`)."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for child in set(action.choices.values()):
                child.add_argument("--color", choices=color.MODES, default=argparse.SUPPRESS,
                                   help=argparse.SUPPRESS)
                _add_color_everywhere(child)


# What a bare positional is, for `--help`, when its command did not say (one wording for every command).
POSITIONAL_HELP = {
    "plan": "the plan file (TOML)", "plans": "plan files (TOML)", "step": "a step id, e.g. 0.3",
    "target": "a step or phase id", "log": "a log file", "logs": "log files", "url": "the server's URL",
    "path": "a file or folder", "text": "the note's text", "status": "the status to set",
    "format": "the export format", "shell": "the shell to complete for", "drafter_command": "what to do",
}


def _describe_everywhere(parser: argparse.ArgumentParser) -> None:
    """Every command's `--help` opens with what it does (its one-line help, when it has no description),
    and every positional says what it is."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {a.dest: a.help for a in action._choices_actions}
            for name, child in action.choices.items():
                if not child.description and helps.get(name):
                    child.description = helps[name][0].upper() + helps[name][1:] + "."
                for arg in child._actions:
                    if not arg.option_strings and arg.help is None:
                        arg.help = POSITIONAL_HELP.get(arg.dest)
                _describe_everywhere(child)


def build_parser(modules: tuple[str, ...] = COMMAND_MODULES) -> argparse.ArgumentParser:
    parser = Parser(
        prog="eagle-console",
        description="Operations console for an SGLang + EAGLE-3 GPU node: a game plan you can run, mark and "
        "roll back, GPU processes and orphan killing, server/NCCL logs, drafter checks.",
        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"eagle-console {__version__}")
    parser.add_argument("--color", choices=color.MODES, default="auto",
                        help="colour the output: auto (a terminal, unless NO_COLOR is set), always, never")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in modules:
        importlib.import_module(name).register(sub)  # a missing command module is a bug: let it raise
    _add_color_everywhere(parser)
    _describe_everywhere(parser)
    return parser


def commands_of(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    sub = parser._subparsers._group_actions[0] if parser._subparsers else None  # type: ignore[union-attr]
    return dict(sub.choices) if sub is not None else {}


def opens_console(args_in: list[str]) -> bool:
    """`eagle-console`, `eagle-console PLAN.toml …` and `eagle-console tui …` open the console: they need
    only its command, so the other command modules are neither imported nor registered (~9 ms less before
    the console's first screen)."""
    return not args_in or args_in[0] == "tui" or args_in[0].endswith(".toml")


def _looks_like_plan(word: str) -> bool:
    """`eagle-console WORD`: a plan to open (a .toml, a path, an existing file), else a mistyped command."""
    return word.endswith(".toml") or os.sep in word or os.path.exists(word)


def main(argv: list[str] | None = None) -> int:
    selfmark.mark(selfmark.CONSOLE)  # a kill spares us, whatever our command line says (node/selfmark.py)
    args_in = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser((CONSOLE_MODULE,) if opens_console(args_in) else COMMAND_MODULES)
    commands = commands_of(parser)
    lead = 2 if args_in[:1] == ["--color"] else 1 if args_in[:1] and args_in[0].startswith("--color=") else 0
    rest = args_in[lead:]
    # `eagle-console [PLAN]` opens the console; an unknown word that is no plan is a mistyped command.
    if not rest:
        args_in = [*args_in, "tui"]
    elif rest[0] not in commands and not rest[0].startswith("-"):
        if not _looks_like_plan(rest[0]):
            hint = _did_you_mean(rest[0], commands)  # one line, as every bad usage (docs/cli.md)
            print(f"eagle-console: unknown command {rest[0]!r}{hint} (commands: {', '.join(commands)}; "
                  "to open a plan: eagle-console PLAN.toml)", file=sys.stderr)
            return 2
        args_in = [*args_in[:lead], "tui", *rest]
    args = parser.parse_args(args_in)
    color.configure(getattr(args, "color", "auto"))
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        return int(args.func(args) or 0)
    except CliError as exc:
        print(f"eagle-console: {exc}", file=sys.stderr)
        return exc.code
    except JournalError as exc:  # the file named, and what to do
        print(f"eagle-console: {exc}", file=sys.stderr)
        return 1
    except NoFreePort as exc:  # the operator's range, all taken: what to do, not an internal error
        print(f"eagle-console: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0
    except Exception as exc:  # never a traceback for the operator; EAGLE_CONSOLE_DEBUG=1 shows it
        if os.environ.get("EAGLE_CONSOLE_DEBUG"):
            raise
        print(f"eagle-console: internal error: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 2
