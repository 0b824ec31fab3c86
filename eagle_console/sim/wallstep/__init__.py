"""The wall clock a Python command of `eagle_console.sim.clockstep` reads: this folder goes first on its
PYTHONPATH, and its `sitecustomize` moves `time.time` by EAGLE_SIM_WALL_STEP seconds (see there)."""
