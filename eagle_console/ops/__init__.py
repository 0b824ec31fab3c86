"""Operator actions, once: the CLI and the console are two faces that parse input, call these and show
the result. Textual-free (the `layers` and `core-no-textual` contracts of pyproject.toml prove it); each
module holds one operation family.

This is the faces' front door: they import what they need from `eagle_console.ops` (the names in `__all__`)
and the records they render, nothing deeper. A name is imported on first use, so a face pays for the
operations it calls only (the CLI's start-up imports no engine).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

# name -> the module of ops that holds it
_HOME = {
    # the GPU reading (ops/gpus.py)
    "GpuReader": "gpus", "GpuReading": "gpus", "read_gpus": "gpus", "read_gpus_once": "gpus",
    "sample_once": "gpus",
    # killing GPU holders: the kill plan and the kill (ops/orphans.py)
    "HolderScan": "orphans", "KillPlan": "orphans", "KillRecord": "orphans", "SELECTED": "orphans",
    "scan": "orphans", "plan_kill": "orphans", "kill": "orphans", "kill_preview": "orphans",
    "preselect": "orphans", "preselected": "orphans", "selection_scope": "orphans", "memory_by_gpu": "orphans",
    "tracked_note": "orphans", "orphans_left": "orphans", "freed_text": "orphans", "kill_summary": "orphans",
    # every cluster node's reading and kill (ops/nodes.py)
    "read_nodes": "nodes", "kill_on_nodes": "nodes", "this_machine": "nodes", "holders_of": "nodes",
    "gpus_of": "nodes", "orphans_left_on": "nodes",
    "GraceError": "orphans", "resolve_grace": "orphans",
    # what only the console asks (ops/console.py): the engine handle, a built-in's traits
    "engine_for": "console", "builtin_class_or_none": "console",
    # how a face names its controls (ops/hints.py)
    "Hints": "hints", "NEUTRAL": "hints", "refusal_text": "hints",
}

__all__ = [  # every name the faces take from here (_HOME says where each lives)
    "GpuReader", "GpuReading", "GraceError", "Hints", "HolderScan", "KillPlan", "KillRecord",
    "NEUTRAL", "SELECTED", "builtin_class_or_none", "engine_for", "gpus_of", "holders_of", "kill",
    "freed_text", "kill_on_nodes", "kill_preview", "kill_summary", "memory_by_gpu", "orphans_left",
    "orphans_left_on", "plan_kill", "preselect", "preselected", "read_gpus",
    "read_gpus_once", "read_nodes", "refusal_text", "resolve_grace", "sample_once", "scan",
    "selection_scope", "this_machine", "tracked_note",
]


def __getattr__(name: str) -> Any:
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{home}"), name)
    globals()[name] = value  # once
    return value


if TYPE_CHECKING:
    from eagle_console.ops.console import builtin_class_or_none, engine_for
    from eagle_console.ops.gpus import GpuReader, GpuReading, read_gpus, read_gpus_once, sample_once
    from eagle_console.ops.hints import NEUTRAL, Hints, refusal_text
    from eagle_console.ops.nodes import (
        gpus_of,
        holders_of,
        kill_on_nodes,
        orphans_left_on,
        read_nodes,
        this_machine,
    )
    from eagle_console.ops.orphans import (
        SELECTED,
        GraceError,
        HolderScan,
        KillPlan,
        KillRecord,
        freed_text,
        kill,
        kill_preview,
        kill_summary,
        memory_by_gpu,
        orphans_left,
        plan_kill,
        preselect,
        preselected,
        resolve_grace,
        scan,
        selection_scope,
        tracked_note,
    )
