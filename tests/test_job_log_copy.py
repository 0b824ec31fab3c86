"""A node run's step log is a copy of its Ray job's log, refreshed at every sync. Rewriting it whole (a new
file each time) made every follower start over: `run --wait` printed a 6-line log 26 times. The copy now
appends what is new; only a copy that is no longer a prefix of the job's log is written again whole."""

from __future__ import annotations

from eagle_console.cluster.job_events import EVENT_PREFIX, copy_job_log, split_log, whole_lines
from eagle_console.node.tail import LogFollower


def test_a_growing_job_log_reaches_a_follower_once(tmp_path):
    path = tmp_path / "logs" / "0.1-1.log"
    job_log = ""
    seen: list[str] = []
    with LogFollower(path, start="begin") as follower:
        for i in range(1, 7):
            job_log += f"LINE{i}\n"
            copy_job_log(split_log(job_log)[0], path)
            seen += follower.read_new()
        assert seen == [f"LINE{i}" for i in range(1, 7)] and follower.rotations == 0
        inode = path.stat().st_ino
        copy_job_log(split_log(job_log)[0], path)  # nothing new: the file is left as it is
        assert path.stat().st_ino == inode and follower.read_new() == []


def test_a_half_written_line_waits_until_it_is_whole(tmp_path):
    path = tmp_path / "0.1-1.log"
    event = EVENT_PREFIX + '{"kind": "ready"}'
    lines, events = split_log(whole_lines("one\n" + event[:12]))  # the event line half written
    assert lines == ["one"] and events == []
    copy_job_log(lines, path)
    lines, events = split_log(whole_lines("one\n" + event + "\ntwo"))
    assert lines == ["one"] and events == [{"kind": "ready"}]
    copy_job_log(lines, path)
    assert path.read_text() == "one\n"


def test_a_copy_that_is_no_prefix_any_more_is_written_again(tmp_path):
    path = tmp_path / "0.1-1.log"
    copy_job_log(["a", "b"], path)
    copy_job_log(["x"], path)  # another job's log (a run id reused after a journal restore)
    assert path.read_text() == "x\n"


def test_rays_entrypoint_line_stays_out_of_the_step_log():
    # the first line Ray writes into every job log: Ray's, not the step's output
    text = ("Running entrypoint for job raysubmit_x1: /usr/bin/python3 -m eagle_console.engine.supervise "
            "--job-spec /tmp/eagle-console-spec-x1/spec.json\nSIM=/tmp/b\n")
    assert split_log(text) == (["SIM=/tmp/b"], [])


RAY_SETUP = "2026-12-04 18:09:05,806\tINFO job_manager.py:581 -- Runtime env is setting up.\n"
ENTRY = "Running entrypoint for job raysubmit_x1: python3 -m eagle_console.engine.supervise --job-spec /tmp/s\n"


def test_rays_runtime_env_line_stays_out_of_the_step_log():
    """Ray's dashboard logs "Runtime env is setting up." into the job's log before the entrypoint line (its
    job_manager.py, 2.60.0): it landed in every node step's log. A step's own line of the same form stays."""
    own = "2026-12-04 18:09:09,001\tINFO train.py:12 -- the step's own logging\n"
    assert split_log(RAY_SETUP + ENTRY + "SIM=/tmp/b\n" + own) == (["SIM=/tmp/b", own.rstrip("\n")], [])
    assert split_log(whole_lines(RAY_SETUP)) == ([], [])  # the entrypoint not started yet: nothing is the step's


def test_a_job_that_never_started_keeps_rays_lines_marked():
    failed = "2026-12-04 18:09:06,100\tWARNING job_manager.py:618 -- Failed to start supervisor actor for job x\n"
    lines, _ = split_log(RAY_SETUP + failed, ended=True)
    assert lines == ["[ray] " + RAY_SETUP.rstrip("\n"), "[ray] " + failed.rstrip("\n")]
