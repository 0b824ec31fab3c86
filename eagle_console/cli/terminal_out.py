"""The console's terminal output, kept alive when the terminal goes away.

Textual (6.0.0 to 8.2.8, `drivers/linux_driver.py` and `drivers/_writer_thread.py`) writes every frame from
one output thread to `sys.__stderr__`, through a queue of at most 30 writes. A terminal that hung up (the
ssh window closed, the tmux session killed) fails each write with EIO: the thread died at its first one,
and once 30 writes waited for it, the next write — or `LinuxDriver.close` putting its stop mark as the
console quit — waited for ever. The kernel's SIGCONT after a hang-up made Textual start a fresh output
thread, which died the same way. A demo whose tmux session was killed stayed, ignoring SIGTERM, with its
simulated processes running (three after three suite runs; tests/test_demo_hangup.py).

`TerminalOut` stands in for `sys.__stderr__` while the console runs: a write the terminal refuses with EIO
is dropped, so the output thread lives and the console can quit, and the first one is said to this
process as the hang-up it is (SIGHUP: the console's default ends it, the demo quits and stops its
processes). A SIGHUP that was already sent is then sent twice; both mean the same.
"""

from __future__ import annotations

import errno
import os
import signal
from typing import TextIO


class TerminalOut:
    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.gone = False

    def write(self, text: str) -> int:
        if not self.gone:
            try:
                return self.stream.write(text)
            except OSError as exc:
                self._refused(exc)
        return len(text)

    def flush(self) -> None:
        if not self.gone:
            try:
                self.stream.flush()
            except OSError as exc:
                self._refused(exc)

    def _refused(self, exc: OSError) -> None:
        if exc.errno != errno.EIO:  # not a hang-up: as before
            raise exc
        self.gone = True
        os.kill(os.getpid(), signal.SIGHUP)

    def fileno(self) -> int:
        return self.stream.fileno()

    def isatty(self) -> bool:
        return self.stream.isatty()

    def __getattr__(self, name: str) -> object:  # encoding, errors, … as the stream has them
        return getattr(self.stream, name)
