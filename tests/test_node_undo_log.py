"""A node undo whose Ray job ended while its log could not be read yet (cluster/node_undo.py).

In a `.ci/run` here a node step's rollback ran right after node b's raylet was started again: the undo's
job SUCCEEDED, but Ray 2.60's job head answered its log with a 500 ("Port out of range 0-65535": b's
dashboard agent, which serves the log, had not registered yet) and the rollback stopped with "ended
SUCCEEDED without an exit". The log carries the exit, so an ended job's log is asked again for a while.

The job head here is a stand-in with the answers that run got (a node restart racing its agent's start is
not something a test can time); the real path runs in tests/test_cluster_rollback.py."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from enginekit import engine_for, write_plan

from eagle_console.cluster import node_undo
from eagle_console.cluster.job_events import EVENT_PREFIX
from eagle_console.cluster.node_undo import NodeUndo
from eagle_console.journal.recorder import Recorder

RAY_500 = ("Request failed with status code 500: Traceback (most recent call last): ... "
           "ValueError: Port out of range 0-65535")


class Succeeded:
    def is_terminal(self) -> bool:
        return True

    def __str__(self) -> str:
        return "SUCCEEDED"


class JobHead:
    """get_job_info / get_job_logs as Ray's JobSubmissionClient answers them: the job ended; its log a 500
    for the first `unreadable` asks."""

    def __init__(self, unreadable: int) -> None:
        self.unreadable, self.asked = unreadable, 0
        exit_ = {"kind": "exit", "exit_code": 0, "outcome": "completed", "reason": None, "step_status": None}
        self.log = f"undo: removed the file\n{EVENT_PREFIX}{json.dumps(exit_)}\n"

    def get_job_info(self, job_id: str):  # noqa: ANN201 - Ray's JobDetails: status and message
        return type("Info", (), {"status": Succeeded(), "message": "Job finished successfully."})()

    def get_job_logs(self, job_id: str) -> str:
        self.asked += 1
        if self.asked <= self.unreadable:
            raise RuntimeError(RAY_500)
        return self.log


@pytest.fixture
def follow(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(node_undo, "POLL_S", 0.01)
    path = write_plan(tmp_path, '[[phase]]\nid = "0"\ntitle = "P"\n  [[phase.step]]\n  id = "0.1"\n  title = "t"\n'
                                '  run = "true"\n')
    eng = engine_for(path)
    recorder = Recorder(eng.journal, 1, "0.1", None)
    notes: list[str] = []
    undo = NodeUndo("127.0.0.1:1", "b", tmp_path / "rollback.log", notes.append)
    return lambda head: undo._follow(head, "raysubmit_x", "0.1", recorder, lambda: None, 1.0), tmp_path


def test_an_ended_undo_whose_log_is_unreadable_for_a_while_is_read_again(follow) -> None:
    run, tmp_path = follow
    head = JobHead(unreadable=5)
    assert run(head) == (True, None)  # its exit, read once the log could be
    assert head.asked == 6 and "undo: removed the file" in (tmp_path / "rollback.log").read_text()


def test_an_ended_undo_whose_log_stays_unreadable_is_not_known_not_without_an_exit(follow, monkeypatch) -> None:
    run, _ = follow
    monkeypatch.setattr(node_undo, "LOG_WAIT_S", 0.2)
    ok, why = run(JobHead(unreadable=10**6))
    assert not ok and "could not be read for 0.2s" in why and "Port out of range 0-65535" in why, why
    assert "whether it was undone there is not known" in why and "without an exit" not in why
