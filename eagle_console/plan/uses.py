"""The built-ins a step may name in `uses`, and what of each shapes the step when the plan is read.

Their implementations are the engine's (engine/builtins/: one module per name, `REGISTRY` there, the same
names in the same order); the plan layer knows the names and the two traits the loader applies, declared
here once (the engine's classes take them from here): `service`, the step is always a service; `confirm`,
the step asks before it runs unless the plan says `confirm = false`. Whether a `with` table is right is the
built-in's own question: the `validate` command passes the engine's answer to the loader (`check_builtins`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple


class Uses(NamedTuple):
    service: bool = False  # its run is exec'd as the service and the step completes on `ready`
    confirm: bool = False  # a step using it asks before it runs (unless the plan says confirm = false)


# name -> its traits, in the order the plan format lists them
BUILTINS: dict[str, Uses] = {
    "gpu.kill": Uses(confirm=True),
    "gpu.wait_free": Uses(),
    "json.set": Uses(),
    "drafter.check": Uses(),
    "drafter.compare_vocab": Uses(),
    "sglang.server": Uses(service=True),
    "http.wait": Uses(),
    "sglang.bench": Uses(),
    "extraction.verify": Uses(),
}

# (built-in name, its `with` table) -> the problems found without running it
WithCheck = Callable[[str, dict[str, Any]], list[str]]


def uses_traits(uses: str | None) -> Uses | None:
    """The traits of built-in `uses`; None for no built-in or an unknown name."""
    return BUILTINS.get(uses) if uses is not None else None
