"""Bytecode for the xdist workers, made once by the controller in a fresh checkout.

Every xdist worker collects the whole suite: it imports every test module, which pytest rewrites (asserts)
and compiles, and this checkout's package, which Python compiles. Both are cached in `__pycache__`, but in a
fresh clone (CI, a contributor's first run) all the workers start at once, none finds a cache and each does
the whole work: `pytest -n auto` of one test over the whole suite, six workers on the 2-core VM, took 25.4 s
and 43 CPU-s from a fresh clone against 9.9 s and 18 CPU-s with the caches filled (docs/performance.md).
So before the workers start, the controller has the test files collected once, split over one process a
core (`--collect-only`, which writes the same cache files the workers then read), and the workers start warm.
Nothing is warmed where the caches are mostly filled (a contributor's next run) or where bytecode goes
elsewhere; a failure here is left to the workers' own collection to report.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

WARM_WHEN_MISSING = 0.25  # share of test modules without their rewritten bytecode that is worth a warm-up
MIN_COLD = 8  # fewer: a warm-up's own start (~2.5 s of imports) costs more than the rewrites it saves
TIMEOUT_S = 120


def pytest_configure(config: pytest.Config) -> None:
    if os.environ.get("PYTEST_XDIST_WORKER") or not getattr(config.option, "numprocesses", None):
        return  # a worker, or no workers: the one process collects once anyway
    if sys.dont_write_bytecode or sys.pycache_prefix:
        return  # nothing would be cached where the workers look for it
    files = _test_files(config)
    cold = [f for f in files if not _rewritten(f)]
    if len(cold) < MIN_COLD or len(cold) <= WARM_WHEN_MISSING * len(files):
        return
    _collect_in_parallel(config.rootpath, files, os.cpu_count() or 1)


def _test_files(config: pytest.Config) -> list[Path]:
    """The test modules the run will collect: its arguments' files, and those under its folders."""
    files: list[Path] = []
    for arg in config.args:
        path = Path(arg.split("::")[0])
        if not path.is_absolute():  # given on the command line, or from `testpaths` (the rootdir's)
            here = config.invocation_params.dir / path
            path = here if here.exists() else config.rootpath / path
        if path.is_dir():
            files += sorted(p for p in path.rglob("test_*.py") if "__pycache__" not in p.parts)
        elif path.suffix == ".py":
            files.append(path)
    return files


def _rewritten(source: Path) -> bool:
    """pytest's own cache name for a rewritten module (`_pytest/assertion/rewrite.py`, PYC_TAIL)."""
    tag = f"{sys.implementation.cache_tag}-pytest-{pytest.__version__}"
    pyc = source.parent / "__pycache__" / f"{source.stem}.{tag}.pyc"
    try:
        return pyc.stat().st_mtime >= source.stat().st_mtime
    except OSError:
        return False


def _collect_in_parallel(root: Path, files: list[Path], processes: int) -> None:
    shares: list[list[Path]] = [[] for _ in range(max(1, min(processes, len(files))))]
    sizes = [0] * len(shares)
    for size, f in sorted(((f.stat().st_size, f) for f in files), reverse=True):  # each share about as big
        i = sizes.index(min(sizes))
        shares[i].append(f)
        sizes[i] += size
    procs = [subprocess.Popen(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-n", "0", "-p", "no:cacheprovider",
         "-o", "addopts=", *map(str, share)],
        cwd=root, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for share in shares]
    for proc in procs:
        try:
            proc.wait(timeout=TIMEOUT_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
