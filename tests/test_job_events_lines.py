"""A node run's supervisor writes its events into the job's log, the file its action writes to as well.

In a README suite run, `run --wait` of a node step printed `::eagle-console-event {"kind": "proc", …}LINE1`:
print() writes the text and the newline apart, and with stdout unbuffered (PYTHONUNBUFFERED=1, set in this
machine's environment and in many containers) the action's first line landed between the two. The console
then lost the event (the pids it tracks the run's processes by) and showed it as output."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from eagle_console.cluster.job_events import EVENT_PREFIX, split_log

PROC = {"kind": "proc", "pid": 20698, "pid_ctime": 1796574675.13, "pgid": 20698, "sid": 20698}
# the job log of that run, as Ray's job logs API returned it (the entrypoint line, the supervisor's note)
GLUED = ("Running entrypoint for job raysubmit_x: python -m eagle_console.engine.supervise --job-spec s\n"
         "[eagle-console] run id 1 started at 2026-12-06 16:31:15: /bin/bash -c for i in 1 2 3 4 5 6; do echo "
         "LINE$i; sleep 0.4; done\n"
         f"{EVENT_PREFIX}{json.dumps(PROC)}LINE1\n\nLINE2\nLINE3\nLINE4\nLINE5\nLINE6\n")


def test_an_event_with_the_actions_line_glued_to_it_is_read_and_the_line_kept():
    lines, events = split_log(GLUED)
    assert events == [PROC]
    assert [x for x in lines if x.startswith("LINE")] == [f"LINE{i}" for i in range(1, 7)]
    assert not any(EVENT_PREFIX.strip() in x for x in lines)


def test_an_event_after_output_without_a_newline_is_read():
    """An action's progress line without a newline (`Loading...`) puts the event after it on one line."""
    exit_event = {"kind": "exit", "exit_code": 0, "outcome": "completed", "reason": None, "step_status": None}
    lines, events = split_log(f"Loading...{EVENT_PREFIX}{json.dumps(exit_event)}\n")
    assert (lines, events) == (["Loading..."], [exit_event])


def test_output_that_names_the_prefix_but_holds_no_event_is_output():
    text = f"grep says: {EVENT_PREFIX}not json\nx {EVENT_PREFIX}[1, 2]\n"
    assert split_log(text) == ([f"grep says: {EVENT_PREFIX}not json", f"x {EVENT_PREFIX}[1, 2]"], [])


@pytest.mark.skipif(shutil.which("strace") is None, reason="strace is not installed")
def test_the_supervisor_writes_each_event_line_in_one_write(tmp_path: Path):
    """With stdout unbuffered, the line and its newline must leave in one write(2): a second writer of the same
    file (the action) can only come before or after it. strace counts the writes to the job log."""
    log, trace = tmp_path / "job.log", tmp_path / "trace"
    code = ("import sys; from eagle_console.cluster.job_events import JobEvents; "
            "print('before', flush=True); JobEvents().record_proc(1, '0.4', pid=20698, sid=20698)")
    with open(log, "wb") as out:
        done = subprocess.run(["strace", "-f", "-s", "4096", "-e", "trace=write", "-e", "signal=none", "-o", str(trace),
                               sys.executable, "-c", code], stdout=out, stderr=subprocess.PIPE, timeout=60,
                              env={**os.environ, "PYTHONUNBUFFERED": "1", "RAY_JOB_ID": ""})
    if done.returncode != 0 and b"ptrace" in done.stderr:
        pytest.skip(f"strace cannot trace here: {done.stderr.decode()[-200:]}")
    assert done.returncode == 0, done.stderr.decode()
    writes = [w for w in trace.read_text().splitlines() if "write(1," in w]
    assert any(w.endswith('write(1, "before", 6) = 6') for w in map(" ".join, map(str.split, writes))), writes
    event_writes = [w for w in writes if "eagle-console-event" in w]
    assert len(event_writes) == 1, writes  # print() made two here: the text, then "\n" alone
    assert '}\\n", ' in event_writes[0], event_writes  # the newline leaves in the same write as the event
    assert log.read_text().splitlines()[1] == EVENT_PREFIX + json.dumps({"kind": "proc", "pid": 20698,
                                                                          "sid": 20698})
