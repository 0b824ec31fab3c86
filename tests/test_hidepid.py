"""A node whose /proc hides each user's processes from the others (mounted hidepid=2), another user's job
on a GPU, and the console run by a second user. Before: the simulated node took the hidden worker for a
dead one and deleted its record (its GPU memory gone from every view), and with a real driver NVML's pid,
absent from /proc, made the console decide it ran in a foreign PID namespace ("host pid (not in this
container)"; seen on an H100, benchmarks/results/h100-hidepid-2026-12-07/). Now it is shown as another
user's process hidden by /proc, its memory counted, in this namespace, never judged or signalled."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from enginekit import wait_for

from eagle_console.node.gpus.attribution import pid_namespace
from eagle_console.processes import hidden
from eagle_console.sim import gpustate, hidepid

OTHER_USER, ME = 65534, 4242


def readable_site(top: Path) -> str:
    """A PYTHONPATH another user can read: copies of eagle_console and psutil (a checkout or venv under a
    folder only its owner may enter, as /root, is not; the interpreter itself still runs)."""
    import psutil

    import eagle_console

    site = top / "site"
    for package in (eagle_console, psutil):
        src = Path(package.__file__).parent
        shutil.copytree(src, site / src.name, ignore=shutil.ignore_patterns("__pycache__"))
    for folder, _dirs, files in os.walk(top):
        os.chmod(folder, 0o755)
        for name in files:
            os.chmod(os.path.join(folder, name), 0o644)
    return str(site)


def shared_node(sim: Path) -> Path:
    """A simulated node every user can write to, as every user opens a real node's /dev/nvidia*."""
    gpustate.create_node(sim)
    for folder, _dirs, files in os.walk(sim):
        os.chmod(folder, 0o777)
        for name in files:
            os.chmod(os.path.join(folder, name), 0o666)
    return sim


@pytest.fixture
def others_job():
    """(sim dir, pid, env): a worker of user `nobody` holding 700 MiB of GPU 3, and the environment the
    second user's commands run with. The node's folder is one every user can reach (pytest's tmp_path sits
    under a folder only its owner may enter)."""
    if os.geteuid() != 0:
        pytest.skip("hidepid: needs root (a mount namespace, a /proc mount, another uid)")
    top = Path(tempfile.mkdtemp(prefix="eagle-hidepid-"))
    env = {**os.environ, "PYTHONPATH": readable_site(top), "HOME": "/tmp", "EAGLE_CONSOLE_GPU_BACKEND": "sim"}
    if why := hidepid.usable(ME, env):
        shutil.rmtree(top, ignore_errors=True)
        pytest.skip(f"hidepid: {why}")
    sim = shared_node(top / "sim")
    as_nobody = ["setpriv", "--reuid", str(OTHER_USER), "--regid", str(OTHER_USER), "--clear-groups"]
    worker = subprocess.Popen([*as_nobody, sys.executable, "-m", "eagle_console.sim.orphans", "worker",
                               "--sim", str(sim), "--gpu", "3", "--mib", "700"],
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, start_new_session=True,
                              env=env)
    try:
        assert worker.stdout.readline().strip() == b"holding"
        yield sim, worker.pid, env
    finally:
        os.kill(worker.pid, signal.SIGKILL)
        worker.wait()
        shutil.rmtree(top, ignore_errors=True)


def as_me(args: list[str], env: dict[str, str]) -> dict:
    done = hidepid.run([sys.executable, "-m", "eagle_console", *args], ME, capture_output=True, text=True,
                       timeout=120, env=env)
    assert done.returncode == 0 and done.stdout.strip(), done.stderr
    return json.loads(done.stdout)


def test_another_users_hidden_job_is_shown_as_such_and_never_killed(others_job):
    sim, pid, env = others_job
    seen = as_me(["gpus", "--json", "--sim", str(sim)], env)
    assert seen["pid_namespace"] == "local", seen
    gpu = seen["gpus"][3]
    assert gpu["memory_used_mib"] == 700.0, gpu  # before: 0, the record deleted
    assert [(p["pid"], p["class"], p["command"]) for p in gpu["processes"]] == \
        [(pid, "other", "hidden by /proc (hidepid): another user's process")], gpu
    k = as_me(["orphans", "--json", "--kill", "--yes", "--grace", "1s", "--sim", str(sim)], env)
    assert k["killed"] == [] and [h["class"] for h in k["holders"]] == ["other"], k
    assert "hidepid" in k["holders"][0]["reason"], k
    assert (sim / "holders" / f"{pid}.json").exists()  # the simulated node still holds its memory
    assert wait_for(lambda: gpustate.holders(sim), timeout=5)[0].pid == pid


def test_a_hidden_pid_is_not_taken_for_another_namespaces(others_job):
    """The rule under the namespace guess, read as the second user: a pid /proc hides is no contradiction."""
    _sim, pid, env = others_job
    code = (f"from eagle_console.processes import hidden; from eagle_console.node.gpus.attribution import "
            f"pid_namespace; print(hidden({pid}), hidden(2**22 + 1), pid_namespace({{{pid}}}, set()))")
    done = hidepid.run([sys.executable, "-c", code], ME, capture_output=True, text=True, timeout=60, env=env)
    assert done.stdout.split() == ["True", "False", "local"], done.stderr
    # as root nothing is hidden, and a pid nobody has is still a contradiction
    assert not hidden(pid) and pid_namespace({2**22 + 1}, set()) == "foreign"
