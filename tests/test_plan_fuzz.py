"""Whatever the file holds, the loader gives a Plan or a PlanError — never another exception."""

from __future__ import annotations

import json
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from eagle_console.plan.loader import PlanError, parse_plan, tomllib
from eagle_console.plan.model import Plan

TEXT = st.characters(blacklist_categories=("Cs",))
KEYS = st.sampled_from([
    "id", "title", "priority", "needs", "run", "uses", "with", "timeout", "ready", "check", "rollback",
    "env", "cwd", "log", "watch", "confirm", "service", "step", "plan", "phase", "vars", "baseline",
    "extraction", "http", "todo_label", "state_dir", "scope",
]) | st.text(TEXT, min_size=1, max_size=8)

SCALARS = (
    st.integers(min_value=-(10 ** 30), max_value=10 ** 30) | st.floats(allow_nan=True) | st.booleans()
    | st.sampled_from(["0", "0.1", "high", "gpu.kill", "${x}", "$${", "${env:HOME}", "90s", "${", "{id}",
                       "sglang.server", "http://127.0.0.1:1/health", "{"])
    | st.text(TEXT, max_size=12)
)

VALUES = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(KEYS, inner, max_size=5),
    max_leaves=25,
)

STEP = st.dictionaries(KEYS, VALUES, max_size=6).map(
    lambda d: {"id": "s", "title": "t", **d} if len(d) % 2 else d)

DOCS = st.fixed_dictionaries({
    "plan": st.dictionaries(KEYS, VALUES, max_size=4).map(lambda d: {"id": "p", "title": "t", **d}),
    "phase": st.lists(st.fixed_dictionaries({"id": st.sampled_from(["0", "1", "s"]), "title": st.just("x")},
                                            optional={"step": st.lists(STEP, max_size=3),
                                                      "needs": VALUES, "priority": VALUES}),
                      max_size=3),
}, optional={"vars": st.dictionaries(KEYS, VALUES, max_size=4), "env": VALUES})


def _dump(value) -> str:
    """A TOML writer for the generated documents (inline tables and arrays only, one line each)."""
    lines = []
    for key, v in value.items():
        lines.append(f"{_key(key)} = {_inline(v)}")
    return "\n".join(lines) + "\n"


def _key(key: str) -> str:
    # JSON string escapes are TOML basic-string escapes; TOML also wants DEL escaped.
    return json.dumps(key, ensure_ascii=False).replace("\x7f", "\\u007f")


def _inline(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return "nan" if v != v else ("inf" if v == float("inf") else "-inf" if v == float("-inf") else repr(v))
    if isinstance(v, str):
        return _key(v)
    if isinstance(v, list):
        return "[" + ", ".join(_inline(x) for x in v) + "]"
    return "{ " + ", ".join(f"{_key(k)} = {_inline(x)}" for k, x in v.items()) + " }"


def _check(data: bytes | str, tmp: Path) -> None:
    try:
        plan = parse_plan(data, tmp / "plan.toml", environ={"HOME": "/root"})
    except PlanError as exc:
        assert exc.errors and exc.format_first()
        for e in exc.errors:
            assert e.line is None or e.line >= 1
    else:
        assert isinstance(plan, Plan)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(doc=DOCS)
def test_generated_documents(doc, tmp_path: Path) -> None:
    text = _dump(doc)
    tomllib.loads(text)  # the generator writes valid TOML; the loader must judge the content
    _check(text, tmp_path)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.binary(max_size=300))
def test_arbitrary_bytes(data: bytes, tmp_path: Path) -> None:
    _check(data, tmp_path)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=st.text(alphabet='[]{}="\'.,#\n abcid0123$', max_size=200))
def test_toml_like_text(text: str, tmp_path: Path) -> None:
    _check('[plan]\nid = "p"\ntitle = "t"\n' + text, tmp_path)


def test_deep_nesting(tmp_path: Path) -> None:
    _check("a = " + "[" * 5000 + "]" * 5000 + "\n", tmp_path)
    _check('[plan]\nid = "p"\ntitle = "t"\n[[phase]]\nid = "0"\ntitle = "x"\n[[phase.step]]\nid = "s"\n'
           'title = "t"\nuses = "json.set"\nwith = ' + "{ a = " * 400 + "1" + " }" * 400 + "\n", tmp_path)
