"""The GPUs pane's cached fd scan (node/fdcache.py) finds the same holders as a full scan: a new process
at once, an fd reopened onto a device within the cache's full pass, and a closed one drops out. Real
processes holding real files under a fake /dev prefix (a temp dir), as the sim workers do."""

from __future__ import annotations

import subprocess
import sys
import time

from eagle_console.node.fdcache import LinkCache
from eagle_console.node.procs import scan_device_links

HOLD = """
import os, sys, time
dev = sys.argv[1]
keep = [open(os.path.join(dev, "nvidia0"))]
print("ready", flush=True)
for line in sys.stdin:
    if line.strip() == "swap":  # close the device's fd and open another file on the same number
        n = keep[0].fileno(); keep[0].close()
        fd = os.open(os.path.join(dev, "other"), os.O_RDONLY); os.dup2(fd, n); os.close(fd) if fd != n else None
        print("swapped", flush=True)
"""


def test_cached_scan_matches_a_full_scan(tmp_path):
    dev = tmp_path / "dev"
    dev.mkdir()
    (dev / "nvidia0").write_text("")
    (dev / "other").write_text("")
    prefix = str(dev / "nvidia")
    cache = LinkCache(full_s=0.5)
    scan_device_links(prefix, cache=cache)  # warm: every link read once
    p = subprocess.Popen([sys.executable, "-c", HOLD, str(dev)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         text=True)
    try:
        assert p.stdout.readline().strip() == "ready"
        # a process not seen before is read at once
        assert scan_device_links(prefix, cache=cache).get(p.pid) == {"0"}
        assert scan_device_links(prefix, cache=cache) == scan_device_links(prefix)
        p.stdin.write("swap\n")
        p.stdin.flush()
        assert p.stdout.readline().strip() == "swapped"
        # the same fd number now points elsewhere: a full pass (within full_s) sees it
        time.sleep(0.6)
        assert p.pid not in scan_device_links(prefix, cache=cache)
        assert scan_device_links(prefix) == scan_device_links(prefix, cache=cache)
    finally:
        p.kill()
        p.wait()
    assert p.pid not in scan_device_links(prefix, cache=cache)  # gone: dropped from the cache too
    assert not any(pid == str(p.pid) for pid, _fd in cache.links)
