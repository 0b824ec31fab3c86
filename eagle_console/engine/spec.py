"""What a supervisor needs to know, written by the engine as JSON before the supervisor starts.

The supervisor never loads the plan: everything (argv, env, cwd, log, timeouts, ready) is resolved by the
engine, so a plan edited while a run goes on cannot change what that run does. Nor does a built-in's
action process: it gets a BuiltinCall (the `with` table as interpolated at start, and the rest).
"""

from __future__ import annotations

import datetime
import json
import os
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from eagle_console.statedir import private_dirs, rollback_log, step_log, write_private

if TYPE_CHECKING:
    from eagle_console.plan.model import Plan, Step


@dataclass
class BuiltinCall:
    """What one built-in action gets: `python -m eagle_console.engine.action --uses NAME`, this as JSON in
    its environment (EAGLE_CONSOLE_CALL: a command line is every local user's; pyenv.child_command)."""

    uses: str
    mode: str  # run | check | rollback | undo
    step_id: str
    args: dict[str, Any]  # the `with` table, interpolated when the engine resolved the run
    state_dir: str
    artifacts: str  # <state_dir>/artifacts/<step id>: persists from a run to its undo
    folder: str  # the plan's folder: relative paths in `with` resolve against it
    baseline: dict[str, float] = field(default_factory=dict)  # [plan.baseline]
    timeout_s: float | None = None  # the step's timeout (a service's default readiness wait)
    run_id: int | None = None
    force: bool = False  # rollback --force
    service_run: dict[str, Any] = field(default_factory=dict)  # undo of a service: run_id, pid, pgid, sid


def _plain(value: Any) -> Any:
    # TOML dates and times have no JSON form: a built-in gets them as ISO 8601 strings.
    if isinstance(value, (datetime.date, datetime.time)):
        return value.isoformat()
    raise TypeError(f"{type(value).__name__} cannot go into a built-in call")


def encode_call(call: BuiltinCall) -> str:
    return json.dumps(asdict(call), default=_plain)


def decode_call(text: str) -> BuiltinCall:
    return BuiltinCall(**json.loads(text))


@dataclass
class ReadySpec:
    http: str | None = None
    log: str | None = None
    timeout_s: float | None = None


@dataclass
class ActionSpec:
    run_id: int
    step_id: str
    journal: str
    log: str
    argv: list[str]
    cwd: str
    env: dict[str, str]  # overrides: plan [env] + step env + ours, laid over the supervisor's own environment
    timeout_s: float | None = None
    grace_s: float = 10.0
    service: bool = False
    ready: ReadySpec | None = None
    check_argv: list[str] | None = None


@dataclass
class UndoItem:
    step_id: str
    description: str
    argv: list[str] | None = None  # a rollback command or a built-in undo
    stop: dict[str, Any] | None = None  # a service run to stop first: run_id, pid, pgid, sid
    mark_only: bool = False  # manual step: nothing to execute
    env: dict[str, str] | None = None  # the step's own environment (else the rollback's)
    node: str | None = None  # a step with `node`: its argv runs there, as a Ray job (cluster/node_undo.py)
    cluster: str | None = None  # the plan's [cluster] address, with `node`


@dataclass
class RollbackSpec:
    rollback_id: int
    target: str
    journal: str
    log: str
    cwd: str
    env: dict[str, str]  # overrides, as ActionSpec.env
    items: list[UndoItem] = field(default_factory=list)
    grace_s: float = 10.0


def write_spec(path: Path, spec: ActionSpec | RollbackSpec) -> None:
    private_dirs(path.parent)
    data = spec_data(spec)
    tmp = path.with_name(path.name + ".tmp")
    tmp.unlink(missing_ok=True)  # a leftover would keep its old mode
    write_private(tmp, json.dumps(data))
    os.replace(tmp, path)


def read_spec(path: Path) -> ActionSpec | RollbackSpec:
    from eagle_console.inputfile import STATE_CAP, load_json

    return spec_from_data(load_json(path, STATE_CAP))


def spec_data(spec: ActionSpec | RollbackSpec) -> dict[str, Any]:
    return {"type": type(spec).__name__, **asdict(spec)}


def spec_from_data(data: dict[str, Any]) -> ActionSpec | RollbackSpec:
    kind = data.pop("type")
    if kind == "ActionSpec":
        ready = data.pop("ready")
        return ActionSpec(**data, ready=ReadySpec(**ready) if ready else None)
    items = [UndoItem(**i) for i in data.pop("items")]
    return RollbackSpec(**data, items=items)


def step_log_path(plan: Plan, step: Step, run_id: int) -> Path:
    """Where a run of `step` writes: the step's `log`, else `logs/<step>-<run>.log` in the state dir."""
    return step.log or step_log(plan.state_dir, step.id, run_id)


def rollback_log_path(plan: Plan, rollback_id: int) -> Path:
    """Where rollback `rollback_id`'s supervisor writes."""
    return rollback_log(plan.state_dir, rollback_id)


def kill_grace_s() -> float:
    """SIGTERM → SIGKILL grace for timeouts and rollbacks: node.grace's one parser of EAGLE_CONSOLE_KILL_GRACE.

    Called after the run or rollback is journaled, so a bad value cannot refuse it any more: it is
    reported on stderr and the default grace is used instead of a negative or made-up one.
    """
    from eagle_console.node.grace import DEFAULT_GRACE_S, GraceError, resolve_grace

    try:
        return resolve_grace()
    except GraceError as exc:
        print(f"eagle-console: {exc}; using {DEFAULT_GRACE_S:g}s", file=sys.stderr)
        return DEFAULT_GRACE_S
