"""GPU holders as a container sees them: NVML's pids are the host's, CUDA opens every device file.

Real processes throughout: simulated workers (eagle_console.sim) on a sim node in container mode, whose
backend reports local pid + CONTAINER_PID_OFFSET as NVML in an LXC container reports host pids.
"""

from __future__ import annotations

import json
import os
import subprocess

import clikit
import psutil
import pytest

from eagle_console.node.gpus import GpuProcessSample, GpuSample, NodeSample, open_backend
from eagle_console.node.procs import scan_device_fds, scan_node
from eagle_console.sim import gpustate
from eagle_console.sim.orphans import leave_orphans


def cli(*args: str) -> subprocess.CompletedProcess:
    return clikit.run(args, timeout=120)


def _kill(pids: list[int]) -> None:
    for pid in pids:
        try:
            psutil.Process(pid).kill()
        except psutil.Error:
            pass


@pytest.fixture
def container_sim(tmp_path):
    sim = tmp_path / "sim"
    gpustate.create_node(sim, container=True)
    return sim


def test_sim_workers_open_every_device_file_yet_hold_their_own_gpu(tmp_path):
    """As the real orphan in fixtures/h200/orphan.txt: nvidiaN, nvidiactl and nvidia-uvm are all open."""
    sim = tmp_path / "sim"
    gpustate.create_node(sim)
    pids = leave_orphans(sim, 1, mib=700.0, gpus=[6])
    try:
        backend = open_backend(sim)
        assert scan_device_fds(backend.device_prefix)[pids[0]] == {*range(8), None}
        scan = scan_node(backend.sample(), device_prefix=backend.device_prefix)
        (h,) = [h for h in scan.holders if h.pid == pids[0]]
        assert scan.pid_namespace == "local"
        assert h.gpus == [6] and h.used_by_gpu == {6: 700.0} and h.cls == "orphan"
    finally:
        _kill(pids)


def test_container_node_is_foreign_and_orphans_keep_gpu_and_memory_then_die(container_sim):
    pids = leave_orphans(container_sim, 2, mib=6120.0, gpus=[3, 3])
    try:
        out = cli("gpus", "--json", "--sim", str(container_sim))
        assert out.returncode == 0, out.stderr
        doc = json.loads(out.stdout)
        assert doc["pid_namespace"] == "foreign"
        # both entries use GPU 3 with 6120 MiB: any pairing of host and local pids gives the same answer
        procs = doc["gpus"][3]["processes"]
        assert sorted(p["pid"] for p in procs) == sorted(pids)
        assert all(p["used_mib"] == 6120.0 and p["class"] == "orphan" for p in procs)
        assert all(not g["processes"] for g in doc["gpus"] if g["index"] != 3)
        assert doc["gpus"][3]["memory_used_mib"] == 12240.0
        text = cli("gpus", "--sim", str(container_sim)).stdout
        assert "container: NVML pids are the host's" in text
        out = cli("orphans", "--json", "--kill", "--yes", "--grace", "2s", "--sim", str(container_sim))
        assert out.returncode == 0, out.stderr
        killed = json.loads(out.stdout)
        assert sorted(killed["killed"]) == sorted(pids) and killed["survivors"] == []
        assert killed["freed_mib"] == {"3": 12240.0}
        assert gpustate.holders(container_sim) == []
    finally:
        _kill(pids)


def test_container_orphans_on_different_gpus_say_unknown_gpu_and_are_still_killed(container_sim):
    """Two host entries (GPU 3, GPU 5) and two local CUDA processes: which is which cannot be known."""
    pids = leave_orphans(container_sim, 2, mib=6120.0, gpus=[3, 5])
    try:
        listed = json.loads(cli("orphans", "--json", "--sim", str(container_sim)).stdout)
        local = {h["pid"]: h for h in listed["holders"] if h["pid"] in pids}
        assert set(local) == set(pids)
        assert all(h["class"] == "orphan" and h["gpus"] == [] and h["used_mib"] is None for h in local.values())
        host = {h["pid"]: h for h in listed["holders"] if h["pid"] not in pids}
        offset = gpustate.CONTAINER_PID_OFFSET
        assert set(host) == {p + offset for p in pids}  # kept, labelled, never signalled (state.md)
        assert {tuple(h["gpus"]) for h in host.values()} == {(3,), (5,)}
        assert all(h["reason"] == "not in this PID namespace" and h["class"] == "other" for h in host.values())
        out = cli("orphans", "--json", "--kill", "--yes", "--grace", "2s", "--sim", str(container_sim))
        assert out.returncode == 0, out.stderr
        assert sorted(json.loads(out.stdout)["killed"]) == sorted(pids)
        assert gpustate.holders(container_sim) == []
        doc = json.loads(cli("gpus", "--json", "--sim", str(container_sim)).stdout)
        assert all(g["memory_used_mib"] == 0 and not g["processes"] for g in doc["gpus"])
    finally:
        _kill(pids)


def test_a_host_pid_equal_to_an_unrelated_local_pid_is_not_attributed_to_it(tmp_path):
    """NVML lists a host pid that happens to be the pid of a local process holding no GPU (here: a
    sleeping child) while the local GPU process (here: this test, holding the sim's files) has another."""
    sim = tmp_path / "sim"
    gpustate.create_node(sim)
    gpustate.open_device_files(sim)  # this process: the local CUDA process
    bystander = subprocess.Popen(["sleep", "60"])
    try:
        missing = int(open("/proc/sys/kernel/pid_max").read())  # never a local pid
        sample = NodeSample("nvml", "580.159.04", None, [
            GpuSample(index=i, minor=i, memory_used_mib=0.0, processes=[]) for i in range(8)])
        sample.gpus[2].processes = [GpuProcessSample(bystander.pid, 5000.0)]
        sample.gpus[4].processes = [GpuProcessSample(missing, 800.0)]
        prefix = str((sim / "dev").resolve() / "nvidia")
        scan = scan_node(sample, device_prefix=prefix, include_self=True)
        assert scan.pid_namespace == "foreign"
        by_pid = {h.pid: h for h in scan.holders}
        assert not by_pid[bystander.pid].in_namespace  # a host pid row, not `sleep`
        assert by_pid[bystander.pid].command == "host pid (not in this container)"
        assert by_pid[bystander.pid].proc is None  # nothing to signal: kill.py refuses it
        me = by_pid[os.getpid()]
        assert me.in_namespace and me.has_context and not me.gpus_known and me.gpus == []
    finally:
        bystander.kill()
        bystander.wait()


def test_a_kill_whose_gpus_were_unknown_says_only_the_gpus_that_gave_memory_back(container_sim):
    """Two orphans of equal size on GPUs 3 and 5 in a container (the demo's `--container` node): NVML's host
    pids cannot be paired with the local ones, so the kill watches every GPU. It then said all eight, six of
    them "0 MiB" (`freed 12240 MiB (GPU 0: 0 MiB, GPU 1: 0 MiB, …)` in the K dialog, found by hand), as if it
    had tried them; a GPU it only watched is said where memory came back."""
    pids = leave_orphans(container_sim, 2, mib=6120.0, gpus=[3, 5])
    try:
        doc = json.loads(cli("orphans", "--json", "--sim", str(container_sim)).stdout)
        assert {tuple(h["gpus"]) for h in doc["holders"] if h["pid"] in pids} == {()}  # unknown, as in the demo
        out = cli("orphans", "--json", "--kill", "--yes", "--grace", "2s", "--sim", str(container_sim))
        assert out.returncode == 0, out.stderr
        killed = json.loads(out.stdout)
        assert sorted(killed["killed"]) == sorted(pids) and killed["survivors"] == []
        assert killed["freed_mib"] == {"3": 6120.0, "5": 6120.0}
    finally:
        _kill(pids)
