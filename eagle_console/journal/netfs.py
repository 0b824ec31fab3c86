"""Is the journal on a network filesystem? Said, because it is an ordinary place for it to end up.

GPU nodes often mount home directories over the network (NFS, a cluster filesystem, a FUSE client of a
bucket), and the state dir sits beside the plan by default. SQLite's WAL keeps its index in memory shared
by every process that opens the database, which machines do not share: two machines using one journal at
once can corrupt it (sqlite.org/wal.html, "WAL does not work over a network filesystem"; sqlite.org
/howtocorrupt.html 2.1 on network filesystems' locking). A state dir on such a filesystem is not refused —
one machine at a time works — but every face says where it is and how to move it.

The filesystem comes from /proc/self/mountinfo (proc(5): field 5 the mount point, octal-escaped; the type
is the first field after the " - " separator): the longest mount point the journal's folder is under.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

MOUNTINFO = "/proc/self/mountinfo"
# Kernel filesystems whose files live on another machine (or are shared by several).
NETWORK_TYPES = frozenset({"nfs", "nfs4", "cifs", "smb3", "smbfs", "ncpfs", "afs", "9p", "ceph", "lustre",
                           "gpfs", "beegfs", "glusterfs", "ocfs2", "gfs2", "orangefs"})
# FUSE clients of remote storage (`fuse.<subtype>`); other FUSE filesystems (fuse-overlayfs under a rootless
# container, lxcfs) are local and not named here.
NETWORK_FUSE = frozenset({"sshfs", "s3fs", "gcsfuse", "juicefs", "rclone", "goofys", "glusterfs", "ceph-fuse",
                          "ossfs", "mountpoint-s3", "blobfuse", "blobfuse2", "weka"})
_OCTAL = re.compile(r"\\([0-7]{3})")


def _unescape(field: str) -> str:
    return _OCTAL.sub(lambda m: chr(int(m.group(1), 8)), field)


def mounts(text: str) -> list[tuple[str, str, str]]:
    """(mount point, filesystem type, source) of each well-formed line of a mountinfo text."""
    out = []
    for line in text.splitlines():
        head, sep, tail = line.partition(" - ")
        fields, rest = head.split(), tail.split()
        if not sep or len(fields) < 5 or not rest:
            continue
        out.append((_unescape(fields[4]), rest[0], _unescape(rest[1]) if len(rest) > 1 else ""))
    return out


def is_network(fstype: str) -> bool:
    kind, _, subtype = fstype.partition(".")
    return fstype in NETWORK_TYPES or (kind in ("fuse", "fuseblk") and subtype in NETWORK_FUSE)


def mount_of(path: Path, text: str) -> tuple[str, str, str] | None:
    """The mount `path` is on: the longest mount point it is under (the last one mounted there wins)."""
    target = os.path.realpath(path)
    best = None
    for point, fstype, source in mounts(text):
        under = target == point or target.startswith(point.rstrip("/") + "/")
        if under and (best is None or len(point) >= len(best[0])):
            best = (point, fstype, source)
    return best


def network_note(journal: Path) -> str | None:
    """What to say when `journal`'s folder is on a network filesystem, else None (also when unknown)."""
    try:
        with open(MOUNTINFO) as f:
            found = mount_of(journal.parent, f.read())
    except OSError:
        return None
    if found is None or not is_network(found[1]):
        return None
    point, fstype, source = found
    return (f"the journal {journal} is on a network filesystem ({fstype} {source} at {point}): two "
            "machines using it at once can corrupt it (SQLite's WAL needs memory they do not share); keep "
            "the state dir on a local disk (EAGLE_CONSOLE_STATE=DIR, or [plan] state_dir)")
