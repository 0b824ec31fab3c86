"""Plan TOML text, written once: the plans `init`, the demo and the multi-node demo write are built here from
data (tables of keys, phases of steps), each key with an optional comment, every value written as TOML.

A key is `(name, value)` or `(name, value, comment)`; a `Note` is a comment line of its own. Values are
str, bool, int, float, lists and dicts (a dict is an inline table); `${var}` references are plain strings.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, NamedTuple

COMMENT_AT = 42  # the column a key's comment starts at, where the key leaves room

# EAGLE-3 as a chain: eagle_topk = 1 wants num_draft_tokens = num_steps + 1
SPECULATIVE_CHAIN = {"algorithm": "EAGLE3", "num_steps": 2, "eagle_topk": 1, "num_draft_tokens": 3}


class Note(NamedTuple):
    """A comment line of its own among the keys."""

    text: str


Key = tuple[str, Any] | tuple[str, Any, str] | Note


class Step(NamedTuple):
    keys: Sequence[Key]
    with_: Sequence[Key] | None = None  # written as its own `[phase.step.with]` table, after the keys


class Phase(NamedTuple):
    keys: Sequence[Key]
    steps: Sequence[Step]


def toml(value: Any) -> str:
    """`value` as TOML (a JSON string is a TOML basic string: the same escapes, control characters escaped)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):  # readable beyond ASCII; DEL, which TOML wants escaped, escaped
        return json.dumps(value, ensure_ascii=False).replace("\x7f", "\\u007f")
    if isinstance(value, Mapping):
        return "{ " + ", ".join(f"{k} = {toml(v)}" for k, v in value.items()) + " }" if value else "{}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(toml(v) for v in value) + "]"
    raise TypeError(f"no TOML for {type(value).__name__}")


def key_lines(keys: Iterable[Key], indent: str = "") -> list[str]:
    out = []
    for key in keys:
        if isinstance(key, Note):
            out.append(f"{indent}# {key.text}")
            continue
        line = f"{indent}{key[0]} = {toml(key[1])}"
        if len(key) > 2:
            line = f"{line:<{COMMENT_AT - 1}} # {key[2]}" if len(line) < COMMENT_AT else f"{line}  # {key[2]}"
        out.append(line)
    return out


def table(header: str, keys: Iterable[Key], comment: str | None = None) -> str:
    head = f"[{header}]" if comment is None else f"{f'[{header}]':<{COMMENT_AT - 1}} # {comment}"
    return "\n".join([head, *key_lines(keys)]) + "\n"


def phase(p: Phase) -> str:
    lines = ["[[phase]]", *key_lines(p.keys)]
    for step in p.steps:
        lines += ["", "  [[phase.step]]", *key_lines(step.keys, "  ")]
        if step.with_ is not None:
            lines += ["", "    [phase.step.with]", *key_lines(step.with_, "    ")]
    return "\n".join(lines) + "\n"


def plan_text(preamble: Iterable[str], sections: Iterable[str], phases: Iterable[Phase]) -> str:
    """The whole plan: comment lines first (a line that starts with `#` as it is: `#:schema URL`), then each
    section (a `table`), then the phases, a blank line between them."""
    head = "".join(f"{line}\n" if line.startswith("#") else f"# {line}\n" for line in preamble)
    return head + "\n" + "\n".join([*sections, *(phase(p) for p in phases)])


def with_own_pythonpath(env: list[Key], entry: str | None) -> list[Key]:
    """A demo's [env] with this checkout first on PYTHONPATH (its steps run this package's sim), unless
    installed (`entry` None: pyenv.own_entry)."""
    return [("PYTHONPATH", entry), *env] if entry else env


def extraction_step(step_id: str, title: str, python: str, out: str, samples: int, log: str, *,
                    node: str | None = None, watch: Mapping[str, Any] | None = None,
                    description: str | None = None) -> Step:
    """A simulated hidden-state extraction (eagle_console.sim.extract) writing `samples` files to `out`,
    pinned to `node` when given, watched (`watch.extraction`) when given."""
    run = [python, "-m", "eagle_console.sim.extract", "--out", out, "--samples", str(samples), "--rate", "15",
           "--bytes-per-sample", "3080000000"]
    keys: list[Key] = [("id", step_id), ("title", title)]
    keys += [("description", description)] if description else []
    keys += [("node", node)] if node else []
    keys += [("run", run), ("log", log)]
    keys += [("watch", {"extraction": dict(watch)})] if watch else []
    return Step([*keys, ("rollback", ["rm", "-rf", out])])
