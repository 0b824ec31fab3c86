"""Helpers shared by the command modules: errors with exit codes, JSON output, plan/journal/sim lookup."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from eagle_console.ops.hints import Hints

if TYPE_CHECKING:
    import argparse

    from eagle_console.journal import Journal
    from eagle_console.plan.model import Plan


# How the CLI names its controls where a text from ops could use one ("fix and run again", "or use --cascade").
CLI_HINTS = Hints(run=" (eagle-console run)", mark=" (eagle-console mark)", cascade=", or use --cascade",
                  force=", or use --force to mark it rolled back without undoing anything",
                  rollback=" (eagle-console rollback)")


class CliError(Exception):
    """A one-line message for stderr and an exit code (2: bad usage or input, 1: ran and failed)."""

    def __init__(self, message: str, code: int = 2) -> None:
        super().__init__(message)
        self.code = code


def print_json(obj: Any) -> None:
    """One JSON document on stdout; an object carries "schema" (ops.export.JSON_SCHEMA)."""
    from eagle_console.ops.export import JSON_SCHEMA

    if isinstance(obj, dict) and "schema" not in obj:
        obj = {"schema": JSON_SCHEMA, **obj}
    json.dump(obj, sys.stdout, indent=2, default=str)
    sys.stdout.write("\n")
    sys.stdout.flush()


def add_json(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print one JSON document on stdout")


def add_sim(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--sim", metavar="DIR", default=None,
        help="read the simulated node in DIR instead of the real GPUs (or set EAGLE_CONSOLE_SIM)",
    )


def add_state_dir(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--state-dir", metavar="DIR", default=None,
        help="where the journal and logs live (default .eagle-console/<plan id>/ beside the plan; "
        "or set EAGLE_CONSOLE_STATE)",
    )


def sim_dir(args: argparse.Namespace) -> Path | None:
    """--sim DIR, else EAGLE_CONSOLE_SIM; a folder that is not a simulated node is bad input (exit 2), not a
    node without GPUs: the commands would otherwise read nothing and succeed."""
    given = getattr(args, "sim", None)
    value = given or os.environ.get("EAGLE_CONSOLE_SIM")
    if not value:
        return None
    path = Path(value).resolve()
    why = sim_problem(path)
    if why:
        raise CliError(f"{'--sim' if given else 'EAGLE_CONSOLE_SIM'} {value}: {why}")
    return path


def sim_problem(path: Path) -> str | None:
    """Why `path` is not a simulated node (eagle_console.sim.gpustate's layout), or None."""
    if not path.exists():
        return "no such folder"
    if not path.is_dir():
        return "not a folder"
    from eagle_console.inputfile import CONFIG_CAP, NOT_FOUND, InputFileError, load_json

    try:
        gpus = load_json(path / "node.json", CONFIG_CAP)["gpus"]
    except InputFileError as exc:
        if exc.why == NOT_FOUND:
            return "not a simulated node (no node.json)"
        return f"not a simulated node (node.json: {exc.why})"
    except (KeyError, TypeError) as exc:
        return f"not a simulated node (node.json: {type(exc).__name__}: {exc})"
    return None if isinstance(gpus, list) else "not a simulated node (node.json: `gpus` is not a list)"


def load_plan(path: str | os.PathLike[str], state_dir: str | None = None) -> Plan:
    """Load a plan or raise CliError(code 2) with the first error as PLAN:LINE:COL: message."""
    from eagle_console.plan.loader import PlanError
    from eagle_console.plan.loader import load_plan as _load

    override = state_dir or os.environ.get("EAGLE_CONSOLE_STATE")
    try:
        return _load(Path(path), state_dir=Path(override) if override else None)
    except PlanError as exc:
        raise CliError(exc.format_first()) from None


def open_journal(plan: Plan, readonly: bool = False) -> Journal:
    from eagle_console.journal import Journal
    from eagle_console.journal.operator import CLI_FACE

    journal = Journal.for_plan(plan, readonly=readonly, face=CLI_FACE)  # the console's open_console sets its own
    note = journal.file_note()  # a journal deleted or truncated must not pass as "everything pending"
    if note:
        print(f"eagle-console: warning: {note}", file=sys.stderr)
    return journal


def read_journal(plan: Plan) -> Journal:
    """The journal for a reader (status, export, log): opened read-only, runs whose supervisor died found
    `lost` in memory, so a reader never shows a dead run as running and never writes."""
    from eagle_console.engine.runner import Engine

    journal = open_journal(plan, readonly=True)
    Engine(plan, journal).reconcile()
    return journal
