"""A local cluster stopped early in its start (`demo --nodes 2` and Ctrl+C, the terminal closed) leaves no
process of any node. CI saw one Ray process left after Ctrl+C (`test_multinode_demo`, the VM at load 39):
a signal landing between a node's `ray start` spawn and its record here lost that node to stop(), and stop()
looked once, before its nodes were stopped, so whatever a node started after that look was left running.

Real processes and signals, no Ray: a node's host prefix (`Placement.prefix`, what the two-host tests put
in front of `ray start`) is a shell that starts two marked sleeps in the node's session instead."""

from __future__ import annotations

import subprocess
import sys
import uuid
from pathlib import Path

import psutil

SCRIPT = r'''
import os, signal, subprocess, sys, time
from pathlib import Path
from eagle_console.cluster import local

root, marker, mode = Path(sys.argv[1]), sys.argv[2], sys.argv[3]
# Ctrl+C as Python sets it up from a terminal: a suite run in the background (`.ci/run &`) starts this
# with SIGINT ignored, and an ignored signal is not held but ignored (signals_held leaves it so)
signal.signal(signal.SIGINT, signal.default_int_handler)
if mode == "held":  # the signal lands right after the spawn, before the node is recorded
    real = subprocess.Popen
    class Interrupted(real):
        def __init__(self, *a, **k):
            super().__init__(*a, **k)
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(0.3)  # Python runs the handler here, inside start_node
    local.subprocess.Popen = Interrupted
script = f"sleep {marker} & sleep {marker} & " + ("wait" if mode == "held" else "sleep 0.3")
place = local.Placement("127.0.0.1", ("sh", "-c", script, "sh"))
cluster = local.LocalCluster(root, root / "t" / "ray", "127.0.0.1:1", "http://127.0.0.1:2", {}, {},
                             placement={"b": place})
try:
    cluster.start_node("b", None, head=False)
except (KeyboardInterrupt, RuntimeError) as exc:
    print("stopped:", type(exc).__name__, sorted(cluster.nodes), flush=True)
    cluster.stop()
'''


def _marked(marker: str) -> list[str]:
    out = []
    for p in psutil.process_iter(["pid", "cmdline"]):
        if marker in " ".join(p.info["cmdline"] or ()):
            out.append(f"{p.pid} {' '.join(p.info['cmdline'])}")
    return out


def _run(tmp_path: Path, mode: str) -> tuple[str, list[str]]:
    marker = f"3{uuid.uuid4().int % 10**6}.5"  # a sleep no other test starts
    out = subprocess.run([sys.executable, "-c", SCRIPT, str(tmp_path), marker, mode], capture_output=True,
                         text=True, timeout=60)
    left = _marked(marker)
    for line in left:  # never leave them to the rest of the suite
        psutil.Process(int(line.split()[0])).kill()
    return out.stdout + out.stderr, left


def test_ctrl_c_between_a_nodes_spawn_and_its_record_is_held_and_the_node_stopped(tmp_path: Path):
    """Before: KeyboardInterrupt inside start_node, the node never recorded: both sleeps left running."""
    out, left = _run(tmp_path, "held")
    assert "stopped: KeyboardInterrupt ['b']" in out, out
    assert left == [], out


def test_what_a_node_started_after_stops_first_look_is_stopped_too(tmp_path: Path):
    """A node's `ray start` gone (SIGTERM before Ray set its handler), its children orphaned in its session:
    before, stop() found none of them (not children of a live `ray start`, no temp dir in their argv)."""
    out, left = _run(tmp_path, "orphaned")
    assert "stopped: RuntimeError ['b']" in out, out
    assert left == [], out
