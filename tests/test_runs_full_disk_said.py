"""What each face says while a full disk holds a run's end (tried by hand: a step's log and journal on a 1 MiB
tmpfs, the step printing 40,000 lines with Chinese text). Before: the action had ended (exit 1) and its
supervisor kept the exit in the run's slot, but `status` said "running, pid N" of the long-gone action,
`run --wait` waited without a word, the console showed the pid and a running clock, and the run's reason,
once recorded, said only "exit status 1" though its output had been cut by the full disk. A real 4 MiB
tmpfs (conftest.small_disk), real supervisors, the real console through App.run_test."""

from __future__ import annotations

import re
import subprocess
import sys
import threading
import time
from pathlib import Path

import clikit
from diskkit import fill
from enginekit import wait_for

from eagle_console.journal import Journal

PLAN = """[plan]
id = "t"
title = "full disk"
state_dir = "{state}"

[[phase]]
id = "0"
title = "P"

  [[phase.step]]
  id = "0.1"
  title = "waits for go, then prints"
  run = "while [ ! -e go ]; do sleep 0.05; done; for i in $(seq 1 {lines}); do echo line $i; done"
"""
HELD = re.compile(r"ended \(exit (\d+)\), not recorded yet: the journal cannot take it "
                  r"\(\d+ KiB free on the disk of .*\); its supervisor \(pid \d+\) records it once it can, "
                  r"retrying every 2 s")


def plan_on(tmp_path: Path, disk: Path, request, lines: int = 0) -> tuple[Path, Path]:
    """The plan, its state on `disk`; its step ends at the test's end whatever happened (its `go`). With
    `lines=0` the step writes nothing once the disk is full, so it ends with 0: one `echo` after the fill
    (the default was 1) failed or not by where the log's last page ended (a CI run: `exit 1`, not 0)."""
    request.addfinalizer(lambda: (tmp_path / "go").touch())
    state = disk / "state"
    path = tmp_path / "plan.toml"
    path.write_text(PLAN.format(state=state, lines=lines))
    return path, state


def supervised_run(state: Path):
    journal = Journal(state / "journal.db", readonly=True)
    try:
        return wait_for(lambda: (r := journal.latest_run("0.1")) and r.supervisor_pid and r, timeout=30)
    finally:
        journal.close()


def ended_run(state: Path, run_id: int):
    journal = Journal(state / "journal.db", readonly=True)
    try:
        r = journal.run(run_id)
        return r if r is not None and r.ended else None
    finally:
        journal.close()


def held_in_slot(state: Path, run_id: int) -> None:
    slot = state / "runs" / f"{run_id}.exit"
    wait_for(lambda: slot.read_text().strip(), timeout=30)  # the journal could not take the end


def test_status_and_run_wait_say_the_run_ended_and_waits_for_the_journal(tmp_path, small_disk, request):
    plan, state = plan_on(tmp_path, small_disk, request)
    argv = [sys.executable, "-m", "eagle_console", "run", str(plan), "0.1", "--yes", "--wait"]
    waiting = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    request.addfinalizer(lambda: (waiting.kill(), waiting.wait()))
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(waiting.stdout), daemon=True)
    reader.start()
    try:
        wait_for(lambda: lines, timeout=60)  # `started run …`: the journal exists
        run = supervised_run(state)
        fill(small_disk)
        (tmp_path / "go").touch()
        held_in_slot(state, run.id)
        out = clikit.run(["status", plan], timeout=60)
        assert out.returncode == 0, out.stderr
        (line,) = [ln for ln in out.stdout.splitlines() if " 0.1 " in ln]
        assert HELD.search(line) and HELD.search(line).group(1) == "0", line  # not "running, pid N"
        said = wait_for(lambda: [ln for ln in list(lines) if "not recorded yet" in ln], timeout=30)
        assert len(said) == 1 and HELD.search(said[0]) and said[0].startswith("0.1: "), said
        time.sleep(2.5)  # a retry or two later: said once, not at each tick
        assert len([ln for ln in list(lines) if "not recorded yet" in ln]) == 1
    finally:
        (small_disk / "filler").unlink(missing_ok=True)  # space returns: the supervisor records the end
    assert waiting.wait(timeout=60) == 0, "".join(lines)
    reader.join(timeout=10)
    assert lines[-1].strip() == "0.1: completed", lines[-3:]


def test_a_run_that_failed_writing_to_a_full_log_disk_says_so(tmp_path, small_disk, request):
    plan, state = plan_on(tmp_path, small_disk, request, lines=20000)
    out = clikit.run(["run", plan, "0.1"], timeout=60)
    assert out.returncode == 0, out.stderr
    run = supervised_run(state)
    fill(small_disk)
    (tmp_path / "go").touch()  # its echos are refused: bash says `write error` and exits 1
    held_in_slot(state, run.id)
    (small_disk / "filler").unlink()
    ended = wait_for(lambda: ended_run(state, run.id), timeout=30)
    assert ended.exit_code == 1, ended
    assert ended.reason.startswith("exit status 1; its log's disk is full ("), ended.reason
    assert "its output was cut there, and a refused write may be why it failed" in ended.reason


def test_the_console_says_the_run_ended_and_waits_for_the_journal(tmp_path, small_disk, request):
    from tuikit import drive, notices, open_app, select, until

    plan, state = plan_on(tmp_path, small_disk, request)
    out = clikit.run(["run", plan, "0.1"], timeout=60)
    assert out.returncode == 0, out.stderr
    run = supervised_run(state)
    app, journal = open_app(plan)
    journal.close()

    async def scenario(pilot) -> None:
        await select(pilot, "0.1")
        fill(small_disk)
        (tmp_path / "go").touch()
        said = "0.1: ended (exit 0), not recorded yet"
        await until(pilot, lambda: any(n.startswith(said) for n in notices(app)), timeout=30,
                    what="the toast")
        await select(pilot, "0")  # the Detail line is drawn when a step is selected (the journal is still)
        await select(pilot, "0.1")
        await pilot.pause()
        detail = app.query_one("#detail").render().plain.replace("\n", " ")
        assert "not recorded yet" in detail and f"pid {run.pid}" not in detail, detail
        (small_disk / "filler").unlink()
        await until(pilot, lambda: "completed" in app.query_one("#detail").render().plain, timeout=30,
                    what="the end recorded")

    try:
        drive(app, scenario)
    finally:
        (small_disk / "filler").unlink(missing_ok=True)


def test_a_supervisor_that_could_not_record_itself_is_said_not_started(tmp_path):
    """Tried by hand: the disk filled between `run`'s own record and its supervisor's. `run --wait` said
    "ended (failed), not recorded yet: …; its supervisor (pid None) records it …" of an action never
    started."""
    from eagle_console.journal import exitslot
    from eagle_console.ops.steps import held_end_text

    journal = Journal(tmp_path / "journal.db")
    try:
        run_id = journal.begin_run("0.1", command="json.set", log=None)
        slot = exitslot.exit_slot(tmp_path, run_id)
        slot.parent.mkdir()
        exitslot.reserve(slot)
        reason = "not started: its supervisor could not record itself in the journal (the disk is full)"
        assert exitslot.keep(slot, {"exit_code": None, "outcome": "failed", "reason": reason})
        text = held_end_text(journal.run(run_id), tmp_path)
    finally:
        journal.close()
    assert text is not None, text
    assert text.startswith("not started, not recorded yet: the journal cannot take it"), text
    assert "pid None" not in text, text
    assert "; its supervisor records it once it can, retrying every 2 s" in text, text
