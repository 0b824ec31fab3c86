"""GPU holder scan and classification on real process trees made by the tests."""

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

from eagle_console.node.gpus import GpuProcessSample, GpuSample, NodeSample, open_backend
from eagle_console.node.procs import (
    TrackedRun,
    device_minor,
    gpus_document,
    is_console_command,
    scan_device_fds,
    scan_holders,
    scan_node,
)
from eagle_console.processes import alive, start_of
from eagle_console.sim import gpustate

# One script, three roles: a subreaper that adopts orphans and reaps them, a launcher that starts
# workers and then waits to be SIGKILLed, and a worker that holds a (fake or simulated) GPU.
TREE = textwrap.dedent('''
    import ctypes, json, os, signal, subprocess, sys, time
    role = sys.argv[1]
    if role == "subreaper":
        ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER
        launcher = subprocess.Popen([sys.executable, __file__, "launcher", *sys.argv[2:]], stdout=subprocess.PIPE)
        sys.stdout.write(launcher.stdout.readline().decode()); sys.stdout.flush()
        while True:  # reap adopted workers as they die
            try:
                os.waitpid(-1, 0)
            except ChildProcessError:
                time.sleep(0.05)
    elif role == "launcher":
        kind, where, count, term = sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5]
        workers = [subprocess.Popen([sys.executable, __file__, "worker", kind, where, str(i), term],
                                    stdout=subprocess.PIPE) for i in range(count)]
        for w in workers:
            w.stdout.readline()
        print(json.dumps({"launcher": os.getpid(), "workers": [w.pid for w in workers]}), flush=True)
        while True:
            time.sleep(1)
    else:
        kind, where, gpu, term = sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5]
        if term == "ignore-term":
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
        if kind == "sim":
            from eagle_console.sim import gpustate
            gpustate.hold(where, {gpu: 1000.0 * (gpu + 1)})
        else:  # plain files standing in for /dev/nvidiaN and /dev/nvidiactl
            fds = [os.open(os.path.join(where, n), os.O_RDONLY) for n in (f"nvidia{gpu}", "nvidiactl")]
        print("ready", flush=True)
        while True:
            signal.pause()
''')


class Tree:
    """A real process tree: [subreaper ->] launcher -> workers holding GPUs."""

    def __init__(self, tmp: Path, kind: str, where: Path, count: int = 2, subreaper: bool = False,
                 ignore_term: bool = False) -> None:
        script = tmp / "tree.py"
        script.write_text(TREE)
        role = "subreaper" if subreaper else "launcher"
        self.top = subprocess.Popen([sys.executable, str(script), role, kind, str(where), str(count),
                                     "ignore-term" if ignore_term else "-"],
                                    stdout=subprocess.PIPE, start_new_session=True)
        info = json.loads(self.top.stdout.readline())
        self.launcher: int = info["launcher"]
        self.workers: list[int] = info["workers"]

    def kill_launcher(self) -> None:
        os.kill(self.launcher, signal.SIGKILL)
        if self.top.pid == self.launcher:
            self.top.wait()
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if all(psutil.Process(w).ppid() != self.launcher for w in self.workers):
                return
            time.sleep(0.02)
        raise AssertionError("workers were not reparented")

    def close(self) -> None:
        for pid in [*self.workers, self.launcher, self.top.pid]:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self.top.wait()


@pytest.fixture
def fake_dev(tmp_path):
    dev = tmp_path / "dev"
    dev.mkdir()
    for name in ("nvidia0", "nvidia1", "nvidiactl", "nvidia-uvm"):
        (dev / name).touch()
    return dev


@pytest.fixture
def sim(tmp_path):
    d = tmp_path / "sim"
    gpustate.create_node(d)
    return d


def test_device_minor_maps_gpus_and_control_files():
    assert device_minor("/dev/nvidia3", "/dev/nvidia") == 3
    assert device_minor("/dev/nvidiactl", "/dev/nvidia") is None
    assert device_minor("/dev/nvidia-uvm", "/dev/nvidia") is None
    assert device_minor("/dev/nvidia-caps/nvidia-cap1", "/dev/nvidia") is None
    assert device_minor("/dev/null", "/dev/nvidia") is False


def test_fd_scan_finds_this_process_with_minors(fake_dev):
    fds = [os.open(fake_dev / n, os.O_RDONLY) for n in ("nvidia1", "nvidiactl", "nvidia-uvm")]
    try:
        found = scan_device_fds(str(fake_dev.resolve() / "nvidia"))
    finally:
        for fd in fds:
            os.close(fd)
    assert found[os.getpid()] == {1, None}


def test_launcher_sigkilled_leaves_orphans_with_the_subreaper(tmp_path, sim):
    tree = Tree(tmp_path, "sim", sim, count=2, subreaper=True)
    backend = open_backend(sim)
    try:
        before = {h.pid: h for h in scan_holders(backend.sample(), device_prefix=backend.device_prefix,
                                                 subreapers={tree.top.pid})}
        assert {before[w].cls for w in tree.workers} == {"other"}
        assert before[tree.workers[1]].gpus == [1] and before[tree.workers[1]].used_mib == 2000.0
        tree.kill_launcher()
        holders = {h.pid: h for h in scan_holders(backend.sample(), device_prefix=backend.device_prefix,
                                                  subreapers={tree.top.pid})}
        for w in tree.workers:
            assert holders[w].ppid == tree.top.pid
            assert holders[w].cls == "orphan"
            assert holders[w].reason == f"reparented to subreaper {tree.top.pid}"
    finally:
        tree.close()


def test_sim_orphans_are_orphans_under_pid1_or_any_subreaper(sim):
    from eagle_console.sim.orphans import leave_orphans

    pids = leave_orphans(sim, 2, mib=512.0, gpus=[2, 6])
    try:
        backend = open_backend(sim)
        holders = {h.pid: h for h in scan_holders(backend.sample(), device_prefix=backend.device_prefix)}
        for pid, gpu in zip(pids, [2, 6], strict=True):
            h = holders[pid]
            assert h.cls == "orphan" and h.gpus == [gpu] and h.used_mib == 512.0
            # ppid 1 here; under an unknown subreaper the dead session leader gives it away
            assert h.reason == "ppid 1" if h.ppid == 1 else h.reason.startswith("session leader")
    finally:
        for pid in pids:
            os.kill(pid, signal.SIGKILL)


def test_run_session_tracked_while_main_alive_then_orphaned(tmp_path, sim):
    tree = Tree(tmp_path, "sim", sim, count=1)
    backend = open_backend(sim)
    try:
        sid = os.getsid(tree.launcher)
        born = start_of(tree.launcher)  # the leader's identity, as the journal keeps it

        def run() -> TrackedRun:
            return TrackedRun(step_id="0.3", run_id=12, sid=sid, main_pid=tree.launcher,
                              main_alive=alive(tree.launcher), main_ctime=born)

        (h,) = scan_holders(backend.sample(), [run()], device_prefix=backend.device_prefix)
        assert (h.cls, h.owner, h.reason) == ("tracked", "0.3", "session of run 12")
        tree.kill_launcher()
        (h,) = scan_holders(backend.sample(), [run()], device_prefix=backend.device_prefix)
        assert (h.cls, h.owner, h.reason) == ("orphan", "0.3", "launcher of run 12 exited")
    finally:
        tree.close()


def test_fd_only_holder_under_init_is_not_an_orphan(tmp_path, fake_dev):
    """A daemon holding only the device files (no GPU memory) under PID 1 is `other`."""
    tree = Tree(tmp_path, "files", fake_dev, count=1)
    try:
        tree.kill_launcher()
        prefix = str(fake_dev.resolve() / "nvidia")
        (h,) = scan_holders(None, device_prefix=prefix, subreapers={psutil.Process(tree.workers[0]).ppid()})
        assert h.pid == tree.workers[0] and h.gpus == [0] and h.used_mib is None
        assert h.cls == "other" and h.reason.endswith("no GPU memory")
    finally:
        tree.close()


def test_nvml_pid_outside_namespace_is_kept_and_labelled():
    missing = int(Path("/proc/sys/kernel/pid_max").read_text())  # pids are < pid_max: never a process
    sample = NodeSample("nvml", "580.159.04", None, [GpuSample(
        index=0, name="NVIDIA H200", minor=0, memory_used_mib=7736.0,
        processes=[GpuProcessSample(missing, 6754.0)])])
    scan = scan_node(sample, device_prefix="/nonexistent/nvidia")
    (h,) = [h for h in scan.holders if h.pid == missing]
    assert not h.in_namespace and h.cls == "other" and h.reason == "not in this PID namespace"
    assert h.used_mib == 6754.0 and h.gpus == [0]
    # no NVML pid has fd evidence here: the pids are another namespace's (a container's host)
    assert scan.pid_namespace == "foreign"
    doc = gpus_document(sample, [h], scan.pid_namespace)
    assert doc["pid_namespace"] == "foreign"
    assert doc["gpus"][0]["processes"] == [{"pid": missing, "used_mib": 6754.0,
                                           "command": "host pid (not in this container)",
                                           "class": "other", "owner": None, "same_session": False}]


def test_console_processes_are_never_orphans():
    assert is_console_command("/usr/bin/python3 /usr/local/bin/eagle-console plans/phase0.toml")
    assert is_console_command("python3 -m eagle_console orphans --json")
    assert not is_console_command("python -m eagle_console.sim.orphans worker --sim /tmp/eagle-console/sim")
    assert not is_console_command("sglang::scheduler_TP0")
