"""The CLI follows its ecosystem's conventions (issue #19): did-you-mean, shell completion, --color and
NO_COLOR, documented exit codes / environment / JSON, a plan schema for editors, `init`."""

from __future__ import annotations

import json
import os
import pty
import re
import shutil
import subprocess
import sys
from pathlib import Path

import clikit
import pytest

REPO = Path(__file__).resolve().parent.parent
SCHEMA = REPO / "eagle_console" / "plan" / "schema.json"
DOCS = REPO / "docs" / "cli.md"

PLAN = """[plan]
id = "conv"
title = "conventions"

[[phase]]
id = "p"
title = "P"
  [[phase.step]]
  id = "p.1"
  title = "done"
  [[phase.step]]
  id = "p.2"
  title = "broken"
"""


def cli(*args: str | Path, env: dict[str, str] | None = None, cwd: Path = REPO) -> subprocess.CompletedProcess[str]:
    return clikit.run(args, timeout=60, cwd=cwd, env={**os.environ, **(env or {})})


@pytest.fixture
def plan(tmp_path: Path) -> Path:
    path = tmp_path / "plan.toml"
    path.write_text(PLAN)
    assert cli("mark", path, "p.1", "completed").returncode == 0
    assert cli("mark", path, "p.2", "failed").returncode == 0
    return path


# -- did you mean ---------------------------------------------------------------------------------------------------

def test_mistyped_command_says_did_you_mean(plan: Path) -> None:
    """Defect: `eagle-console stauts PLAN` said "unrecognized arguments: PLAN" (it was taken for a plan)."""
    r = cli("stauts", plan)
    assert r.returncode == 2
    assert "unknown command 'stauts', did you mean 'status'?" in r.stderr
    assert "unrecognized arguments" not in r.stderr and "Traceback" not in r.stderr


def test_mistyped_choice_says_did_you_mean(plan: Path) -> None:
    r = cli("mark", plan, "p.1", "complete")
    assert r.returncode == 2 and "did you mean 'completed'?" in r.stderr
    r = cli("drafter", "chek", "x")
    assert r.returncode == 2 and "did you mean 'check'?" in r.stderr


def test_a_plan_path_still_opens_the_console_path(tmp_path: Path) -> None:
    """A word that is a plan (a .toml, a path) is not a mistyped command: it goes to the console as before."""
    r = cli(tmp_path / "missing.toml")
    assert r.returncode == 2 and "unknown command" not in r.stderr and "missing.toml" in r.stderr


# -- completion -----------------------------------------------------------------------------------------------------

def complete(script: Path, *words: str) -> list[str]:
    """Bash's COMPREPLY for the command line `words` (the last word is the one being completed)."""
    line = " ".join(f"'{w}'" for w in ("eagle-console", *words))
    code = (f'source {script}; COMP_WORDS=({line}); COMP_CWORD={len(words)}; _eagle_console; '
            'printf "%s\\n" "${COMPREPLY[@]}"')
    out = subprocess.run(["bash", "-c", code], capture_output=True, text=True, timeout=30)
    assert out.returncode == 0, out.stderr
    return [w for w in out.stdout.splitlines() if w]


def test_bash_completion_loads_and_completes(tmp_path: Path) -> None:
    gen = f"{sys.executable} -m eagle_console completion bash"
    loaded = subprocess.run(["bash", "-c", f"source <({gen}) && complete -p eagle-console"], capture_output=True,
                            text=True, timeout=60, cwd=REPO, env=os.environ)
    assert loaded.returncode == 0, loaded.stderr
    assert "-F _eagle_console eagle-console" in loaded.stdout
    script = tmp_path / "ec.bash"
    script.write_text(cli("completion", "bash").stdout)
    assert complete(script, "sta") == ["status"]
    assert complete(script, "drafter", "c") == ["check", "compare-vocab"]
    assert complete(script, "mark", "plan.toml", "0.1", "comp") == ["completed"]
    assert complete(script, "export", "plan.toml", "--format", "m") == ["markdown"]
    assert complete(script, "status", "--color", "n") == ["never"]
    assert "--json" in complete(script, "status", "plan.toml", "--")
    assert complete(script, "init") == ["init"]


@pytest.mark.skipif(shutil.which("zsh") is None, reason="zsh is not installed")
def test_zsh_completion_parses_and_registers(tmp_path: Path) -> None:
    script = tmp_path / "_eagle-console"
    script.write_text(cli("completion", "zsh").stdout)
    assert subprocess.run(["zsh", "-n", str(script)], capture_output=True, timeout=30).returncode == 0
    out = subprocess.run(["zsh", "-fc", f"autoload -U compinit; compinit -u -D; source {script}; "
                                        "print -- ${_comps[eagle-console]}"],
                         capture_output=True, text=True, timeout=30)
    assert out.stdout.strip() == "_eagle_console", out.stderr
    assert ":status:(pending in_progress completed failed skipped rolled_back)" in script.read_text()


# -- colour ---------------------------------------------------------------------------------------------------------

GREEN, RED = "\x1b[32m", "\x1b[1;31m"


def on_tty(*args: str | Path, env: dict[str, str], columns: int | None = None) -> str:
    """The command's stdout when stdout is a terminal (a pseudo-terminal), `columns` wide if given."""
    leader, follower = pty.openpty()
    if columns is not None:
        import fcntl
        import struct
        import termios

        fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 40, columns, 0, 0))
    try:
        r = subprocess.run([sys.executable, "-m", "eagle_console", *map(str, args)], stdout=follower,
                           stderr=subprocess.PIPE, timeout=60, env={**os.environ, **env})
        os.close(follower)
        follower = -1
        chunks = []
        while True:
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # EIO: the terminal's other end is closed and drained
                break
            if not chunk:
                break
            chunks.append(chunk)
    finally:
        os.close(leader)
        if follower >= 0:
            os.close(follower)
    assert r.returncode == 0, r.stderr
    return b"".join(chunks).decode()


def test_status_colours_on_a_terminal_only(plan: Path) -> None:
    env = {"NO_COLOR": "", "TERM": "xterm"}
    tty = on_tty("status", plan, env=env)
    assert f"{GREEN}✔ p.1" in tty and f"{RED}failed" in tty
    piped = cli("status", plan, env=env).stdout
    assert "\x1b[" not in piped and "✔ p.1" in piped
    assert "\x1b[" not in on_tty("status", plan, "--color", "never", env=env)
    assert f"{GREEN}completed" in cli("status", plan, "--color", "always", env=env).stdout
    assert f"{GREEN}completed" in cli("--color=always", "status", plan, env=env).stdout


def test_no_color_turns_auto_off_and_always_wins(plan: Path) -> None:
    assert "\x1b[" not in on_tty("status", plan, env={"NO_COLOR": "1", "TERM": "xterm"})
    assert GREEN in on_tty("status", plan, "--color", "always", env={"NO_COLOR": "1", "TERM": "xterm"})


def test_colour_does_not_import_rich_or_textual(plan: Path, tmp_path: Path) -> None:
    from test_core_imports import BLOCKER

    block = tmp_path / "block"
    block.mkdir()
    (block / "sitecustomize.py").write_text(BLOCKER)
    log = tmp_path / "blocked.log"
    env = {"EC_BLOCKED_LOG": str(log), "PYTHONPATH": os.pathsep.join([str(block), os.environ.get("PYTHONPATH", "")])}
    r = cli("status", plan, "--color", "always", env=env)
    assert r.returncode == 0 and GREEN in r.stdout, r.stderr
    assert not log.exists(), log.read_text()


# -- documented exit codes, environment, JSON --------------------------------------------------------------------------

# The startup benchmark's, and the marker of the console's own PYTHONPATH entry (pyenv.py).
INTERNAL_ENV = {"EAGLE_CONSOLE_SPAWNED_AT", "EAGLE_CONSOLE_EXIT_AFTER_FIRST_PAINT", "EAGLE_CONSOLE_OWN_PYTHONPATH",
                "EAGLE_CONSOLE_CALL"}


def env_names_in_code() -> set[str]:
    names: set[str] = set()
    for path in (REPO / "eagle_console").rglob("*.py"):
        names |= set(re.findall(r"EAGLE_CONSOLE_[A-Z_]+[A-Z]", path.read_text()))
    return names


def test_help_and_docs_give_exit_codes_and_every_environment_variable() -> None:
    help_text = cli("--help").stdout
    docs = DOCS.read_text()
    assert "exit status:" in help_text and "NO_COLOR" in help_text
    for code in ("0", "1", "2", "130"):
        assert re.search(rf"^\s+{code}\s", help_text, re.M), code
        assert f"| {code} |" in docs, code
    names = env_names_in_code()
    assert {"EAGLE_CONSOLE_DEBUG", "EAGLE_CONSOLE_GPU_BACKEND", "EAGLE_CONSOLE_KILL_GRACE"} <= names
    assert not [n for n in names if f"`{n}`" not in docs], "undocumented in docs/cli.md"
    set_for_actions = {"EAGLE_CONSOLE_STEP", "EAGLE_CONSOLE_RUN_ID", "EAGLE_CONSOLE_CLUSTER", "EAGLE_CONSOLE_RANK_ENV"}
    for_operators = names - INTERNAL_ENV - set_for_actions
    assert not [n for n in for_operators if n not in help_text], "missing from --help"


def json_commands() -> list[str]:
    from eagle_console.cli import build_parser, commands_of

    found = []
    for name, sub in commands_of(build_parser()).items():
        for child_name, child in ({name: sub} | {f"{name} {k}": v for k, v in commands_of(sub).items()}).items():
            if any("--json" in a.option_strings for a in child._actions):
                found.append(child_name)
    return found


def test_every_json_command_is_documented() -> None:
    commands = json_commands()
    assert {"validate", "status", "gpus", "orphans", "drafter check", "bench"} <= set(commands)
    docs = DOCS.read_text()
    assert not [c for c in commands if f"### `{c} --json`" not in docs]


def test_json_documents_carry_schema_version(plan: Path) -> None:
    data = REPO / "tests" / "data"
    for argv in (["validate", plan, "--json"], ["status", plan, "--json"],
                 ["server-log", data / "sglang" / "sglang4547_cuda_oom_traceback.txt", "--json"],
                 ["gpus", "--json"]):
        doc = json.loads(cli(*argv, env={"EAGLE_CONSOLE_GPU_BACKEND": "none"}).stdout)
        assert doc["schema"] == 1, argv


# -- the plan schema ------------------------------------------------------------------------------------------------

def schema_errors(value, schema: dict, root: dict, where: str = "") -> list[str]:
    """The JSON Schema draft-4 keywords schema.json uses; every failure as 'where: why'."""
    if "$ref" in schema:
        return schema_errors(value, root["definitions"][schema["$ref"].split("/")[-1]], root, where)
    errs: list[str] = []
    types = schema.get("type")
    if types is not None:
        kinds = {"string": str, "boolean": bool, "object": dict, "array": list,
                 "integer": int, "number": (int, float)}
        wanted = [types] if isinstance(types, str) else types
        if not any(isinstance(value, kinds[t]) and not (t in ("integer", "number") and isinstance(value, bool))
                   for t in wanted):
            return [f"{where}: {value!r} is not {types}"]
    if "enum" in schema and value not in schema["enum"]:
        errs.append(f"{where}: {value!r} not in {schema['enum']}")
    if isinstance(value, str):
        if "pattern" in schema and not re.search(schema["pattern"], value):
            errs.append(f"{where}: {value!r} does not match {schema['pattern']}")
        if len(value) < schema.get("minLength", 0):
            errs.append(f"{where}: too short")
    if isinstance(value, (int, float)) and not isinstance(value, bool) and "minimum" in schema:
        if value < schema["minimum"] or (schema.get("exclusiveMinimum") and value == schema["minimum"]):
            errs.append(f"{where}: {value} below the minimum")
    if isinstance(value, list):
        if len(value) < schema.get("minItems", 0):
            errs.append(f"{where}: too few items")
        for i, item in enumerate(value):
            errs += schema_errors(item, schema.get("items", {}), root, f"{where}[{i}]")
    if isinstance(value, dict):
        errs += [f"{where}: missing {k}" for k in schema.get("required", []) if k not in value]
        props, patterns = schema.get("properties", {}), schema.get("patternProperties", {})
        for key, item in value.items():
            matched = [s for p, s in patterns.items() if re.search(p, key)]
            if key in props:
                matched.append(props[key])
            if not matched and schema.get("additionalProperties") is False:
                errs.append(f"{where}: unknown key {key!r}")
            elif not matched and isinstance(schema.get("additionalProperties"), dict):
                matched.append(schema["additionalProperties"])
            for sub in matched:
                errs += schema_errors(item, sub, root, f"{where}.{key}")
    for sub in schema.get("allOf", []):
        errs += schema_errors(value, sub, root, where)
    branches = [schema_errors(value, s, root, where) for s in schema.get("anyOf", [])]
    if branches and all(branches):
        errs.append(f"{where}: matches no branch of anyOf: " + "; ".join(e for b in branches for e in b))
    if "not" in schema and not schema_errors(value, schema["not"], root, where):
        errs.append(f"{where}: matches a 'not'")
    return errs


def plan_docs() -> dict[str, dict]:
    from eagle_console.cli.init_cmds import render
    from eagle_console.demo.build import plan_for
    from eagle_console.plan.loader import tomllib

    docs = {p.name: tomllib.loads(p.read_text()) for p in sorted((REPO / "plans").glob("*.toml"))}
    demo = plan_for(root="/tmp/demo", python="python3 -m x", port=30000, python_exe="python3")
    docs["demo"] = tomllib.loads(demo)
    docs["init"] = tomllib.loads(render(Path("plans/x.toml")))
    return docs


def test_shipped_demo_and_init_plans_validate_against_the_schema() -> None:
    schema = json.loads(SCHEMA.read_text())
    docs = plan_docs()
    assert len(docs) >= 4
    for name, doc in docs.items():
        assert schema_errors(doc, schema, schema) == [], name
    broken = json.loads(json.dumps(docs["init"]))
    broken["phase"][0]["step"][0]["timout"] = "10m"  # the loader's own example of a typo
    broken["phase"][1]["step"][0]["with"]["speculativ"] = {}
    errors = schema_errors(broken, schema, schema)
    assert any("'timout'" in e for e in errors) and any("speculativ" in e for e in errors)


def test_schema_keys_are_the_loaders() -> None:
    from eagle_console.engine.builtins import REGISTRY, drafter_check, extraction_verify, sglang_bench
    from eagle_console.plan import builder, steps
    from eagle_console.sglang.args import KNOWN_KEYS

    schema = json.loads(SCHEMA.read_text())
    d = schema["definitions"]
    step = d["step"]["properties"]
    assert set(schema["properties"]) == set(builder.TOP_KEYS)
    assert set(schema["properties"]["plan"]["properties"]) == set(builder.PLAN_KEYS)
    assert set(d["phase"]["properties"]) == set(builder.PHASE_KEYS)
    assert set(step) == set(steps.STEP_KEYS)
    assert set(d["builtinAction"]["properties"]) == set(steps.ACTION_KEYS)
    assert set(step["ready"]["properties"]) == set(steps.READY_KEYS)
    assert set(step["watch"]["properties"]) == set(steps.WATCH_KEYS)
    assert set(step["watch"]["properties"]["extraction"]["properties"]) == set(steps.EXTRACTION_KEYS)
    assert step["uses"]["enum"] == list(REGISTRY) and {k.removeprefix("with.") for k in d if k.startswith("with.")} == set(REGISTRY)
    strict = {"drafter.check": drafter_check.KNOWN, "sglang.bench": sglang_bench.KNOWN,
              "extraction.verify": extraction_verify.KNOWN, "sglang.server": KNOWN_KEYS}
    for name, known in strict.items():
        assert set(d[f"with.{name}"]["properties"]) == set(known), name
        assert d[f"with.{name}"]["additionalProperties"] is False


# -- init -----------------------------------------------------------------------------------------------------------

def test_init_writes_a_valid_plan_and_never_overwrites(tmp_path: Path) -> None:
    r = cli("init", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    written = tmp_path / "plans" / "kimi-k25-eagle3.toml"
    text = written.read_text()
    assert "8x RTX PRO 6000" in text and 'algorithm = "EAGLE3"' in text and "tp = 8" in text
    assert text.startswith(f"#:schema {SCHEMA.as_uri()}\n")
    ok = cli("validate", written, "--json")
    assert ok.returncode == 0 and json.loads(ok.stdout)["ok"], ok.stdout
    again = cli("init", written, cwd=tmp_path)
    assert again.returncode == 2 and "already exists" in again.stderr
    assert written.read_text() == text
    other = tmp_path / "deep" / "mine.toml"
    assert cli("init", other).returncode == 0 and cli("validate", other).returncode == 0
