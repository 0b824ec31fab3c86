"""A state dir on a network filesystem (the plan in an NFS home, the default place for its state dir) is
said by every face, with where it is and how to move it: two machines on one SQLite WAL journal can
corrupt it. Before, nothing said so; docs/decisions.md only asked for a local disk."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from enginekit import write_plan

from eagle_console.journal.netfs import is_network, mount_of, mounts
from eagle_console.sim import netfs

# Lines in proc(5)'s layout: the root, an NFS v4.1 volume as a Kubernetes node mounts it, a home over sshfs,
# a rootless container's fuse-overlayfs (local), and a mount point with a space (octal-escaped).
MOUNTINFO = """\
22 1 254:0 / / rw,relatime - ext4 /dev/vda rw,discard
3417 22 0:212 / /home rw,relatime - nfs4 20.20.20.43:/data/home rw,vers=4.1,rsize=1048576,wsize=1048576,\
namlen=255,hard,proto=tcp,timeo=600,retrans=2,sec=sys,clientaddr=20.20.20.27,local_lock=none,addr=20.20.20.43
3420 3417 0:215 / /home/alice/scratch rw,relatime - ext4 /dev/nvme1n1 rw
3500 22 0:300 / /mnt/remote rw,nosuid,nodev,relatime - fuse.sshfs alice@login:/srv rw,user_id=0,group_id=0
3600 22 0:301 / /var/lib/containers/overlay rw,relatime - fuse.fuse-overlayfs fuse-overlayfs rw,user_id=0
3700 22 0:302 / /mnt/team\\040share rw,relatime - cifs //nas/team rw,vers=3.1.1
no separator on this line
"""


def test_mountinfo_lines_give_the_mount_each_folder_is_on():
    assert ("/mnt/team share", "cifs", "//nas/team") in mounts(MOUNTINFO)
    assert mount_of(Path("/home/alice/plans"), MOUNTINFO)[:2] == ("/home", "nfs4")
    assert mount_of(Path("/home/alice/scratch/plans"), MOUNTINFO)[:2] == ("/home/alice/scratch", "ext4")
    assert mount_of(Path("/homework"), MOUNTINFO)[:2] == ("/", "ext4")  # a prefix of the name is not under it
    assert mount_of(Path("/mnt/team share/p"), MOUNTINFO)[1] == "cifs"
    kinds = {point: fstype for point, fstype, _ in mounts(MOUNTINFO)}
    assert [p for p, t in kinds.items() if is_network(t)] == ["/home", "/mnt/remote", "/mnt/team share"]


def status(plan: Path, at: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    argv = [sys.executable, "-m", "eagle_console", "status", str(plan)]
    return netfs.run(argv, str(at), capture_output=True, text=True, timeout=60, env=env)


def test_a_journal_on_nfs_is_said_with_where_and_how_to_move_it(tmp_path, monkeypatch):
    if why := netfs.usable():
        pytest.skip(f"netfs: {why}")
    home = tmp_path / "home"
    home.mkdir()
    plan = write_plan(home, '[[phase]]\nid = "0"\ntitle = "p"\n\n  [[phase.step]]\n  id = "0.1"\n'
                            '  title = "s"\n')
    monkeypatch.delenv("EAGLE_CONSOLE_STATE", raising=False)
    seen = status(plan, home)
    assert seen.returncode == 0, seen.stderr
    assert "is on a network filesystem (nfs4 10.0.0.5:/export/home" in seen.stderr, seen.stderr
    assert "EAGLE_CONSOLE_STATE" in seen.stderr and "0.1" in seen.stdout
    # the same command with the state dir on a local disk, or outside the view: nothing to say
    local = status(plan, home, env={**os.environ, "EAGLE_CONSOLE_STATE": str(tmp_path / "st")})
    assert local.returncode == 0 and "network filesystem" not in local.stderr, local.stderr
    plain = subprocess.run([sys.executable, "-m", "eagle_console", "status", str(plan)], capture_output=True,
                           text=True, timeout=60)
    assert plain.returncode == 0 and "network filesystem" not in plain.stderr, plain.stderr
