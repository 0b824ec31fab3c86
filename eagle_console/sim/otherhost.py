"""Run a command as another machine that shares this one's files would run it.

GPU nodes often share home directories (NFS): a plan, and the state dir beside it, are then seen from
every machine the operator logs in to. A console on the second machine sees none of the first's processes,
its pids are numbered on their own, its hostname and boot id are its own. This shows one command exactly
that: a PID namespace with its own /proc, a UTS namespace with `hostname`, and a boot id of its own bound
over /proc/sys/kernel/random/boot_id (a mount namespace) — the files stay shared, as on NFS. Needs root;
`usable()` says whether it can be done here.

    python -m eagle_console.sim.otherhost --hostname node-b -- eagle-console status PLAN --json
"""

from __future__ import annotations

import subprocess
import sys
import uuid

from eagle_console.sim import nsview

# unshare(1) mounts the PID namespace's own /proc first; the boot id is bound over that one
SCRIPT = 'hostname "$1" && mount --bind "$2" /proc/sys/kernel/random/boot_id && shift 2 && exec "$@"'


def command(argv: list[str], hostname: str, boot_id_file: str) -> list[str]:
    return ["unshare", "--pid", "--fork", "--mount-proc", "--uts", "--mount", "--propagation", "private",
            "sh", "-c", SCRIPT, "sh", hostname, boot_id_file, *argv]


def run(argv: list[str], hostname: str, **popen) -> subprocess.CompletedProcess:
    """Run `argv` to its end as machine `hostname` (a new boot id each call); `popen` as subprocess.run's."""
    return nsview.run_with_file(f"{uuid.uuid4()}\n".encode(), "otherhost-boot-",
                                lambda path: command(argv, hostname, path), **popen)


def usable() -> str | None:
    """None when a command can be run as another machine here, else why not."""
    why, out = nsview.probe("PID, UTS and mount namespaces of its own", lambda: run(
        ["sh", "-c", "hostname; cat /proc/sys/kernel/random/boot_id; echo $$"], "sim-probe",
        capture_output=True, text=True, timeout=30))
    if out is None:
        return why
    lines = out.stdout.split()
    if out.returncode != 0 or len(lines) != 3 or lines[0] != "sim-probe" or lines[2] != "1":
        return f"unshare failed: {out.stderr.strip()[:200]}"
    return None


def main(argv: list[str] | None = None) -> int:
    return nsview.main(argv, prog="eagle_console.sim.otherhost", doc=__doc__, flag="--hostname",
                       flag_kw={"default": "node-b", "help": "the other machine's hostname (default node-b)"},
                       usable=usable, run=run)


if __name__ == "__main__":
    sys.exit(main())
