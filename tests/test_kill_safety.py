"""Killing GPU holders: escalation, memory release, and the processes that are never signalled."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import psutil
import pytest
from test_procs_classify import Tree

from eagle_console.node.gpus import open_backend
from eagle_console.node.kill import kill_holders, refusal, select_targets
from eagle_console.node.procs import Holder, scan_holders
from eagle_console.sim import gpustate


@pytest.fixture
def sim(tmp_path):
    d = tmp_path / "sim"
    gpustate.create_node(d)
    return d


def test_term_ignoring_orphans_get_sigkill_and_memory_is_freed(tmp_path, sim):
    tree = Tree(tmp_path, "sim", sim, count=2, subreaper=True, ignore_term=True)
    backend = open_backend(sim)
    try:
        tree.kill_launcher()
        holders = scan_holders(backend.sample(), device_prefix=backend.device_prefix, subreapers={tree.top.pid})
        targets = select_targets(holders, "orphans")
        assert sorted(h.pid for h in targets) == sorted(tree.workers)
        ticks: list[tuple[float, list[int]]] = []
        said: list[str] = []
        report = kill_holders(targets, backend=backend, grace=1.0, progress=lambda s, p: ticks.append((s, p)),
                              say=said.append)
        assert sorted(report["killed"]) == sorted(tree.workers) and report["survivors"] == []
        assert report["freed_mib"] == {"0": 1000.0, "1": 2000.0}
        assert ticks and set(ticks[0][1]) == set(tree.workers)  # countdown while they ignore SIGTERM
        assert any(line.startswith("SIGKILL ->") for line in said)
        assert all(g.memory_used_mib == 0 for g in backend.sample().gpus)
        json.dumps(report)  # a plain dict the engine can journal
    finally:
        tree.close()


def test_select_targets_scopes(tmp_path, sim):
    tree = Tree(tmp_path, "sim", sim, count=2, subreaper=True)
    backend = open_backend(sim)
    try:
        holders = scan_holders(backend.sample(), device_prefix=backend.device_prefix, subreapers={tree.top.pid})
        assert select_targets(holders, "orphans") == []  # launcher alive: nothing preselected
        assert {h.pid for h in select_targets(holders, "all")} == set(tree.workers)
        assert [h.pid for h in select_targets(holders, "all", gpus=[1])] == [tree.workers[1]]
        assert {h.pid for h in select_targets(holders, "match", [r"tree\.py worker"])} == set(tree.workers)
        with pytest.raises(ValueError):
            select_targets(holders, "match")
        with pytest.raises(ValueError):
            select_targets(holders, "everything")
    finally:
        tree.close()


def _holder(proc: psutil.Process) -> Holder:
    return Holder(pid=proc.pid, ppid=proc.ppid(), user=proc.username(), command=" ".join(proc.cmdline()),
                  gpus=[0], used_mib=100.0, cls="orphan", proc=proc)


def test_never_signals_pid1_self_or_ancestors():
    me = psutil.Process()
    targets = [_holder(psutil.Process(1)), _holder(me)] + [_holder(p) for p in me.parents()[:2]]
    report = kill_holders(targets, grace=0.1)
    reasons = {r["pid"]: r["reason"] for r in report["refused"]}
    assert reasons[1] == "PID 1" and reasons[os.getpid()] == "this process"
    for p in me.parents()[:2]:
        assert reasons[p.pid] in ("an ancestor of this process", "PID 1")
    assert report["killed"] == [] and psutil.pid_exists(me.ppid())


def test_supervised_child_never_signals_its_own_ancestors(tmp_path):
    """A killer started by a GPU-holding parent, itself holding the device, kills only the bystander."""
    dev = tmp_path / "dev"
    dev.mkdir()
    (dev / "nvidia0").touch()
    killer = tmp_path / "killer.py"
    killer.write_text(textwrap.dedent(f'''
        import json, os, subprocess, sys
        from eagle_console.node.kill import kill_holders
        from eagle_console.node.procs import scan_holders
        fd = os.open({str(dev / "nvidia0")!r}, os.O_RDONLY)
        holders = scan_holders(None, device_prefix={str(dev.resolve() / "nvidia")!r}, include_self=True)
        print(json.dumps(kill_holders(holders, grace=5)))
    '''))
    holder_code = f"import os, time; fd = os.open({str(dev / 'nvidia0')!r}, os.O_RDONLY); print('ready', flush=True); time.sleep(60)"
    # its own session: one in the killer's session would be protected ("in the console's session")
    bystander = subprocess.Popen([sys.executable, "-c", holder_code], stdout=subprocess.PIPE, start_new_session=True)
    bystander.stdout.readline()
    parent_code = (f"import os, subprocess, sys; fd = os.open({str(dev / 'nvidia0')!r}, os.O_RDONLY); "
                   f"sys.exit(subprocess.run([sys.executable, {str(killer)!r}]).returncode)")
    try:
        out = subprocess.run([sys.executable, "-c", parent_code], capture_output=True, text=True, timeout=60)
        assert out.returncode == 0, out.stderr
        report = json.loads(out.stdout)
        refused = {r["reason"] for r in report["refused"]}
        assert refused == {"this process", "an ancestor of this process"}
        assert report["killed"] == [bystander.pid]
        assert bystander.wait(timeout=10) == -signal.SIGTERM
    finally:
        bystander.kill()
        bystander.wait()


def test_pid_reuse_guard_spares_the_new_process(tmp_path):
    """The listed process exits and its pid is handed to a new one: the kill must not touch it."""
    last_pid = "/proc/sys/kernel/ns_last_pid"
    if os.geteuid() != 0 or not os.access(last_pid, os.W_OK):
        pytest.skip("needs root to steer pid allocation through ns_last_pid")
    old = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    listed = psutil.Process(old.pid)
    holder = _holder(listed)
    old.kill()
    old.wait()
    time.sleep(0.05)  # create times have 10 ms resolution: a real reuse comes much later than this
    new = None
    for _ in range(20):  # other processes on the machine may take the pid first: retry
        with open(last_pid, "w") as f:
            f.write(str(holder.pid - 1))
        cand = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], start_new_session=True)
        if cand.pid == holder.pid:
            new = cand
            break
        cand.kill()
        cand.wait()
    if new is None:
        pytest.skip("could not get the pid reused")
    try:
        report = kill_holders([holder], grace=0.5)
        assert report["killed"] == [] and report["gone"] == [holder.pid]
        assert new.poll() is None  # same pid, different process: untouched
    finally:
        new.kill()
        new.wait()


def test_other_users_need_root_and_explicit_selection(request):
    if os.geteuid() != 0:
        pytest.skip("needs root to start a process as another user")
    import shutil
    import tempfile

    shared = Path(tempfile.mkdtemp(prefix="eagle-kill-"))  # pytest's tmp dirs are private to root
    request.addfinalizer(lambda: shutil.rmtree(shared, ignore_errors=True))
    os.chmod(shared, 0o755)
    dev = shared / "dev"
    dev.mkdir()
    (dev / "nvidia0").touch()
    code = f"import os, time; fd = os.open({str(dev / 'nvidia0')!r}, os.O_RDONLY); print('ready', flush=True); time.sleep(60)"
    python = "/usr/bin/python3"  # the venv's interpreter may not be readable by another user
    if not Path(python).exists():
        pytest.skip("no system python3 to run as another user")
    other = subprocess.Popen([python, "-c", code], stdout=subprocess.PIPE, user=65534, group=65534,
                             start_new_session=True)
    try:
        assert other.stdout.readline().strip() == b"ready"
        (h,) = scan_holders(None, device_prefix=str(dev.resolve() / "nvidia"))
        assert h.pid == other.pid and h.user != psutil.Process().username()
        assert refusal(h).startswith(f"belongs to {h.user}")
        report = kill_holders([h], grace=0.5)
        assert report["killed"] == [] and other.poll() is None
        report = kill_holders([h], grace=5, explicit=[h.pid])
        assert report["killed"] == [other.pid]
    finally:
        other.kill()
        other.wait()


def test_not_in_namespace_is_never_signalled():
    h = Holder(pid=999999, ppid=None, user=None, command="No Such Process", gpus=[0], used_mib=6754.0,
               in_namespace=False)
    report = kill_holders([h], grace=0.1)
    assert report["refused"] == [{"pid": 999999, "reason": "not in this PID namespace"}]
