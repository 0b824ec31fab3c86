"""Follow a growing log file the way `tail -F` does, in poll style with bounded memory.

`LogFollower.read_new()` returns the complete lines written since the last call (at most `max_bytes`
of input per call, so a console worker polling every 100-250 ms never stalls on a huge backlog). It
keeps following across rotation (rename + new file: the old file is drained first, so no line is lost),
truncation (copytruncate) and deletion/recreation. Bytes are decoded as UTF-8 with replacement, control
characters are neutralised, a `\\r`-rewritten progress bar keeps only its last state, and a line longer
than `max_line` bytes is cut there and marked. No threads: the caller decides where it runs.

Only regular files are read (`open_regular`): a FIFO would block `open()` until a writer came, and a
device (/dev/zero, /dev/urandom) never ends. Such a path is refused with a message naming it.
"""

from __future__ import annotations

import errno
import os
import re
import stat
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from eagle_console.statedir import open_created

MAX_LINE = 64 * 1024
MAX_BYTES_PER_READ = 1024 * 1024  # per read_new() call: a poll never reads more than this
CUT_MARK = " …[line cut at {limit} bytes]"
_FINGERPRINT = 64  # bytes at the head of the file that tell a rewritten file from the one we read
# C0 controls (but tab), DEL and C1 controls (U+0080-U+009F: some terminals take U+009B as CSI) would
# move the cursor, recolour or retitle the terminal: shown escaped (`\x1b`) instead.
_CONTROL = {c: f"\\x{c:02x}" for c in (*range(0, 9), *range(11, 32), *range(127, 160))}
_HAS_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")
# _HAS_CONTROL's characters in ASCII (`\r` is one): deleted by bytes.translate, 10x faster than a regex search;
# _UNPLAIN also finds bytes of UTF-8 (and of anything else) that clean_line must decode
_CONTROL_BYTES = bytes((*range(0, 9), *range(11, 32), 127))
_UNPLAIN = re.compile(b"[\x00-\x08\x0b-\x1f\x7f-\xff]")
_KINDS = ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
          (stat.S_ISSOCK, "a socket"), (stat.S_ISDIR, "a directory"))


class NotRegularFile(OSError):
    """The path names a FIFO, device, socket or directory: refused, never read."""

    def __init__(self, path: str | os.PathLike[str], mode: int | None) -> None:
        kind = next((name for test, name in _KINDS if mode is not None and test(mode)), "not a regular file")
        super().__init__(f"{os.fspath(path)} is {kind}, not a regular file: refused (only regular files are read)")
        self.path = os.fspath(path)


class Unreadable(OSError):
    """The path is there but closed to this user (another user's log, or one inside their state dir):
    said with whose it is, never taken for a file not written yet."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        from eagle_console.statedir import closed_note

        whose = closed_note(Path(path))
        said = f" ({whose})" if whose else ""
        super().__init__(f"{os.fspath(path)} cannot be read: permission denied{said}")
        self.path = os.fspath(path)


def open_regular(path: str | os.PathLike[str], *, append: bool = False) -> int:
    """A file descriptor on `path` only if it is a regular file, else NotRegularFile.

    stat() first, so a device is never opened; then open with O_NONBLOCK, so a FIFO swapped in meanwhile
    cannot block (and one opened for writing without a reader fails with ENXIO), and fstat() what was
    opened. `append` opens for appending, creating the file."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        if not append:
            raise
    else:
        if not stat.S_ISREG(st.st_mode):
            raise NotRegularFile(path, st.st_mode)
    flags = os.O_NONBLOCK | os.O_NOCTTY | getattr(os, "O_CLOEXEC", 0)
    flags |= (os.O_WRONLY | os.O_APPEND | os.O_CREAT) if append else os.O_RDONLY
    try:
        fd = open_created(path, flags, 0o600)  # logs live in the private state dir (0600 files)
    except OSError as exc:
        if exc.errno in (errno.ENXIO, errno.EISDIR, errno.EOPNOTSUPP):
            raise NotRegularFile(path, _mode_or_none(path)) from None
        raise
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        raise NotRegularFile(path, mode)
    os.set_blocking(fd, True)  # a regular file: no effect on reads, but children inherit the flag
    return fd


def _mode_or_none(path: str | os.PathLike[str]) -> int | None:
    try:
        return os.stat(path).st_mode
    except OSError:
        return None


def clean_line(raw: bytes) -> str:
    """Bytes of one line (no newline) → display text: invalid UTF-8 and control characters escaped."""
    if b"\r" in raw:  # a progress bar redrawn with CR: keep what a terminal would show last
        parts = [p for p in raw.split(b"\r") if p]
        raw = parts[-1] if parts else b""
    text = raw.decode("utf-8", errors="backslashreplace")
    return text.translate(_CONTROL) if _HAS_CONTROL.search(text) else text


def last_lines_offset(fd: int, size: int, n: int, block: int = 64 * 1024) -> int:
    """Offset where the last `n` lines of the file start (a final line without newline counts)."""
    if n <= 0:
        return size
    pos, newlines = size, 0
    if size > 0 and os.pread(fd, 1, size - 1) == b"\n":
        pos -= 1  # the trailing newline ends the last line, it does not start one
    while pos > 0:
        start = max(0, pos - block)
        chunk = os.pread(fd, pos - start, start)
        idx = len(chunk)
        while True:
            idx = chunk.rfind(b"\n", 0, idx)
            if idx < 0:
                break
            newlines += 1
            if newlines == n:
                return start + idx + 1
        pos = start
    return 0


class LogFollower:
    """Poll-style follower of one path. `start`: "begin" (whole file) or "end" (only new lines, after the
    last `last_lines` existing ones). A file that appears later, or after rotation, is read from byte 0."""

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        start: str = "begin",
        last_lines: int = 0,
        max_line: int = MAX_LINE,
        max_bytes: int = MAX_BYTES_PER_READ,
    ) -> None:
        if start not in ("begin", "end"):
            raise ValueError(f"start must be 'begin' or 'end', not {start!r}")
        self.path = Path(path)
        self.max_line = max_line
        self.max_bytes = max_bytes
        self.rotations = 0  # times the path came to name another file
        self.truncations = 0
        self.cut_lines = 0
        self._start, self._last_lines = start, last_lines
        self._fd: int | None = None
        self._ident: tuple[int, int] | None = None
        self._pos = 0
        self._partial = bytearray()
        self._skipping = False  # inside an over-long line already delivered cut
        self._head = b""
        self._first_open = True
        self._end: int | None = None  # one-shot reads stop here (the size when they began)
        self.more = False  # True when the last call stopped at max_bytes with data left
        self.refused: str | None = None  # why the path is not read (a FIFO, a device…), while it is so
        self.refusal: OSError | None = None  # that reason as the error a one-shot read raises

    # ---- public ----------------------------------------------------------------------------------

    def read_new(self) -> list[str]:
        """Complete new lines since the last call (possibly none); never blocks on a writer.

        A path that is not a regular file gives one line saying so (when it becomes so), then nothing
        until a regular file takes its place; `refused` holds the reason meanwhile."""
        out: list[str] = []
        budget = self.max_bytes
        if self._fd is None and not self._open(out):
            return out
        if self._end is None:
            self._check_rewritten(out)
        budget -= self._drain(out, budget)
        if budget > 0 and not self.more and self._end is None:
            self._check_rotation(out, budget)
        return out

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def __enter__(self) -> LogFollower:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def position(self) -> int:
        return self._pos

    # ---- internals --------------------------------------------------------------------------------

    def _open(self, out: list[str] | None = None) -> bool:
        try:
            fd = open_regular(self.path)
        except PermissionError:  # there, but not ours to read: said, never a blank pane or "no such file"
            return self._refuse(Unreadable(self.path), out)
        except NotRegularFile as exc:
            return self._refuse(exc, out)
        except (FileNotFoundError, NotADirectoryError):
            return False
        self.refused, self.refusal = None, None
        st = os.fstat(fd)
        self._fd, self._ident = fd, (st.st_dev, st.st_ino)
        self._partial.clear()
        self._skipping = False
        self._pos = 0
        if self._first_open and self._start == "end":
            self._pos = last_lines_offset(fd, st.st_size, self._last_lines)
        self._first_open = False
        self._head = os.pread(fd, _FINGERPRINT, 0) if st.st_size else b""
        return True

    def _refuse(self, exc: OSError, out: list[str] | None) -> bool:
        if self.refused != str(exc) and out is not None:
            out.append(f"[eagle-console] {exc}")
        self.refused, self.refusal = str(exc), exc
        return False

    def _drain(self, out: list[str], budget: int) -> int:
        """Read from the open file up to `budget` bytes; returns the bytes consumed."""
        assert self._fd is not None
        used = 0
        self.more = False
        while used < budget:
            want = min(256 * 1024, budget - used)
            if self._end is not None:
                want = min(want, self._end - self._pos)
            chunk = os.pread(self._fd, want, self._pos) if want > 0 else b""
            if not chunk:
                break
            self._pos += len(chunk)
            used += len(chunk)
            if len(self._head) < _FINGERPRINT and self._pos <= _FINGERPRINT * 4:
                self._head = os.pread(self._fd, _FINGERPRINT, 0)
            self._split(chunk, out)
        else:
            self.more = True
        return used

    def _split(self, chunk: bytes, out: list[str]) -> None:
        start = 0
        unplain: int | None = -1  # the next byte in `chunk` that needs cleaning (-1: not looked for yet)
        while True:
            if unplain is not None and not self._partial and not self._skipping:  # at a line start
                start, unplain = self._split_plain(chunk, start, unplain, out)
            nl = chunk.find(b"\n", start)
            if nl < 0:
                break
            piece = chunk[start:nl]
            if self._skipping:
                self._skipping = False
            else:
                self._emit(self._partial + piece if self._partial else piece, out)
            self._partial.clear()
            start = nl + 1
        rest = chunk[start:]
        if self._skipping or not rest:
            return
        self._partial += rest
        if len(self._partial) > self.max_line:  # deliver the head now, drop the rest of this line
            self._emit(bytes(self._partial), out)
            self._partial.clear()
            self._skipping = True

    def _split_plain(self, chunk: bytes, start: int, unplain: int, out: list[str]) -> tuple[int, int | None]:
        """The complete lines of `chunk` from `start` up to the next one that needs cleaning, at once: plain
        ASCII text (no control byte, so no `\r`) as a server's own log lines are. Returns where the rest
        starts and where that next byte is (None: a line to cut, the rest of the chunk goes line by line).
        Line by line, `_emit` and `clean_line` were a third of the Server pane's follow thread at 100k
        lines/s (benchmarks/log_ingest.py)."""
        end = chunk.rfind(b"\n", start)
        if end < 0:
            return start, unplain
        if unplain < start:
            body = chunk[start:end]  # first the common case, every line plain, in two C passes
            if unplain == -1 and body.isascii() and len(body.translate(None, _CONTROL_BYTES)) == len(body):
                unplain = len(chunk)
            else:  # the next one, searched for only as far as it is
                found = _UNPLAIN.search(chunk, start, end)
                unplain = found.start() if found else len(chunk)
        stop = end if unplain > end else chunk.rfind(b"\n", start, unplain)
        if stop < start:  # the line at `start` itself needs cleaning
            return start, unplain
        body = chunk[start:stop]
        lines = body.decode("ascii").split("\n")
        if len(body) > self.max_line and max(map(len, lines)) > self.max_line:
            return start, None
        out.extend(lines)
        return stop + 1, unplain

    def _emit(self, raw: bytes | bytearray, out: list[str]) -> None:
        if raw.endswith(b"\r"):
            raw = raw[:-1]
        if len(raw) > self.max_line:
            self.cut_lines += 1
            out.append(clean_line(bytes(raw[: self.max_line])) + CUT_MARK.format(limit=self.max_line))
        else:
            out.append(clean_line(bytes(raw)))

    def _flush_partial(self, out: list[str]) -> None:
        if self._partial and not self._skipping:
            self._emit(bytes(self._partial), out)
        self._partial.clear()
        self._skipping = False

    def _check_rewritten(self, out: list[str]) -> None:
        """Truncated (size below our offset) or rewritten in place (head bytes changed) → restart at 0."""
        assert self._fd is not None
        size = os.fstat(self._fd).st_size
        rewritten = size < self._pos
        if not rewritten and self._head:
            rewritten = os.pread(self._fd, len(self._head), 0) != self._head
        if rewritten:
            self.truncations += 1
            self._partial.clear()
            self._skipping = False
            self._pos = 0
            self._head = os.pread(self._fd, _FINGERPRINT, 0) if size else b""

    def _check_rotation(self, out: list[str], budget: int) -> None:
        """After draining the open file: has the path moved on to another file?"""
        try:
            st = os.stat(self.path)
        except (FileNotFoundError, NotADirectoryError):
            return  # deleted or renamed away, nothing new yet: keep the old file until one appears
        if (st.st_dev, st.st_ino) == self._ident:
            return
        # The writer may have appended to the old file between our drain and its rename: drain again,
        # and stay on the old file while it still has more than this call may read.
        budget -= self._drain(out, budget)
        if self.more or budget <= 0:
            self.more = True
            return
        self._flush_partial(out)  # the old file's last line had no newline; it will get none now
        self.close()
        self.rotations += 1
        if self._open(out):
            self._drain(out, budget)


def follow(
    path: str | os.PathLike[str],
    *,
    start: str = "begin",
    last_lines: int = 0,
    interval: float = 0.25,
    stop: Callable[[], bool] | None = None,
    sleep: Callable[[float], None] = time.sleep,
) -> Iterator[str]:
    """Yield lines of `path` as they are written, forever or until `stop()` returns True (for
    `--follow` commands). Polls every `interval` seconds when there is nothing new. A path that is not
    a regular file raises NotRegularFile, one closed to this user Unreadable."""
    with LogFollower(path, start=start, last_lines=last_lines) as follower:
        while stop is None or not stop():
            lines = follower.read_new()
            if follower.refusal is not None:
                raise follower.refusal
            yield from lines
            if not lines and not follower.more:
                sleep(interval)


def read_lines(
    path: str | os.PathLike[str],
    max_line: int = MAX_LINE,
    *,
    until: Callable[[], bool] | None = None,
    interval: float = 0.2,
    sleep: Callable[[float], None] = time.sleep,
) -> Iterator[str]:
    """Every line of a file, cleaned and capped like the follower does (for one-shot CLIs); a final line
    without newline is included. Reads up to the size the file had when opened, so a file that keeps
    growing cannot keep a one-shot command going. With `until`, keeps reading what is appended until
    `until()` is true (asked when nothing new came), then reads to the size at that moment and stops.
    Raises FileNotFoundError, NotRegularFile for a FIFO, device, socket or directory, or Unreadable."""
    follower = LogFollower(path, max_line=max_line)
    try:
        if not follower._open():
            if follower.refusal is not None:
                raise follower.refusal
            raise FileNotFoundError(errno.ENOENT, "no such file", os.fspath(path))
        assert follower._fd is not None
        if until is None:
            follower._end = os.fstat(follower._fd).st_size
        while True:
            lines = follower.read_new()
            yield from lines
            if lines or follower.more:
                continue
            if follower._end is not None:
                break
            if until is not None and until():
                follower._end = os.fstat(follower._fd).st_size
                continue
            sleep(interval)
        tail: list[str] = []
        follower._flush_partial(tail)
        yield from tail
    finally:
        follower.close()
