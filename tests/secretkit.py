"""Looking for a secret the way another local user would: a real second user (`useradd`, deleted after)
reads every process's command line (`ps -eww -o args` and /proc/*/cmdline) and tries the files.

A secret counts as leaked when it shows in plain text or inside any base64 token of the text (the old Ray
entrypoint carried the run spec as urlsafe base64: one `base64 -d` away from the token).
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import os
import re
import secrets
import subprocess
from collections.abc import Iterator
from pathlib import Path

B64_TOKEN = re.compile(r"[A-Za-z0-9+/_-]{16,}={0,2}")


def leaks(text: str, secret: str) -> list[str]:
    """Where `secret` shows in `text`: in clear, or base64-decoded from a token (any of its 4 alignments)."""
    found = [f"in clear: …{text[max(0, i - 60):i + len(secret) + 20]}…"
             for i in [m.start() for m in re.finditer(re.escape(secret), text)]]
    for m in B64_TOKEN.finditer(text):
        token = m.group(0)
        for skip in range(4):
            part = token[skip:]
            part = part[: len(part) - len(part) % 4]
            for decode in (base64.urlsafe_b64decode, base64.b64decode):
                try:
                    if secret.encode() in decode(part):
                        found.append(f"base64 {token[:40]}… decodes to it")
                except (binascii.Error, ValueError):
                    pass
    return found


@contextlib.contextmanager
def other_user() -> Iterator[str]:
    """A throwaway local user (no home, no login shell); always deleted again."""
    name = f"ecpeek{secrets.token_hex(3)}"
    subprocess.run(["useradd", "--no-create-home", "--shell", "/usr/sbin/nologin", name], check=True)
    try:
        yield name
    finally:
        subprocess.run(["userdel", name], check=False)


def as_user(user: str, *argv: str) -> subprocess.CompletedProcess:
    return subprocess.run(["runuser", "-u", user, "--", *argv], capture_output=True, text=True, timeout=60)


def command_lines_seen_by(user: str) -> str:
    """Every process's command line as `user` reads them: `ps -eww -o args`, then each /proc/PID/cmdline."""
    ps = as_user(user, "ps", "-eww", "-o", "args")
    assert ps.returncode == 0, ps.stderr
    proc = as_user(user, "sh", "-c", 'for f in /proc/[0-9]*/cmdline; do tr "\\000" " " < "$f" 2>/dev/null; '
                   'echo; done')
    return ps.stdout + "\n" + proc.stdout


def readable_files_leaking(user: str, top: Path, secret: str) -> list[str]:
    """The files under `top` that `user` can read and that hold `secret` (clear or base64)."""
    out = []
    listing = as_user(user, "find", str(top), "-type", "f", "-readable")
    for line in listing.stdout.splitlines():
        got = as_user(user, "cat", line)
        if got.returncode == 0 and leaks(got.stdout, secret):
            out.append(line)
    return out


def files_leaking(top: Path, secret: str) -> list[str]:
    """Every file under `top` holding `secret` (clear or base64), whoever may read it (we are root)."""
    out = []
    for root, _dirs, files in os.walk(top):
        for name in files:
            path = Path(root, name)
            try:
                if path.is_symlink() or not path.is_file():
                    continue
                text = path.read_bytes()[: 8 << 20].decode("utf-8", "replace")
            except OSError:
                continue
            if leaks(text, secret):
                out.append(str(path))
    return out


def mode(path: Path) -> int:
    return os.stat(path).st_mode & 0o777
