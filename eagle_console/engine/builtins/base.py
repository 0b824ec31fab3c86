"""The interface every built-in action (`uses = "..."`) implements.

A built-in never runs inside the console: the supervisor starts `python -m eagle_console.engine.action`
with a BuiltinCall the engine resolved (it never loads the plan), which builds an ActionContext from it
alone and calls `run` (or `undo`). Whatever it prints goes to the
step's log; `ctx.result()` prints `::result NAME=VALUE` lines that the supervisor records. The exit code
is the return value. A service built-in returns the argv to exec from `service_argv` instead: the
action process becomes the service, so its process group is the one that rollback stops.
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from eagle_console.plan.uses import BUILTINS

if TYPE_CHECKING:
    from eagle_console.engine.spec import BuiltinCall
    from eagle_console.plan.model import Ready


class BuiltinError(Exception):
    """A clear, expected failure: printed as one line to the step's log, exit status 1."""


@dataclass
class ActionContext:
    step_id: str
    args: dict[str, Any]  # the `with` table, interpolated
    state_dir: Path
    artifacts: Path  # <state_dir>/artifacts/<step id>: persists from a run to its undo
    folder: Path  # the plan's folder: relative paths in `with` resolve against it
    baseline: dict[str, float] = field(default_factory=dict)  # [plan.baseline]
    timeout_s: float | None = None  # the step's timeout
    sim_dir: Path | None = None  # EAGLE_CONSOLE_SIM of the action's environment
    run_id: int | None = None
    force: bool = False  # rollback --force (e.g. json.set undo despite drift)
    service_run: dict[str, Any] = field(default_factory=dict)  # for undo of a service: pid, pgid, sid

    @classmethod
    def from_call(cls, call: BuiltinCall, sim_dir: Path | None = None) -> ActionContext:
        return cls(step_id=call.step_id, args=dict(call.args), state_dir=Path(call.state_dir),
                   artifacts=Path(call.artifacts), folder=Path(call.folder), baseline=dict(call.baseline),
                   timeout_s=call.timeout_s, sim_dir=sim_dir, run_id=call.run_id, force=call.force,
                   service_run=dict(call.service_run))

    def path(self, value: str | os.PathLike[str]) -> Path:
        """A path given in `with`: `~` expanded and a relative one taken from the plan's folder, as the plan's
        own paths are (plan/reader.local_path) — not from the step's `cwd`, and never `<plan folder>/~/…`."""
        from eagle_console.plan.model import from_folder

        return from_folder(self.folder, value)

    def result(self, name: str, value: float | int | str) -> None:
        print(f"::result {name}={value}", flush=True)

    def say(self, message: str) -> None:
        print(message, flush=True)

    def save(self, name: str, data: Any) -> None:
        """Persist JSON for a later undo (written atomically under `artifacts`)."""
        from eagle_console.statedir import private_dirs, write_private

        private_dirs(self.artifacts)
        tmp = self.artifacts / f".{name}.tmp"
        tmp.unlink(missing_ok=True)
        write_private(tmp, json.dumps(data))  # the state dir's files are 0600
        tmp.replace(self.artifacts / name)

    def journal(self):
        """The plan's journal, for built-ins that record more than results (a kill, say)."""
        from eagle_console.journal import Journal
        from eagle_console.statedir import journal_path

        return Journal(journal_path(self.state_dir))

    def load(self, name: str) -> Any | None:
        """What `save` kept, or None when nothing was: a record that is there but cannot be read (another
        user's, not a regular file, not JSON) is said as such, never as "no backup recorded"."""
        from eagle_console.inputfile import NOT_FOUND, STATE_CAP, InputFileError, load_json

        try:
            return load_json(self.artifacts / name, STATE_CAP)
        except InputFileError as exc:
            if exc.why == NOT_FOUND:
                return None
            raise BuiltinError(f"what this step's run kept for later cannot be used: {exc}") from None


class Builtin:
    """Subclass per built-in; the registry in `engine.builtins` maps names to these classes."""

    # A built-in's traits, declared here once; the loader, the engine, rollback and the console read them.
    name: ClassVar[str] = ""
    # `service` and `confirm` shape the step when the plan is read: declared in plan/uses.py, taken from there
    service: ClassVar[bool] = False  # `service_argv` is exec'd and the step completes on `ready`
    confirm: ClassVar[bool] = False  # a step using it asks before it runs (unless the plan says confirm = false)
    undo_marks: ClassVar[str | None] = None  # its undo only marks the step rolled back; the sentence says why
    drafter_findings: ClassVar[bool] = False  # the console shows a drafter report for a step using it
    kill_preview: ClassVar[bool] = False  # its `with` is a kill scope: the console lists whom it would signal

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        traits = BUILTINS.get(cls.name)
        if traits is not None:
            cls.service, cls.confirm = traits.service, traits.confirm

    def validate(self, args: dict[str, Any]) -> list[str]:
        """Problems with `with` found without running (also used by `validate`)."""
        return []

    def run(self, ctx: ActionContext) -> int:
        raise NotImplementedError

    def service_argv(self, ctx: ActionContext) -> list[str]:
        raise NotImplementedError

    def default_ready(self, ctx: ActionContext) -> Ready | None:
        """For services with no `ready` key in the plan."""
        return None

    @classmethod
    def has_undo(cls) -> bool:
        return cls.undo is not Builtin.undo

    def undo(self, ctx: ActionContext) -> int:
        """Built-in undo. For services the engine has already stopped the process group."""
        print(f"{self.name} has no built-in undo; give the step a `rollback`", file=sys.stderr)
        return 1


def seconds(value: Any) -> float:
    """A `with` duration: seconds as a number, or "90s", "30m", "2h", "1h30m"."""
    from eagle_console.plan.durations import parse_duration

    return parse_duration(value)


def value_errors(*checks) -> list[str]:
    """Run each check (a callable that parses a `with` value) and collect its ValueError messages."""
    problems = []
    for check in checks:
        try:
            check()
        except ValueError as exc:
            problems.append(str(exc))
    return problems
