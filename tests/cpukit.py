"""Where the suite's CPU goes: with EAGLE_TEST_CPU=FILE each test process appends, per test, the CPU seconds
it and its reaped children used (setup + call + teardown) and its wall time. The test processes are
subreapers (reaperkit), so a test's detached supervisors and killed servers are reaped, and counted, by the
process that ran it; a Ray cluster's daemons are counted when the test that stops them ends.
benchmarks/suite_time.py reads the file (docs/packaging.md)."""

from __future__ import annotations

import os
import resource
import time

import pytest

_OUT = os.environ.get("EAGLE_TEST_CPU", "")


def _cpu() -> float:
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem):
    if not _OUT:
        yield
        return
    cpu, wall = _cpu(), time.monotonic()
    yield
    with open(_OUT, "a") as out:
        out.write(f"{_cpu() - cpu:.3f}\t{time.monotonic() - wall:.3f}\t{item.nodeid}\n")
