"""A multi-node server's service while the Ray head is unreachable. Seen by hand in the two-node demo: the
head's processes killed, the ranks service died on a traceback (`HeadUnreachable` out of `RayRunner.poll`),
step 0.1 turned `failed`, and rank 0's eight schedulers on this machine — still serving, `/health` 200 —
were listed as orphans of the failed run, preselected in `K`. A head that cannot answer is not a rank that
ended: the service says so once and watches on. The head here is a real free port nothing listens on."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from clusterkit import HAVE_RAY

from eagle_console.ports import free_port
from eagle_console.sglang.noderunner import RankProcess

pytestmark = pytest.mark.skipif(not HAVE_RAY, reason="Ray is not installed")


def _ranks(address: str, tmp_path: Path) -> list[RankProcess]:
    return [RankProcess(node=node, rank=rank, ref={"job_id": f"raysubmit_{rank}", "address": address},
                        log=str(tmp_path / f"rank{rank}-{node}.log")) for rank, node in enumerate("ab")]


def test_a_dead_head_is_no_end_of_a_rank(tmp_path):
    from eagle_console.cluster.noderunner import RayRunner

    address = f"127.0.0.1:{free_port()}"
    runner = RayRunner(address)
    rank = _ranks(address, tmp_path)[1]
    assert runner.poll(rank) is None  # it raised HeadUnreachable before: the service died of it
    said = "cannot ask the cluster about rank 1 on node b: head unreachable since"
    assert runner.problem.startswith(said), runner.problem
    assert f"nothing listens at {address}" in runner.problem


def test_the_service_watches_on_and_says_it_once(tmp_path, capsys):
    from eagle_console.cluster.noderunner import RayRunner
    from eagle_console.sglang.multinode_run import LogCopy, watch

    address = f"127.0.0.1:{free_port()}"
    ranks = _ranks(address, tmp_path)
    Path(ranks[0].log).write_text("")
    stop, ended = threading.Event(), []
    thread = threading.Thread(target=lambda: ended.append(watch(RayRunner(address), ranks, tmp_path, stop,
                                                                LogCopy(Path(ranks[0].log)))))
    thread.start()
    try:
        thread.join(3.0)  # polls of both ranks, several times over (POLL_S, the runner's 1 s per job)
        assert thread.is_alive(), ended  # no rank taken for ended
    finally:
        stop.set()
        thread.join(10)
    assert ended == [None]  # it returned for the stop, not for an end
    said = [ln for ln in capsys.readouterr().out.splitlines() if "RANKS_UNWATCHED" in ln]
    assert len(said) == 1, said
    assert said[0].startswith("[eagle-console] RANKS_UNWATCHED: cannot ask the cluster about rank ") and \
        "head unreachable since" in said[0] and "not taken for ended" in said[0], said


def test_a_stop_with_the_head_dead_says_so_at_once(tmp_path):
    """The rollback's SIGTERM of the service: stop_job cannot be asked, so nothing is waited on (it waited the
    grace and 30 s more, and the supervisor SIGKILLed the service), and the rank is not called stopped."""
    import time

    from eagle_console.cluster.noderunner import RayRunner

    address = f"127.0.0.1:{free_port()}"
    runner, rank = RayRunner(address), _ranks(address, tmp_path)[0]
    started = time.monotonic()
    runner.stop(rank, grace_s=10.0)
    assert time.monotonic() - started < 5.0
    assert runner.problem.startswith("cannot ask the cluster to stop rank 0 on node a: head unreachable"), \
        runner.problem
    assert runner.poll(rank) is None  # and not taken for stopped
