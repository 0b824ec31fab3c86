"""validate / status / mark / note / export through the CLI, each command a process of its own (tests/clikit.py)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import clikit

REPO = Path(__file__).resolve().parent.parent
PHASE0 = REPO / "plans" / "phase0-aqmedai-probe.toml"
PLANS = sorted((REPO / "plans").glob("*.toml"))


def cli(*args: str | Path, state: Path | None = None) -> subprocess.CompletedProcess[str]:
    argv = [*args, *(["--state-dir", state] if state is not None else [])]
    return clikit.run(argv, cwd=REPO, timeout=60)


def test_validate_repo_plans_ok() -> None:
    r = cli("validate", *PLANS, "--json")
    assert r.returncode == 0, r.stderr
    docs = json.loads(r.stdout)
    assert isinstance(docs, list) and len(docs) == len(PLANS) >= 2
    assert {d["plan"] for d in docs} >= {"phase0-aqmedai-probe", "extraction-sglang"}
    assert all(d["ok"] and d["errors"] == [] for d in docs)
    one = json.loads(cli("validate", PHASE0, "--json").stdout)
    assert one == {"schema": 1, "ok": True, "plan": "phase0-aqmedai-probe", "errors": []}


def test_validate_broken_copy(tmp_path: Path) -> None:
    text = PHASE0.read_text()
    broken = text.replace('priority = "high"', 'priority = "urgent"', 1).replace(
        'needs = ["0.1", "0.2"]', 'needs = ["0.1", "0.9"]')
    bad = tmp_path / "broken.toml"
    bad.write_text(broken)
    lines = broken.splitlines()
    prio_line = next(i for i, s in enumerate(lines, 1) if '"urgent"' in s)
    needs_line = next(i for i, s in enumerate(lines, 1) if '"0.9"' in s)

    r = cli("validate", bad)
    assert r.returncode == 2
    out = r.stdout.splitlines()
    prio_col = lines[prio_line - 1].index('"urgent"') + 1
    assert out[0] == f"{bad}:{prio_line}:{prio_col}: bad priority 'urgent': use one of high, medium, low"
    assert any(o.startswith(f"{bad}:{needs_line}:") and "0.9" in o for o in out)
    assert "Traceback" not in r.stderr

    doc = json.loads(cli("validate", bad, "--json").stdout)
    assert doc["ok"] is False and doc["plan"] == "phase0-aqmedai-probe"
    assert [e["line"] for e in doc["errors"]] == [prio_line, needs_line]

    both = cli("validate", PHASE0, bad, "--json")
    assert both.returncode == 2 and [d["ok"] for d in json.loads(both.stdout)] == [True, False]


def test_validate_garbage_never_tracebacks(tmp_path: Path) -> None:
    junk = tmp_path / "junk.toml"
    junk.write_bytes(b"\xff\xfe[[[\x00")
    r = cli("validate", junk)
    assert r.returncode == 2 and "not UTF-8" in r.stdout and "Traceback" not in r.stderr
    r = cli("status", junk)
    assert r.returncode == 2 and r.stderr.startswith(f"eagle-console: {junk}:1:1:")
    r = cli("validate", tmp_path / "missing.toml")
    assert r.returncode == 2 and "cannot read" in r.stdout


def test_status_json_shape(tmp_path: Path) -> None:
    r = cli("status", PHASE0, "--json", state=tmp_path)
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    # the spec's keys, plus issue 34's: who changed each step last and through which face, and the requests
    # awaiting a person's approval
    assert set(doc) == {"schema", "plan", "title", "phases", "approvals"} and doc["plan"] == "phase0-aqmedai-probe"
    assert doc["approvals"] == []
    (phase,) = doc["phases"]
    assert set(phase) == {"id", "title", "status", "priority", "steps"} and phase["status"] == "pending"
    assert [s["id"] for s in phase["steps"]] == ["0.1", "0.2", "0.2b", "0.3", "0.4"]
    assert all(set(s) == {"id", "title", "status", "priority", "run", "changed", "approval"} and s["run"] is None
               and s["changed"] is None and s["approval"] is None for s in phase["steps"])


def test_mark_then_export_todowrite(tmp_path: Path) -> None:
    assert cli("mark", PHASE0, "0.1", "completed", "--note", "3 orphans killed", state=tmp_path).returncode == 0
    assert cli("mark", PHASE0, "0.2b", "skipped", state=tmp_path).returncode == 0
    r = cli("export", PHASE0, "--format", "todowrite", state=tmp_path)
    assert r.returncode == 0, r.stderr
    items = json.loads(r.stdout)
    assert items[0] == {"content": "Phase 0: Quick Probe — try AQ-MedAI K2 drafter directly with K2.5",
                        "status": "in_progress", "priority": "high"}
    assert items[1] == {"content": "Phase 0.1: Kill any existing server processes", "status": "completed",
                        "priority": "high"}
    by_id = {i["content"].split(":")[0]: i for i in items}
    assert by_id["Phase 0.2b"]["status"] == "cancelled" and by_id["Phase 0.3"]["status"] == "pending"
    assert len(items) == 6

    text = cli("status", PHASE0, state=tmp_path).stdout
    assert "✔ 0.1" in text and "⊘ 0.2b" in text and "○ 0.3" in text and "◐ 0 " in text


def test_failed_maps_to_in_progress_and_rolled_back_to_pending(tmp_path: Path) -> None:
    cli("mark", PHASE0, "0.1", "failed", state=tmp_path)
    cli("mark", PHASE0, "0.2", "rolled_back", state=tmp_path)
    items = json.loads(cli("export", PHASE0, "--format", "todowrite", state=tmp_path).stdout)
    assert [i["status"] for i in items[:3]] == ["in_progress", "in_progress", "pending"]


def test_mark_refusals(tmp_path: Path) -> None:
    r = cli("mark", PHASE0, "0.9", "completed", state=tmp_path)
    assert r.returncode == 2 and "0.1, 0.2, 0.2b, 0.3, 0.4" in r.stderr
    r = cli("mark", PHASE0, "0", "completed", state=tmp_path)
    assert r.returncode == 2 and "derived" in r.stderr
    r = cli("mark", PHASE0, "0.1", "done", state=tmp_path)
    assert r.returncode == 2
    assert not (tmp_path / "journal.db").exists() or json.loads(
        cli("status", PHASE0, "--json", state=tmp_path).stdout)["phases"][0]["status"] == "pending"


def test_notes_in_markdown_and_json(tmp_path: Path) -> None:
    decision = "keep AQ-MedAI d2t: 31,748 of 32,000 positions differ, its lm_head was trained on it"
    assert cli("note", PHASE0, "0.2b", decision, state=tmp_path).returncode == 0
    assert cli("note", PHASE0, "0", "phase-level decision", state=tmp_path).returncode == 0
    assert cli("note", PHASE0, "7.7", "x", state=tmp_path).returncode == 2
    md = cli("export", PHASE0, "--format", "markdown", state=tmp_path)
    assert md.returncode == 0 and decision in md.stdout and "## Decisions and notes" in md.stdout
    assert "phase-level decision" in md.stdout and "Baseline: tok_s = 82" in md.stdout
    doc = json.loads(cli("export", PHASE0, "--format", "json", state=tmp_path).stdout)
    step = next(s for s in doc["phases"][0]["steps"] if s["id"] == "0.2b")
    assert step["notes"][0]["text"] == decision and len(doc["notes"]) == 2
