"""`eagle-console demo` when its terminal goes away (SIGHUP: the ssh window closed, the tmux session killed)
or it is told to stop (SIGTERM): it stops its simulated processes and says so, as on `q`. It died of the
signal at once (exit -1) and left its two orphaned workers running (found by hand); the multi-node demo
already handled both (test_multinode_demo). Real processes and signals; stdout is a pipe, not a terminal."""

from __future__ import annotations

import signal
import subprocess
import sys
import time

import pytest

from eagle_console.sim import gpustate


@pytest.mark.parametrize(("sig", "after"), [("SIGHUP", 1.5), ("SIGTERM", 1.5), ("SIGHUP", 0.0)],
                         ids=["hangup-console-up", "term-console-up", "hangup-as-it-opens"])
def test_the_demo_stops_its_simulated_processes_on_hangup(tmp_path, sig, after):
    root = tmp_path / "demo"
    proc = subprocess.Popen([sys.executable, "-m", "eagle_console", "demo", "--dir", str(root)],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, text=True)
    try:
        deadline = time.monotonic() + 60
        while len(gpustate.holders(root / "sim")) < 2:  # built: its two orphans hold their memory
            assert proc.poll() is None and time.monotonic() < deadline, proc.stdout.read()
            time.sleep(0.1)
        time.sleep(after)  # the console up, or still opening
        proc.send_signal(getattr(signal, sig))
        out, _ = proc.communicate(timeout=60)
        held = [h.pid for h in gpustate.holders(root / "sim")]
    finally:
        if proc.poll() is None:
            proc.kill()
        for holder in gpustate.holders(root / "sim"):  # never left to the rest of the suite
            subprocess.run(["kill", "-9", str(holder.pid)], check=False)
    assert proc.returncode == 128 + getattr(signal, sig), out[-500:]
    assert held == [], out[-500:]
    assert f"stopped 2 simulated processes of the demo; its files stay in {root}" in out, out[-500:]
