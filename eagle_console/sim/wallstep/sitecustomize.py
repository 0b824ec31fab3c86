"""Imported at start-up by every Python process `eagle_console.sim.clockstep` runs (and those it starts):
their wall clock (`time.time`, `time.time_ns`) reads EAGLE_SIM_WALL_STEP seconds later than this machine's,
as every process's does after a real step; the boot clock and the monotonic clock stay, as they do. No
other module of the process is touched. Unset or 0: nothing changes."""

import os
import time

_STEP_S = float(os.environ.get("EAGLE_SIM_WALL_STEP") or 0)
if _STEP_S:
    _time, _time_ns = time.time, time.time_ns
    time.time = lambda: _time() + _STEP_S
    time.time_ns = lambda: _time_ns() + int(_STEP_S * 1e9)
