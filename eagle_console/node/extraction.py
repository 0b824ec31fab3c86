"""ExtractionWatch: progress, output size and free space of a hidden-state extraction job, tick by tick.

Progress comes from the job's log (tqdm redraws or the final JSON summary), read from where the last
tick stopped. The output folder is scanned incrementally: a directory is listed again only when its
mtime changed (or changed too recently to trust), and only names not seen before are stat'ed, so a tick
with 20,000 finished files costs about one stat per directory. Files just written are re-stat'ed until
their size settles.
"""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from eagle_console.drafter.samples import is_sample
from eagle_console.parse.tqdm import Progress, last_progress, parse_summary

RACY_NS = 2_000_000_000  # an mtime this recent may hide a same-tick change: list the directory again
SHM = Path("/dev/shm")
FROM_ELAPSED_S = 10.0  # tqdm's elapsed (whole seconds) gives the run's mean rate from here on


@dataclass
class _Dir:
    mtime_ns: int = -1
    files: dict[str, int] = field(default_factory=dict)  # name -> size
    disk: dict[str, int] = field(default_factory=dict)  # name -> bytes its blocks take on disk
    subdirs: set[str] = field(default_factory=set)


def on_disk(st: os.stat_result) -> int:
    """The bytes a file's blocks take (st_blocks is in 512-byte units whatever the filesystem's block)."""
    return getattr(st, "st_blocks", st.st_size // 512) * 512


class OutputScanner:
    """Incremental count of sample files and bytes under `root`."""

    def __init__(self, root: Path, pattern: str | None = None) -> None:
        self.root = Path(root)
        self.pattern = pattern
        self.dirs: dict[str, _Dir] = {}
        self.unsettled: dict[str, tuple[int, int]] = {}  # path -> (size, mtime_ns) of files still being written
        self.files = 0
        self.bytes = 0
        self.disk_bytes = 0  # what the files take on disk (st_blocks): less than `bytes` for sparse files
        self.first_ns: int | None = None  # mtime of the oldest and newest sample seen: the run's pace
        self.last_ns: int | None = None
        self.listings = 0  # directories listed by the last tick (for benchmarks and tests)

    def tick(self) -> tuple[int, int]:
        now = time.time_ns()
        self.listings = 0
        stack = [str(self.root)]
        seen: set[str] = set()
        while stack:
            d = stack.pop()
            seen.add(d)
            try:
                st = os.stat(d)
            except OSError:
                continue
            state = self.dirs.setdefault(d, _Dir())
            if st.st_mtime_ns != state.mtime_ns or now - st.st_mtime_ns < RACY_NS:
                self._relist(d, state, now)
                state.mtime_ns = st.st_mtime_ns
            stack.extend(os.path.join(d, s) for s in state.subdirs)
        for gone in set(self.dirs) - seen:  # a removed directory takes its files with it
            self._forget(gone)
        self._settle(now)
        return self.files, self.bytes

    def _relist(self, d: str, state: _Dir, now: int) -> None:
        self.listings += 1
        names: set[str] = set()
        subdirs: set[str] = set()
        try:
            with os.scandir(d) as it:
                for entry in it:
                    if entry.is_dir(follow_symlinks=False):
                        subdirs.add(entry.name)
                    elif is_sample(entry.name, self.pattern):
                        names.add(entry.name)
                        if entry.name not in state.files:
                            try:
                                est = entry.stat()
                            except OSError:
                                continue
                            state.files[entry.name] = est.st_size
                            state.disk[entry.name] = on_disk(est)
                            self.files += 1
                            self.bytes += est.st_size
                            self.disk_bytes += state.disk[entry.name]
                            self._saw(est.st_mtime_ns)
                            if now - est.st_mtime_ns < RACY_NS:
                                self.unsettled[entry.path] = (est.st_size, est.st_mtime_ns)
        except OSError:
            return
        for name in set(state.files) - names:
            self.files -= 1
            self.bytes -= state.files.pop(name)
            self.disk_bytes -= state.disk.pop(name, 0)
            self.unsettled.pop(os.path.join(d, name), None)
        state.subdirs = subdirs

    def _saw(self, mtime_ns: int) -> None:
        self.first_ns = mtime_ns if self.first_ns is None else min(self.first_ns, mtime_ns)
        self.last_ns = mtime_ns if self.last_ns is None else max(self.last_ns, mtime_ns)

    def pace(self) -> float | None:
        """Samples per second between the first and the last sample written (None before two)."""
        if self.files < 2 or self.first_ns is None or self.last_ns is None or self.last_ns <= self.first_ns:
            return None
        return (self.files - 1) / ((self.last_ns - self.first_ns) / 1e9)

    def _forget(self, d: str) -> None:
        state = self.dirs.pop(d)
        self.files -= len(state.files)
        self.bytes -= sum(state.files.values())
        self.disk_bytes -= sum(state.disk.values())
        for name in state.files:
            self.unsettled.pop(os.path.join(d, name), None)

    def _settle(self, now: int) -> None:
        for path, (size, _mtime) in list(self.unsettled.items()):
            d, name = os.path.split(path)
            state = self.dirs.get(d)
            try:
                st = os.stat(path)
            except OSError:
                self.unsettled.pop(path)
                continue
            if state is not None and name in state.files and st.st_size != size:
                self.bytes += st.st_size - state.files[name]
                state.files[name] = st.st_size
            if state is not None and name in state.disk and on_disk(st) != state.disk[name]:
                self.disk_bytes += on_disk(st) - state.disk[name]
                state.disk[name] = on_disk(st)
            self._saw(st.st_mtime_ns)
            if now - st.st_mtime_ns >= RACY_NS:
                self.unsettled.pop(path)
            else:
                self.unsettled[path] = (st.st_size, st.st_mtime_ns)


def full_scan(root: Path, pattern: str | None = None) -> tuple[int, int]:
    """Files and bytes by walking and stat'ing everything: the reference the incremental scan is measured by."""
    files = size = 0
    for dirpath, _dirs, names in os.walk(root):
        for name in names:
            if is_sample(name, pattern):
                try:
                    size += os.stat(os.path.join(dirpath, name)).st_size
                except OSError:
                    continue
                files += 1
    return files, size


class LogReader:
    """New text of a log since the last read, surviving truncation and rotation (inode change)."""

    CARRY = 16384  # kept from the previous read so a summary split across reads still parses

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.offset = 0
        self.inode: int | None = None
        self.carry = ""
        self.progress: Progress | None = None
        self.summary: dict[str, Any] | None = None

    def poll(self) -> None:
        try:
            st = os.stat(self.path)
        except OSError:
            return
        if st.st_ino != self.inode or st.st_size < self.offset:
            self.inode, self.offset, self.carry = st.st_ino, 0, ""
        if st.st_size == self.offset:
            return
        with open(self.path, "rb") as f:
            f.seek(self.offset)
            data = f.read(st.st_size - self.offset)
        self.offset += len(data)
        text = self.carry + data.decode("utf-8", "replace")
        progress = last_progress(text)
        if progress is not None:
            self.progress = progress
        summary = parse_summary(text)
        if summary is not None:
            self.summary = summary
        self.carry = text[-self.CARRY:]


def _free(path: Path) -> int | None:
    for p in (path, *path.parents):
        try:
            return shutil.disk_usage(p).free
        except OSError:
            continue
    return None


def _tokens_from_postfix(postfix: str | None) -> int | None:
    if not postfix:
        return None
    for part in postfix.split(","):
        key, _, value = part.strip().partition("=")
        if key.strip() in ("tokens", "total_tokens") and value:
            value = value.strip()
            scale = {"k": 1e3, "M": 1e6, "G": 1e9}.get(value[-1], 1)
            try:
                return int(float(value.rstrip("kMG")) * scale)
            except ValueError:
                return None
    return None


def run_rate(progress: Progress | None, summary: dict[str, Any] | None, pace: float | None) -> float | None:
    """Samples per second since the run started, frozen once it ended: from the job's own clock (the final
    summary's `elapsed_s`, else tqdm's elapsed), so it never counts time before the run and every reader
    (the CLI, the console) gets the same figure from the same log. Without a log: the output files' pace."""
    if summary is not None:
        elapsed, done = summary.get("elapsed_s"), summary.get("total_samples")
        if isinstance(elapsed, (int, float)) and elapsed > 0 and isinstance(done, int) and done > 0:
            return done / elapsed
    if progress is not None:
        # tqdm prints elapsed in whole seconds: n/elapsed is within 10 % from 10 s on; before, its own rate
        if progress.elapsed_s >= FROM_ELAPSED_S and progress.n > 0:
            return progress.n / progress.elapsed_s
        if progress.rate_per_s is not None:
            return progress.rate_per_s
    return pace


class ExtractionWatch:
    """`tick()` gives the `extraction --json` document of cli.md, plus `tokens`, `shm_free_bytes`, `warnings` and
    `output_disk_bytes` (what the output's files take on disk, which the fit counts as written)."""

    def __init__(self, logs: Iterable[Path] = (), outputs: Iterable[Path] = (), pattern: str | None = None,
                 total: int | None = None) -> None:
        self.logs = [LogReader(Path(p)) for p in logs]
        self.outputs = [OutputScanner(Path(p), pattern) for p in outputs]
        self.total = total

    @classmethod
    def from_paths(cls, paths: Iterable[str | Path], pattern: str | None = None,
                   total: int | None = None) -> ExtractionWatch:
        """Folders are outputs, files are logs (the CLI's LOG_OR_DIR...)."""
        logs, outputs = [], []
        for p in map(Path, paths):
            (outputs if p.is_dir() else logs).append(p)
        return cls(logs=logs, outputs=outputs, pattern=pattern, total=total)

    def tick(self) -> dict[str, Any]:
        for log in self.logs:
            log.poll()
        files = size = disk = 0
        for scanner in self.outputs:
            f, b = scanner.tick()
            files, size, disk = files + f, size + b, disk + scanner.disk_bytes
        progress = next((lg.progress for lg in self.logs if lg.progress is not None), None)
        summary = next((lg.summary for lg in self.logs if lg.summary is not None), None)

        total = self.total or (progress.total if progress else None)
        if summary is not None:
            done = int(summary.get("total_samples", 0))
            total = total or done
        elif progress is not None:
            done = progress.n
        else:
            done = files
        pace = next((p for p in (sc.pace() for sc in self.outputs) if p is not None), None)
        rate = run_rate(progress, summary, pace)
        if summary is not None:
            eta = 0.0
        elif rate and total is not None:
            eta = max(total - done, 0) / rate
        else:
            eta = None
        if summary is not None and self.outputs:
            projected = size
        elif files and total:
            projected = int(size / files * max(total, files))  # mean file size x samples
        else:
            projected = None
        where = self.outputs[0].root if self.outputs else (self.logs[0].path.parent if self.logs else Path("."))
        free = _free(where) or 0
        # What is still to be written against the free space, counting as written what the files take on
        # disk: sparse or compressed files (the demo's) take less than their size, and with `size` the
        # verdict flipped from NO to yes at the last sample on the same 924 GB and 80 GB free (issue 32).
        written = min(size, disk) if self.outputs else size
        fits = None if projected is None else projected - written <= free
        warnings = []
        finished = summary is not None or (total is not None and done >= total)
        if fits is False and not finished:
            warnings.append(f"projected output {projected / 1e9:.1f} GB needs {(projected - written) / 1e9:.1f} GB "
                            f"more, only {free / 1e9:.1f} GB free on {where}'s filesystem: free space or stop early")
        elif fits is False:
            warnings.append(f"finished, but its files' {size / 1e9:.1f} GB take {written / 1e9:.1f} GB on disk "
                            f"(sparse or compressed) and {free / 1e9:.1f} GB is free on {where}'s filesystem: a "
                            "copy of them, or a run that writes them whole, does not fit")
        tokens = summary.get("total_tokens") if summary else _tokens_from_postfix(progress.postfix if progress else None)
        return {
            "done": done,
            "total": total,
            "rate_per_s": rate,
            "eta_s": eta,
            "files": files,
            "output_bytes": size,
            "output_disk_bytes": disk if self.outputs else None,
            "projected_bytes": projected,
            "free_bytes": free,
            "fits": fits,
            "summary": summary,
            "tokens": tokens,
            "shm_free_bytes": _free(SHM) if SHM.exists() else None,
            "warnings": warnings,
        }
