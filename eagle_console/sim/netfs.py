"""Run a command that sees a folder as mounted from a network filesystem (an NFS home, say).

Only what a process reads of its mounts changes: a copy of its /proc/PID/mountinfo with one more line, a
mount of `fstype` at the folder, bound over the file (a mount namespace of its own; the command keeps the
shell's pid through exec, so its /proc/self is that file). The files stay where they are. Needs root;
`usable()` says whether it can be done here.

    python -m eagle_console.sim.netfs --at plans/ -- eagle-console status plans/demo.toml
"""

from __future__ import annotations

import os
import subprocess
import tempfile

from eagle_console.sim import nsview

# A line in proc(5)'s layout as an NFS v4.1 client writes it (options as a Kubernetes node's NFS volume
# has them)
LINE = ("999 1 0:212 / {point} rw,relatime - {fstype} 10.0.0.5:/export/home rw,vers=4.1,rsize=1048576,"
        "wsize=1048576,namlen=255,hard,proto=tcp,timeo=600,retrans=2,sec=sys,clientaddr=10.0.0.7,"
        "local_lock=none")
SCRIPT = 'mount --bind "$1" /proc/$$/mountinfo && shift && exec "$@"'


def _escape(path: str) -> str:
    return "".join(f"\\{ord(c):03o}" if c in " \t\n\\" else c for c in path)


def run(argv: list[str], at: str, fstype: str = "nfs4", **popen) -> subprocess.CompletedProcess:
    """Run `argv` to its end seeing folder `at` as a mount of `fstype`; `popen` as subprocess.run's."""
    with open("/proc/self/mountinfo") as f:
        text = f.read()
    content = text + LINE.format(point=_escape(os.path.realpath(at)), fstype=fstype) + "\n"
    return nsview.run_with_file(content.encode(), "netfs-mountinfo-", lambda path: [
        "unshare", "--mount", "--propagation", "private", "sh", "-c", SCRIPT, "sh", path, *argv], **popen)


def usable() -> str | None:
    """None when a command can be shown a network mount here, else why not."""
    with tempfile.TemporaryDirectory() as d:
        why, out = nsview.probe("a mount namespace of its own", lambda: run(
            ["cat", "/proc/self/mountinfo"], d, capture_output=True, text=True, timeout=30))
    if out is None:
        return why
    if out.returncode != 0 or " - nfs4 " not in out.stdout:
        return f"unshare failed: {out.stderr.strip()[:200]}"
    return None


def main(argv: list[str] | None = None) -> int:
    return nsview.main(argv, prog="eagle_console.sim.netfs", doc=__doc__, flag="--at",
                       flag_kw={"required": True, "help": "the folder to show as an NFS mount"},
                       usable=usable, run=run)


if __name__ == "__main__":
    import sys

    sys.exit(main())
