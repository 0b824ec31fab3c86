"""Files read from disk that an operator, a colleague or another user may have put there: bounded.

What can be planted where a file is expected, and what it did before: a FIFO (the read blocked forever:
the console never opened), a symlink to /dev/zero (read until MemoryError), a 10 MB plan (28.9 s and 2 GB),
JSON nested 100,000 deep (RecursionError, an "internal error"). So: only a regular file is read (anything
else is refused by its kind), it is opened O_NONBLOCK (opening a FIFO does not wait for a writer; the
file's kind is then read from the open descriptor, so a swap in between changes nothing), at most `cap`
bytes are read (a file still growing is caught by reading one byte more), and a parse that recurses too
deep is a refusal. Every refusal is an InputFileError whose message names the file and why, for the caller
to say as it says other bad input (a PlanIssue, a toast, a step's failure line).
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

KIB = 1024
MIB = 1024 * KIB
# Caps by what the file is: a hand-written plan or setting is a few KB; a JSON file json.set edits may be a
# model's config (KB) or a tokenizer's (tens of MB); our own state files are small.
PLAN_CAP = 1 * MIB
SETTINGS_CAP = 1 * MIB
STATE_CAP = 16 * MIB
CONFIG_CAP = 16 * MIB
EDIT_CAP = 64 * MIB

NOT_FOUND = "not found"
_KINDS = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO (named pipe)"),
          (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))


class InputFileError(ValueError):
    """A file that cannot be read as what it should be; `str()` names the file and why."""

    def __init__(self, path: Path | str, why: str, where: str | None = None) -> None:
        super().__init__(f"{where or path}: {why}")  # where: `path:line:column` when known
        self.path = Path(path)
        self.why = why


def size_text(n: int) -> str:
    """`1.0 MiB`, `512 KiB`, `80 bytes`: a size people read."""
    if n >= MIB:
        return f"{n / MIB:.1f} MiB"
    if n >= KIB:
        return f"{n / KIB:.0f} KiB"
    return f"{n} bytes"


def read_bytes(path: Path | str, cap: int, what: str = "this file") -> bytes:
    """The bytes of the regular file at `path` (symlinks followed), at most `cap` of them, or
    InputFileError (not found, not readable, not a regular file, larger than `cap`); `what` names the
    file's kind in the size refusal ("over the 1.0 MiB a plan may be")."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        raise InputFileError(path, NOT_FOUND) from None
    except OSError as exc:
        raise InputFileError(path, f"cannot be read: {exc.strerror or exc}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            kind = next((name for test, name in _KINDS if test(st.st_mode)), "not a regular file")
            raise InputFileError(path, f"is {kind}, not a regular file: refused")
        if st.st_size > cap:
            raise InputFileError(path, _too_big(st.st_size, cap, what))
        chunks, left = [], cap + 1  # one byte past the cap: a file that grew since fstat
        while left > 0:
            chunk = os.read(fd, min(left, MIB))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
    except OSError as exc:
        raise InputFileError(path, f"cannot be read: {exc.strerror or exc}") from None
    finally:
        os.close(fd)
    data = b"".join(chunks)
    if len(data) > cap:
        raise InputFileError(path, _too_big(len(data), cap, what, growing=True))
    return data


def _too_big(size: int, cap: int, what: str, growing: bool = False) -> str:
    found = "more than " + size_text(cap) if growing else f"{size_text(size)} ({size} bytes)"
    return f"is {found}, over the {size_text(cap)} {what} may be: refused"


def read_text(path: Path | str, cap: int) -> str:
    """`read_bytes` decoded as UTF-8 (InputFileError naming the byte's line if it is not)."""
    data = read_bytes(path, cap)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise InputFileError(path, f"line {line}: not UTF-8 text (byte 0x{data[exc.start]:02x})") from None


def load_json(path: Path | str, cap: int) -> Any:
    """The JSON document at `path`: `read_text` then a parse whose errors name file:line:column;
    nesting too deep for the parser (RecursionError) is refused the same way."""
    text = read_text(path, cap)
    return parse_json(text, path)


def parse_json(text: str, path: Path | str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputFileError(path, f"invalid JSON: {exc.msg}", f"{path}:{exc.lineno}:{exc.colno}") from None
    except RecursionError:
        raise InputFileError(path, "JSON nested too deeply to read: refused") from None
    except ValueError as exc:  # an integer past sys.get_int_max_str_digits()
        raise InputFileError(path, f"invalid JSON: {exc}") from None
