"""The game plan as plain data: what the operator intends. Loaded by `plan.loader`, never written back.

The records are NamedTuples, not frozen dataclasses: just as immutable, and a fifth of the cost to
define (a frozen dataclass compiles six generated methods at import, ~1-2 ms each class; the console
imports this module before its first screen). Mapping fields default to one shared read-only mapping.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any, Literal, NamedTuple

Priority = Literal["high", "medium", "low"]
ActionKind = Literal["shell", "argv", "builtin"]

EMPTY: Mapping[str, Any] = MappingProxyType({})


class Action(NamedTuple):
    """A `run`, `check` or `rollback`: a shell string, an argv list, or a built-in with its `with` table.

    Strings are already ${var}-interpolated; in `shell`, interpolated values are shell-quoted.
    """

    kind: ActionKind
    shell: str | None = None
    argv: tuple[str, ...] | None = None
    uses: str | None = None
    with_: Mapping[str, Any] = EMPTY

    def describe(self) -> str:
        if self.kind == "shell":
            return self.shell or ""
        if self.kind == "argv":
            return " ".join(self.argv or ())
        return f"{self.uses}"


class Ready(NamedTuple):
    """How a service tells it is up: an HTTP URL answering 2xx, or a regex on its log."""

    http: str | None = None
    log: str | None = None
    timeout_s: float | None = None


class ExtractionWatch(NamedTuple):
    log: Path | None = None
    output: Path | None = None
    pattern: str = "*.pt"
    total: int | None = None


class Step(NamedTuple):
    id: str
    title: str
    phase_id: str
    priority: Priority = "medium"
    description: str | None = None
    needs: tuple[str, ...] = ()
    action: Action | None = None  # None: a manual step, done by hand and marked
    cwd: Path | None = None  # absolute (resolved against the plan folder)
    env: Mapping[str, str] = EMPTY  # [env] merged with the step's env
    timeout_s: float | None = None
    service: bool = False
    ready: Ready | None = None
    check: Action | None = None
    rollback: Action | None = None
    log: Path | None = None  # absolute; None → <state_dir>/logs/<step>-<run>.log
    watch_extraction: ExtractionWatch | None = None
    confirm: bool = False
    line: int | None = None  # where the step's table starts in the file
    node: str | None = None  # a cluster node's name (`eagle-node:NAME`): the step runs there as a Ray job
    approve: bool = False  # an agent's run waits for a person's approval (ops/approvals.py; docs/agent.md)

    @property
    def uses(self) -> str | None:
        return self.action.uses if self.action and self.action.kind == "builtin" else None


class Cluster(NamedTuple):
    """`[cluster]`: the Ray cluster whose nodes steps name (docs/cluster.md)."""

    address: str  # "auto" | "ray://host:10001" | "host:6379"


class Phase(NamedTuple):
    id: str
    title: str
    priority: Priority = "medium"
    needs: tuple[str, ...] = ()
    description: str | None = None
    steps: tuple[Step, ...] = ()
    line: int | None = None


def from_folder(folder: Path, value: str | os.PathLike[str]) -> Path:
    """A path written in a plan: `~` expanded, a relative one taken from the plan's `folder` (its own paths,
    and a built-in's paths in `with`, wherever they are read: the step's process, the console, the agent)."""
    return Path(os.path.normpath(Path(folder) / os.path.expanduser(os.fspath(value))))


class Plan(NamedTuple):
    id: str
    title: str
    path: Path  # the plan file, absolute
    state_dir: Path  # absolute
    phases: tuple[Phase, ...] = ()
    node: str | None = None
    description: str | None = None
    todo_label: str = "{title}"
    baseline: Mapping[str, float] = EMPTY
    vars: Mapping[str, Any] = EMPTY
    env: Mapping[str, str] = EMPTY
    cluster: Cluster | None = None

    @property
    def folder(self) -> Path:
        return self.path.parent

    def path_of(self, value: str | os.PathLike[str]) -> Path:
        """`value` as a path written in this plan (from_folder)."""
        return from_folder(self.folder, value)

    def steps(self) -> Iterator[Step]:
        for phase in self.phases:
            yield from phase.steps

    def step(self, step_id: str) -> Step | None:
        return next((s for s in self.steps() if s.id == step_id), None)

    def phase(self, phase_id: str) -> Phase | None:
        return next((p for p in self.phases if p.id == phase_id), None)

    def phase_of(self, step_id: str) -> Phase | None:
        return next((p for p in self.phases if any(s.id == step_id for s in p.steps)), None)

    def expand_needs(self, ids: tuple[str, ...]) -> tuple[str, ...]:
        """Step ids behind a `needs` list: a phase id stands for all of its steps."""
        out: list[str] = []
        for i in ids:
            phase = self.phase(i)
            out.extend(s.id for s in phase.steps) if phase else out.append(i)
        return tuple(out)
