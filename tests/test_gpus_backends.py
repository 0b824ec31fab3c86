"""GPU backends: the simulated node, the no-driver backend, NVML's error messages."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time

import pytest

from eagle_console.node.gpus import BACKEND_ENV, open_backend
from eagle_console.node.gpus.nvml import _explain
from eagle_console.sim import gpustate

HOLD = textwrap.dedent('''
    import sys, time
    from eagle_console.sim import gpustate
    gpustate.hold(sys.argv[1], {0: 40000.0, 1: 1500.0})
    gpustate.set_activity(sys.argv[1], {0: 80.0})
    print("ready", flush=True)
    time.sleep(60)
''')


@pytest.fixture
def sim(tmp_path):
    d = tmp_path / "sim"
    gpustate.create_node(d)
    return d


def test_sim_memory_follows_live_holders_and_activity(sim):
    backend = open_backend(sim)
    assert backend.name == "sim"
    idle = backend.sample()
    assert idle.backend == "sim" and idle.error is None and len(idle.gpus) == 8
    g0 = idle.gpus[0]
    assert g0.memory_used_mib == 0 and g0.memory_total_mib == gpustate.GPU_MEMORY_MIB
    assert (g0.pcie_gen, g0.pcie_width, g0.minor, g0.processes) == (5, 16, 0, [])
    holder = subprocess.Popen([sys.executable, "-c", HOLD, str(sim)], stdout=subprocess.PIPE)
    try:
        holder.stdout.readline()
        busy = backend.sample()
        b0, b1 = busy.gpus[0], busy.gpus[1]
        assert b0.memory_used_mib == 40000.0 and b1.memory_used_mib == 1500.0
        assert [(p.pid, p.used_mib) for p in b0.processes] == [(holder.pid, 40000.0)]
        assert b0.utilization_pct == 80.0 and b1.utilization_pct == 0.0
        assert b0.power_w > b1.power_w and b0.temperature_c > b1.temperature_c
        assert b0.power_w <= b0.power_limit_w
    finally:
        holder.kill()
        holder.wait()
    # as a real driver: the process leaves the list at once, its memory the total a little later
    leaving = backend.sample()
    assert leaving.gpus[0].processes == [] and leaving.gpus[0].memory_used_mib > 0
    time.sleep(gpustate.RELEASE_LAG_S + 0.1)
    freed = backend.sample()
    assert freed.gpus[0].memory_used_mib == 0 and freed.gpus[0].utilization_pct == 0


def test_none_backend_forced_by_argument_or_env(monkeypatch, sim):
    forced = open_backend(sim, prefer="none").sample()
    assert (forced.backend, forced.gpus, forced.driver) == ("none", [], None) and forced.error
    monkeypatch.setenv(BACKEND_ENV, "none")
    assert open_backend(None).sample().backend == "none"
    monkeypatch.setenv(BACKEND_ENV, "bogus")
    assert "unknown GPU backend" in open_backend(None).sample().error


def test_without_sim_falls_back_to_nvml_or_none_with_a_reason(monkeypatch):
    monkeypatch.delenv(BACKEND_ENV, raising=False)
    backend = open_backend(None)
    sample = backend.sample()
    backend.close()
    if sample.backend == "nvml":
        assert sample.driver and all(g.memory_total_mib for g in sample.gpus)
    else:
        assert sample.backend == "none" and sample.gpus == []
        assert "nvml" in sample.error.lower() or "nvidia" in sample.error.lower()


def test_nvml_failures_are_named():
    pynvml = pytest.importorskip("pynvml")
    assert "version mismatch" in _explain(pynvml.NVMLError_LibRmVersionMismatch())
    assert "library not found" in _explain(pynvml.NVMLError_LibraryNotFound())
    assert "driver not loaded" in _explain(pynvml.NVMLError_DriverNotLoaded())
