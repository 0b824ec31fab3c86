"""The game plan as plain data: what the operator intends. Loaded by `plan.loader`, never written back."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

Priority = Literal["high", "medium", "low"]
ActionKind = Literal["shell", "argv", "builtin"]

# Every built-in the spec names; the loader accepts exactly these for `uses`.
BUILTINS: tuple[str, ...] = (
    "gpu.kill",
    "gpu.wait_free",
    "json.set",
    "drafter.check",
    "drafter.compare_vocab",
    "sglang.server",
    "http.wait",
    "sglang.bench",
    "extraction.verify",
)


@dataclass(frozen=True)
class Action:
    """A `run`, `check` or `rollback`: a shell string, an argv list, or a built-in with its `with` table.

    Strings are already ${var}-interpolated; in `shell`, interpolated values are shell-quoted.
    """

    kind: ActionKind
    shell: str | None = None
    argv: tuple[str, ...] | None = None
    uses: str | None = None
    with_: dict[str, Any] = field(default_factory=dict)

    def describe(self) -> str:
        if self.kind == "shell":
            return self.shell or ""
        if self.kind == "argv":
            return " ".join(self.argv or ())
        return f"{self.uses}"


@dataclass(frozen=True)
class Ready:
    """How a service tells it is up: an HTTP URL answering 2xx, or a regex on its log."""

    http: str | None = None
    log: str | None = None
    timeout_s: float | None = None


@dataclass(frozen=True)
class ExtractionWatch:
    log: Path | None = None
    output: Path | None = None
    pattern: str = "*.pt"
    total: int | None = None


@dataclass(frozen=True)
class Step:
    id: str
    title: str
    phase_id: str
    priority: Priority = "medium"
    description: str | None = None
    needs: tuple[str, ...] = ()
    action: Action | None = None  # None: a manual step, done by hand and marked
    cwd: Path | None = None  # absolute (resolved against the plan folder)
    env: dict[str, str] = field(default_factory=dict)  # [env] merged with the step's env
    timeout_s: float | None = None
    service: bool = False
    ready: Ready | None = None
    check: Action | None = None
    rollback: Action | None = None
    log: Path | None = None  # absolute; None → <state_dir>/logs/<step>-<run>.log
    watch_extraction: ExtractionWatch | None = None
    confirm: bool = False
    line: int | None = None  # where the step's table starts in the file

    @property
    def uses(self) -> str | None:
        return self.action.uses if self.action and self.action.kind == "builtin" else None


@dataclass(frozen=True)
class Phase:
    id: str
    title: str
    priority: Priority = "medium"
    needs: tuple[str, ...] = ()
    description: str | None = None
    steps: tuple[Step, ...] = ()
    line: int | None = None


@dataclass(frozen=True)
class Plan:
    id: str
    title: str
    path: Path  # the plan file, absolute
    state_dir: Path  # absolute
    phases: tuple[Phase, ...] = ()
    node: str | None = None
    description: str | None = None
    todo_label: str = "{title}"
    baseline: dict[str, float] = field(default_factory=dict)
    vars: dict[str, Any] = field(default_factory=dict)
    env: dict[str, str] = field(default_factory=dict)

    @property
    def folder(self) -> Path:
        return self.path.parent

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
