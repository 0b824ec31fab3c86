"""Every `eagle-console` command shown in a code block of README.md and docs/*.md is run on the demo node
(built by the product's demo builder, one fresh node per document, in the document's order) and its output
compared in shape with what the document shows (issue 32): a `$ eagle-console …` line's output lines, with
digits free and `…` standing for anything, must be the real lines; a `--json` document's keys must be the
ones docs/cli.md lists for it. Commands that cannot run here are listed in SKIP with the reason.
"""

from __future__ import annotations

import glob
import json
import os
import re
import shlex
import signal
import time
from pathlib import Path
from typing import NamedTuple

import clikit
import pytest

REPO = Path(__file__).resolve().parent.parent
DOCS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
COMMAND = re.compile(r"^(?P<prompt>\$ )?(?:\S*/)?eagle-console(?=\s|$)")
ELLIPSIS = ("…", "...")

# What cannot run on the demo node, with why: the command as the documents write it (comment cut), or
# "DOC: command" for one document's.
AGENT_SESSION = "a recorded MCP session: an agent's requests and what followed them (tests/test_mcp_agent.py)"
SKIP = {
    "eagle-console plans/phase0-aqmedai-probe.toml": "opens the console (a TUI); tests/test_tui_*.py drive it",
    ".venv/bin/eagle-console plans/phase0-aqmedai-probe.toml": "opens the console (a TUI)",
    "eagle-console extraction plans/logs/extract-hidden-states.log /data/eagle3/hidden_states/k25-sglang-10k "
    "--total 10000": "the real node's 10K extraction; the demo's, shown below it in operations.md, runs",
    'eagle-console approve plans/demo.toml 28 --note "tp 8, as planned"':
        "request 28 exists once an agent asked (tests/test_mcp_agent.py drives approvals)",
    'eagle-console approve plans/demo.toml 28 --deny --note "not on a Friday"':
        "request 28 exists once an agent asked (tests/test_mcp_agent.py drives approvals)",
    "agent.md: eagle-console approve plans/demo.toml": AGENT_SESSION,
    'agent.md: eagle-console approve plans/demo.toml 1 --note "go ahead"': AGENT_SESSION,
    'agent.md: eagle-console approve plans/demo.toml 28 --note "tp 8, as planned"': AGENT_SESSION,
    "agent.md: eagle-console status plans/demo.toml": AGENT_SESSION,
    "eagle-console metrics plans/demo.toml": "reads a running server's /metrics (0.3 started with --enable-metrics "
    "and a silent drafter); tests/test_metrics_sim.py runs the command against the simulated server",
}


def skipped(doc: Path, text: str) -> str | None:
    return SKIP.get(f"{doc.name}: {text}") or SKIP.get(text)

# Exit status a shown command has when it is not 0 (its document shows the error it prints).
EXIT = {
    "eagle-console status plans/phase0-aqmedai-probe.toml --jsn": 2,
    "eagle-console mark plans/phase0-aqmedai-probe.toml 0 completed": 2,
    "eagle-console run plans/phase0-aqmedai-probe.toml 0": 2,
    "eagle-console validate /tmp/pf/broken.toml": 2,
}

# docs/cli.md's "### `X --json`" section that describes each command's JSON document.
JSON_SECTION = {"status": "status", "validate": "validate", "gpus": "gpus", "orphans": "orphans",
                "nccl": "nccl", "extraction": "extraction", "drafter check": "drafter check",
                "export": "status"}


class DocCommand(NamedTuple):
    where: str  # README.md:40
    text: str  # as written, without the prompt and the comment
    shown: list[str]  # the output a `$ ` command shows under it
    before: str | None  # the code block just before this one (a plan file a command reads)


def doc_commands(path: Path) -> list[DocCommand]:
    out: list[DocCommand] = []
    blocks: list[tuple[int, list[str]]] = []  # (first line number, lines) of each fenced block
    lines = path.read_text().splitlines()
    i = 0
    while i < len(lines):
        if lines[i].lstrip().startswith("```"):
            j = i + 1
            while j < len(lines) and not lines[j].lstrip().startswith("```"):
                j += 1
            blocks.append((i + 2, lines[i + 1:j]))
            i = j
        i += 1
    for b, (first, body) in enumerate(blocks):
        k = 0
        while k < len(body):
            m = COMMAND.match(body[k].strip())
            if not m:
                k += 1
                continue
            text = re.sub(r"\s+#\s.*$", "", body[k].strip()[len(m.group("prompt") or ""):])
            indent = body[k][:len(body[k]) - len(body[k].lstrip())]  # a session shown inside a larger block
            shown: list[str] = []
            while m.group("prompt") and k + 1 < len(body) and _continues(body[k + 1], indent):
                k += 1
                shown.append(body[k][len(indent):])
            before = "\n".join(blocks[b - 1][1]) + "\n" if b else None
            out.append(DocCommand(f"{path.relative_to(REPO)}:{first + k}", text, shown, before))
            k += 1
    return out


def _continues(line: str, indent: str) -> bool:
    """Whether `line` is still output of the `$` line above it: up to the next `$`; in a session shown
    indented inside a larger block, only the lines so indented."""
    if line.strip().startswith("$ "):
        return False
    return not indent or (line.startswith(indent) and bool(line.strip()))


ALL = {path: doc_commands(path) for path in DOCS}


def test_the_docs_show_commands_and_every_skip_is_still_shown() -> None:
    shown = {c.text for cmds in ALL.values() for c in cmds}
    shown |= {f"{p.name}: {c.text}" for p, cmds in ALL.items() for c in cmds}
    assert len(shown) >= 60
    assert not set(SKIP) - shown, "SKIP names a command no document shows any more"
    assert not set(EXIT) - shown, "EXIT names a command no document shows any more"


# -- running them on the demo node ------------------------------------------------------------------------------

class Node(NamedTuple):
    root: Path
    plan: Path
    env: dict[str, str]


@pytest.fixture
def node(tmp_path: Path):
    from eagle_console.demo.build import build_demo

    root = tmp_path / "node"
    plan = build_demo(root)
    env = {**os.environ, "EAGLE_CONSOLE_SIM": str(root / "sim"), "NO_COLOR": "1", "PYTHONUNBUFFERED": "1",
           "EAGLE_CONSOLE_KILL_GRACE": "3s", "COLUMNS": "200"}
    yield Node(root, plan, env)
    _stop_everything(root, plan)


def _stop_everything(root: Path, plan_path: Path) -> None:
    """Runs still going (the demo's server, an extraction) and the simulated processes."""
    from eagle_console.demo.build import stop_leftovers
    from eagle_console.journal import Journal
    from eagle_console.plan.loader import load_plan

    plan = load_plan(plan_path)
    journal = Journal.for_plan(plan)
    try:
        for run in journal.open_runs():
            if run.sid:
                try:
                    os.killpg(run.sid, signal.SIGTERM)
                except OSError:
                    pass
    finally:
        journal.close()
    stop_leftovers(root)


def substitute(text: str, node: Node, tmp: Path, output: bool = False) -> str:
    """The documents' paths and placeholders, on the demo node (whose plan mirrors Phase 0)."""
    root = str(node.root)
    pairs = [
        ("/tmp/opsdemo", root), ("/tmp/pf/broken.toml", str(tmp / "broken.toml")),
        ("/data/drafters/AQ-MedAI-Kimi-K2-Instruct-eagle3", f"{root}/drafters/AQ-MedAI-Kimi-K2-Instruct-eagle3"),
        ("/data/models/Kimi-K2.5", f"{root}/models/Kimi-K2.5"),
        ("plans/phase0-aqmedai-probe.toml", "plans/demo.toml"),
        ("server.log /tmp/nccl_*.log", "plans/logs/sglang-phase0.log"),
    ]
    if output:
        pairs.append(("phase0-aqmedai-probe", "demo"))
    for a, b in pairs:
        text = text.replace(a, b)
    words = {"PLAN": "plans/demo.toml", "MODEL": f"{root}/models/Kimi-K2.5",
             "DRAFTER_A": f"{root}/drafters/AQ-MedAI-Kimi-K2-Instruct-eagle3",
             "DRAFTER_B": f"{root}/drafters/kimi-k25-eagle3", "LOG": "plans/logs/extract.log",
             "N": "300", "DIR": f"{root}/drafters/AQ-MedAI-Kimi-K2-Instruct-eagle3"}
    if " extraction " in f" {text} ":
        words["DIR"] = f"{root}/data/hidden_states"
    if output:
        return text
    return " ".join(words.get(w, w) for w in text.split(" "))


def argv_of(text: str, cwd: Path) -> list[str]:
    """The command's arguments (`eagle-console` is this checkout's, tests/clikit.py), a redirection is left out (its target is the
    operator's home), a glob is expanded in `cwd` as the shell would."""
    words = shlex.split(text.split(" > ")[0])
    out: list[str] = []
    for w in words[1:]:
        out += sorted(glob.glob(w, root_dir=cwd)) or [w] if any(c in w for c in "*?[") else [w]
    return out


def prepare(cmd: DocCommand, text: str, node: Node, tmp: Path) -> None:
    """What the document's situation has and a fresh demo has not at that point."""
    if " --kill" in text:  # the document kills orphans: leave two, as the demo starts with
        from eagle_console.sim import orphans

        orphans.leave_orphans(node.root / "sim", 2)
    if text.startswith("eagle-console extraction") and "--json" not in text:
        wait_for(lambda: len(list((node.root / "data" / "hidden_states").rglob("*.safetensors"))) >= 5,
                 "the demo's extraction to write 5 samples")
    if "broken.toml" in text:  # the plan the document shows just above its output
        (tmp / "broken.toml").write_text(cmd.before or "")


def wait_for(predicate, what: str, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, f"{what}: not within {timeout}s"
        time.sleep(0.1)


def shape(lines: list[str]) -> re.Pattern[str]:
    """The shown lines as one pattern: digits free, `…` anything within a line, a line of `…` any lines."""
    parts = []
    for line in lines:
        if line.strip() in ELLIPSIS:
            parts.append(r"(?:[^\n]*\n)*?")
            continue
        regex = ""
        for tok in re.split(r"(\.\.\.|…|\d+(?:\.\d+)?|[ \t]+)", line.rstrip()):
            if tok in ELLIPSIS:
                regex += r"[^\n]*"
            elif re.fullmatch(r"\d+(?:\.\d+)?", tok):
                regex += r"\d+(?:\.\d+)?"
            elif tok and tok.isspace():
                regex += r"[ \t]+"
            else:
                regex += re.escape(tok)
        parts.append(regex + r"[ \t]*\n")
    return re.compile("".join(parts))


def json_keys(section: str) -> tuple[set[str], set[str]]:
    """docs/cli.md's "### `X --json`" section: the keys of its document's top level, and every name the
    section quotes or puts in backticks (keys present only in some cases are described in its prose)."""
    text = (REPO / "docs" / "cli.md").read_text()
    body = text.split(f"### `{section} --json`", 1)[1].split("\n### ", 1)[0].split("\n## ", 1)[0]
    doc = next(line for line in body.splitlines() if line.startswith("`{"))
    top, depth = set(), 0
    for m in re.finditer(r'[{}\[\]]|"([A-Za-z_]+)"', doc):
        if m.group() in "{[":
            depth += 1
        elif m.group() in "}]":
            depth -= 1
        elif depth == 1:
            top.add(m.group(1))
    return top, set(re.findall(r'["`]([A-Za-z_]+)["`]', body))


def check_json(text: str, stdout: str) -> str | None:
    words = text.split()
    name = " ".join(words[1:3]) if words[1] == "drafter" else words[1]
    doc = json.loads(stdout)
    if name == "export" and "todowrite" in words:
        keys = {k for item in doc for k in item}
        return None if keys == {"content", "status", "priority"} else f"todowrite items have keys {keys}"
    top, named = json_keys(JSON_SECTION[name])
    if name == "export":
        named |= {"notes", "results"}  # "export --format json prints the same, plus notes and results"
    missing, unknown = top - set(doc), set(doc) - named
    if missing or unknown:
        return f"keys: missing {sorted(missing)}, not in docs/cli.md {sorted(unknown)}"
    return None


def run_one(cmd: DocCommand, node: Node, tmp: Path) -> str | None:
    """None if the command ran as the document says, else what differs."""
    text = substitute(cmd.text, node, tmp)
    prepare(cmd, text, node, tmp)
    r = clikit.run(argv_of(text, node.root), cwd=node.root, env=node.env, timeout=180)
    want = EXIT.get(cmd.text, 0)
    if r.returncode != want:
        return f"exit {r.returncode}, not {want}: {(r.stderr or r.stdout).strip()[-300:]}"
    if cmd.shown:
        shown = [substitute(line, node, tmp, output=True) for line in cmd.shown]
        real = r.stdout + r.stderr
        if not shape(shown).fullmatch(real):
            return "output differs from the document's:\n    shown: " + "\n           ".join(shown) + \
                   "\n    real:  " + "\n           ".join(real.splitlines()[:40])
    elif "--json" in text.split() or "--format json" in text or "--format todowrite" in text:
        return check_json(text, r.stdout)
    elif not r.stdout.strip():
        return "printed nothing"
    return None


@pytest.mark.parametrize("doc", [p for p, cmds in ALL.items() if cmds], ids=lambda p: p.name)
def test_doc_commands_run_on_the_demo_as_shown(doc: Path, node: Node, tmp_path: Path) -> None:
    wrong = []
    for cmd in ALL[doc]:
        if skipped(doc, cmd.text):
            continue
        why = run_one(cmd, node, tmp_path)
        if why:
            wrong.append(f"{cmd.where}: {cmd.text}\n  {why}")
    assert not wrong, "\n".join(wrong)
