"""What an agent's answer may hold: paths inside the plan's folder or state dir only, no `[env]` value, and
a bounded size (lines, characters, items, bytes). Every tool's answer passes through `redact` and `bound`."""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from eagle_console.plan.model import Plan

MAX_RESPONSE_BYTES = 64 * 1024  # one answer, as JSON
MAX_STRING = 4000  # characters of one string value
MAX_ITEMS = 200  # entries of one list
MAX_LOG_LINES = 200  # a log tail, at most (the default is smaller: LOG_LINES)
LOG_LINES = 50
MAX_LINE = 400  # characters of one log line
MAX_TAIL_BYTES = 32 * 1024  # bytes read from the end of a log for a tail
MIN_SECRET = 6  # [env] values shorter than this ("LL", "Ring", "4") are not hunted for in text
CUT = "…"


class Outside(ValueError):
    """A path the agent may not read: outside the plan's folder and state dir."""


def readable(path: str | os.PathLike[str], plan: Plan) -> Path:
    """`path` resolved (symlinks followed) when it lies inside the plan's folder or its state dir, else Outside."""
    real = Path(os.path.realpath(path))
    for root in (plan.folder, plan.state_dir):
        base = Path(os.path.realpath(root))
        if real == base or base in real.parents:
            return real
    raise Outside(f"{path} is outside the plan's folder ({plan.folder}) and state dir ({plan.state_dir}): "
                  "not read")


def tail(path: Path, lines: int) -> tuple[list[str], bool]:
    """The last `lines` lines (at most MAX_LOG_LINES, from the last MAX_TAIL_BYTES), each cleaned of control
    characters and cut to MAX_LINE; (lines, whether anything before them was left out). Regular files only."""
    from eagle_console.node.tail import clean_line, last_lines_offset, open_regular

    want = max(1, min(int(lines), MAX_LOG_LINES))
    fd = open_regular(path)
    try:
        size = os.fstat(fd).st_size
        start = last_lines_offset(fd, size, want)
        partial = size - MAX_TAIL_BYTES > start  # long lines: the byte bound comes first
        start = max(start, size - MAX_TAIL_BYTES)
        data = os.pread(fd, size - start, start)
    finally:
        os.close(fd)
    raw = data.split(b"\n")
    if raw and raw[-1] == b"":
        raw.pop()
    if partial and raw:
        raw = raw[1:]  # the byte bound cut into a line: drop its end
    out = [_cut(clean_line(r), MAX_LINE) for r in raw[-want:]]
    return out, start > 0


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + CUT


class Redactor:
    """Hides `[env]` values: env tables become their keys, and each value of MIN_SECRET characters or more is
    replaced wherever it appears in text (`${env:NAME}`), longest first."""

    def __init__(self, envs: Iterable[dict[str, str]]) -> None:
        pairs: dict[str, str] = {}
        for env in envs:
            for key, value in env.items():
                if isinstance(value, str) and len(value) >= MIN_SECRET:
                    pairs.setdefault(value, key)
        self._pairs = sorted(pairs.items(), key=lambda kv: -len(kv[0]))

    @classmethod
    def for_plan(cls, plan: Plan) -> Redactor:
        return cls([dict(plan.env), *(dict(s.env) for s in plan.steps())])

    def text(self, text: str) -> str:
        for value, key in self._pairs:
            if value in text:
                text = text.replace(value, f"${{env:{key}}}")
        return text

    def doc(self, value: Any, key: str | None = None) -> Any:
        if key == "env" and isinstance(value, dict):
            return sorted(value)  # the names only: a run's env overrides, a plan's [env]
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            return {k: self.doc(v, k) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return [self.doc(v) for v in value]
        return value


def bound(doc: Any) -> tuple[Any, bool]:
    """`doc` with strings cut to MAX_STRING and lists to MAX_ITEMS; (doc, whether anything was cut). Past
    MAX_RESPONSE_BYTES even then, strings and lists are cut harder until it fits."""
    cut = [False]
    limits = [(MAX_STRING, MAX_ITEMS), (1000, 50), (200, 20), (80, 5)]
    for strings, items in limits:
        out = _bound(doc, strings, items, cut)
        if len(json.dumps(out, default=str)) <= MAX_RESPONSE_BYTES:
            return out, cut[0]
        cut[0] = True
    return {"error": {"code": "too_large", "message": "the answer stays over "
                      f"{MAX_RESPONSE_BYTES} bytes after cutting: ask for less (fewer lines, one step)"}}, True


def _bound(value: Any, strings: int, items: int, cut: list[bool]) -> Any:
    if isinstance(value, str):
        if len(value) > strings:
            cut[0] = True
            return _cut(value, strings)
        return value
    if isinstance(value, dict):
        return {k: _bound(v, strings, items, cut) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        if len(value) > items:
            cut[0] = True
            value = list(value)[-items:] if _is_lines(value) else list(value)[:items]
        return [_bound(v, strings, items, cut) for v in value]
    return value


def _is_lines(value: Any) -> bool:
    """A list of strings is a log's lines: its end matters most."""
    return bool(value) and all(isinstance(v, str) for v in value)
