"""Run a command as another user of a node whose /proc hides each user's processes from the others.

Hardened nodes shared by several people mount /proc with `hidepid=2` (proc(5)): a user sees only their
own processes there, while NVML still lists every process on the GPUs. This shows one command that: a
mount namespace with /proc mounted again with hidepid=2, the command run as uid `uid` (not root, whom
hidepid does not hide anything from). Needs root; `usable()` says whether it can be done here (the
command's Python must be readable by that uid).

    python -m eagle_console.sim.hidepid --uid 4242 -- eagle-console gpus --json --sim DIR
"""

from __future__ import annotations

import subprocess
import sys

from eagle_console.sim import nsview

SCRIPT = ('mount -t proc -o hidepid=2 proc /proc && uid=$1 && shift && '
          'exec setpriv --reuid "$uid" --regid "$uid" --clear-groups "$@"')


def run(argv: list[str], uid: int, **popen) -> subprocess.CompletedProcess:
    """Run `argv` to its end as `uid` under a hidepid=2 /proc; `popen` as subprocess.run's."""
    return subprocess.run(["unshare", "--mount", "--propagation", "private", "sh", "-c", SCRIPT, "sh",
                           str(uid), *argv], **popen)


def usable(uid: int = 4242, env: dict[str, str] | None = None) -> str | None:
    """None when a command can be run here as `uid` under a hidepid /proc (with `env`), else why not."""
    probe = "import os, psutil, eagle_console; print(len([p for p in os.listdir('/proc') if p.isdigit()]))"
    why, out = nsview.probe("a mount namespace, a /proc mount, another uid", lambda: run(
        [sys.executable, "-c", probe], uid, capture_output=True, text=True, timeout=60, env=env),
        tools=("unshare", "setpriv"))
    if out is None:
        return why
    if out.returncode != 0:
        return f"cannot run Python as uid {uid} under a hidepid /proc: {out.stderr.strip()[-200:]}"
    return None


def main(argv: list[str] | None = None) -> int:
    return nsview.main(argv, prog="eagle_console.sim.hidepid", doc=__doc__, flag="--uid",
                       flag_kw={"type": int, "default": 4242, "help": "the uid to run it as (default 4242)"},
                       usable=usable, run=run)


if __name__ == "__main__":
    sys.exit(main())
