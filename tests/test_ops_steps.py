"""Next, run, mark, note, export and rollback through ops: one decision, two faces each naming its controls."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import clikit
import pytest
from enginekit import engine_for, write_plan

from eagle_console.journal import Refused
from eagle_console.ops import export as export_op
from eagle_console.ops import logs, rollback, steps
from eagle_console.ops.export import FORMATS
from eagle_console.ops.hints import Hints, refusal_text

REPO = Path(__file__).resolve().parent.parent

PLAN = """
    [[phase]]
    id = "0"
    title = "P"
      [[phase.step]]
      id = "0.1"
      title = "a"
      run = "echo a"
      rollback = "echo undo-a"
      [[phase.step]]
      id = "0.2"
      title = "b"
      needs = ["0.1"]
      run = "echo b"
"""


def cli(plan: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return clikit.run([args[0], plan, *args[1:]], cwd=REPO, timeout=60)


def test_no_next_names_no_control_and_each_face_adds_its_own(tmp_path):
    path = write_plan(tmp_path, PLAN)
    eng = engine_for(path)
    eng.journal.mark("0.1", "failed", note="exit 3")
    choice = steps.choose_next(eng)
    assert choice.step is None and choice.why.failed == [("0.1", None)]
    assert choice.why.waiting == [("0.2", ["0.1"])]
    assert choice.message == ("nothing to run next; failed: 0.1 — fix and run again, or mark it; "
                              "waiting on needs: 0.2 needs 0.1")
    assert "(r)" in steps.choose_next(eng, Hints(run=" (r)")).message
    r = cli(path, "next")  # the CLI used to print the console's key: "fix and run again (r)"
    assert r.returncode == 1
    assert "fix and run again (eagle-console run), or mark it (eagle-console mark)" in r.stderr
    assert "(r)" not in r.stderr


def test_manual_next_step_is_chosen_not_started(tmp_path):
    path = write_plan(tmp_path, PLAN.replace('run = "echo a"\n', ""))
    eng = engine_for(path)
    choice = steps.choose_next(eng)
    assert choice.manual and not choice.runnable and choice.message == "0.1 is manual: do it by hand and mark it"
    r = cli(path, "next")
    assert r.returncode == 1 and "the next step, 0.1 (a), is a manual step" in r.stderr
    assert eng.journal.runs() == []


def test_confirm_is_reported_and_the_cli_asks(tmp_path):
    path = write_plan(tmp_path, PLAN.replace('run = "echo a"', 'run = "echo a"\n      confirm = true'))
    eng = engine_for(path)
    assert steps.run_request(eng.plan, "0.1").confirm and not steps.run_request(eng.plan, "0.2").confirm
    assert steps.run_request(eng.plan, "0").step is None
    r = cli(path, "run", "0.1")
    assert r.returncode == 2 and "run 0.1 (a)? — this needs confirmation: pass --yes" in r.stderr
    r = cli(path, "next", "--yes", "--wait")
    assert r.returncode == 0 and "0.1: completed" in r.stdout


def test_rollback_refusals_are_neutral_and_the_cli_adds_its_flags(tmp_path):
    path = write_plan(tmp_path, PLAN.replace('needs = ["0.1"]', 'needs = ["0.1"]\n      rollback = "true"'))
    eng = engine_for(path)
    for sid in ("0.1", "0.2"):
        assert steps.wait_run(eng, steps.start_run(eng, sid), timeout=30).ok
    with pytest.raises(Refused) as refused:
        rollback.plan(eng, "0.1")
    assert "--" not in str(refused.value) and refused.value.fix == "cascade"
    assert refusal_text(refused.value, Hints(cascade=" (c)")).endswith("roll it back first (c)")
    choice = rollback.plan_rollback_choice(eng, "0.1")
    assert choice.refused and "--cascade" not in choice.refused and not choice.cascade_refused
    r = cli(path, "rollback", "0.1", "--yes")
    assert r.returncode == 1 and r.stderr.strip().endswith("roll it back first, or use --cascade"), r.stderr


def test_no_undo_refusal_offers_force_on_the_cli(tmp_path):
    path = write_plan(tmp_path, PLAN.replace('      rollback = "echo undo-a"\n', ""))
    eng = engine_for(path)
    assert steps.wait_run(eng, steps.start_run(eng, "0.1"), timeout=30).status == "completed"
    with pytest.raises(Refused) as refused:
        rollback.plan(eng, "0.1")
    assert refused.value.fix == "force" and "--force" not in str(refused.value)
    r = cli(path, "rollback", "0.1", "--yes")
    assert r.returncode == 1 and "or use --force to mark it rolled back without undoing anything" in r.stderr


def test_rollback_log_is_the_same_from_the_cli_ops_and_the_supervisor(tmp_path):
    path = write_plan(tmp_path, PLAN)
    eng = engine_for(path)
    assert steps.wait_run(eng, steps.start_run(eng, "0.1"), timeout=30).ok
    r = cli(path, "rollback", "0.1", "--yes")
    assert r.returncode == 0, r.stderr
    line = next(x for x in r.stdout.splitlines() if x.startswith("rollback ") and "log:" in x)
    rollback_id = int(line.split()[1])
    printed = Path(line.split("log: ", 1)[1])
    spec = json.loads((eng.plan.state_dir / "runs" / f"rollback-{rollback_id}.json").read_text())
    assert printed == logs.rollback_log_path(eng.plan, rollback_id) == Path(spec["log"])
    assert "undo-a" in printed.read_text()


def test_logs_latest_and_service_lookup(tmp_path):
    path = write_plan(tmp_path, PLAN)
    eng = engine_for(path)
    assert logs.latest_log(eng.journal, "0.1") is None and logs.service_log(eng.plan, eng.journal, "0.1") is None
    run_id = steps.start_run(eng, "0.1")
    steps.wait_run(eng, run_id, timeout=30)
    step = eng.plan.step("0.1")
    assert logs.latest_log(eng.journal, "0.1") == logs.step_log_path(eng.plan, step, run_id) == \
        eng.log_path(step, run_id)
    assert logs.live_service(eng.journal, "0.1") is None  # an action, not a service
    r = cli(path, "log", "0.1")
    assert r.returncode == 0 and "\na\n" in r.stdout
    eng.journal.begin_run("0.2", command="serve", log=str(tmp_path / "serve.log"), service=True)
    assert logs.service_log(eng.plan, eng.journal, "0.1") == tmp_path / "serve.log"  # the latest service's
    assert logs.live_service(eng.journal, "0.2") is None  # no supervisor alive: not live


def test_one_list_of_export_formats(tmp_path):
    path = write_plan(tmp_path, PLAN)
    eng = engine_for(path)
    assert tuple(export_op.EXPORT_SUFFIX) == FORMATS
    r = subprocess.run([sys.executable, "-m", "eagle_console", "export", "--help"], capture_output=True,
                       text=True, cwd=REPO, timeout=60)
    assert "{" + ",".join(FORMATS) + "}" in r.stdout
    steps.mark(eng.journal, eng.plan, "0.1", "completed", "done by hand")
    for fmt in FORMATS:
        out = cli(path, "export", "--format", fmt)
        assert out.returncode == 0 and out.stdout == export_op.render(eng.journal, eng.plan, fmt)
        assert export_op.export(eng.journal, eng.plan, fmt).read_text() == out.stdout
    with pytest.raises(ValueError, match="one of: todowrite, markdown, json"):
        export_op.render(eng.journal, eng.plan, "csv")


def test_mark_and_note_decide_in_ops(tmp_path):
    eng = engine_for(write_plan(tmp_path, PLAN))
    with pytest.raises(ValueError, match="phase's status is derived from its steps — mark its steps \\(0.1, 0.2\\)"):
        steps.mark_step(eng.journal, eng.plan, "0", "completed")
    with pytest.raises(ValueError, match="unknown step '9' in plan t; steps: 0.1, 0.2"):
        steps.mark(eng.journal, eng.plan, "9", "completed", None)
    assert steps.mark_step(eng.journal, eng.plan, "0.1", "skipped").before == "pending"
    with pytest.raises(ValueError, match="phases: 0"):
        steps.note(eng.journal, "9", "x", plan=eng.plan)
    with pytest.raises(ValueError, match="empty"):
        steps.note(eng.journal, "0", "  ", plan=eng.plan)
    assert steps.note(eng.journal, "0", "phase decision", plan=eng.plan) == "0: noted"
