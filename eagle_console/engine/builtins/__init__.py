"""Registry of built-in actions, imported lazily so a heavy one costs nothing until used.

The names are the plan format's (plan/uses.py: the loader accepts exactly those for `uses`, and applies
their `service` and `confirm` traits, which the classes here take from there); this maps each to its
implementation. The other traits (`undo_marks`, `drafter_findings`, `kill_preview`) are the classes' own,
read through `builtin_class`.
"""

from __future__ import annotations

import importlib
from typing import Any

from eagle_console.engine.builtins.base import Builtin, BuiltinError

# name -> "module:Class", in the order the plan format lists them. Each module holds one built-in.
REGISTRY: dict[str, str] = {
    "gpu.kill": "eagle_console.engine.builtins.gpu_kill:GpuKill",
    "gpu.wait_free": "eagle_console.engine.builtins.gpu_wait_free:GpuWaitFree",
    "json.set": "eagle_console.engine.builtins.json_set:JsonSet",
    "drafter.check": "eagle_console.engine.builtins.drafter_check:DrafterCheck",
    "drafter.compare_vocab": "eagle_console.engine.builtins.compare_vocab:CompareVocab",
    "sglang.server": "eagle_console.engine.builtins.sglang_server:SglangServer",
    "http.wait": "eagle_console.engine.builtins.http_wait:HttpWait",
    "sglang.bench": "eagle_console.engine.builtins.sglang_bench:SglangBench",
    "extraction.verify": "eagle_console.engine.builtins.extraction_verify:ExtractionVerify",
}


class NotAvailable(BuiltinError):
    pass


def builtin_class(name: str) -> type[Builtin]:
    """The class of built-in `name` (its traits need no instance), or NotAvailable with a clear reason."""
    target = REGISTRY.get(name)
    if target is None:
        raise NotAvailable(f"unknown built-in {name!r}; known: {', '.join(sorted(REGISTRY))}")
    module_name, cls_name = target.split(":")
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name == module_name:
            raise NotAvailable(f"built-in {name!r} is not available yet in this version of eagle-console") from None
        raise
    return getattr(module, cls_name)


def builtin_class_or_none(name: str | None) -> type[Builtin] | None:
    """`builtin_class`, or None for no name or one this install lacks (its run reports that in the log)."""
    if not name:
        return None
    try:
        return builtin_class(name)
    except NotAvailable:
        return None


def get_builtin(name: str) -> Builtin:
    """An instance of built-in `name`, or NotAvailable (never a fake success)."""
    return builtin_class(name)()


def check_with(name: str, args: dict[str, Any]) -> list[str]:
    """Problems with built-in `name`'s `with` table, found without running it (`Builtin.validate`); none for a
    built-in this install lacks (no fault of the plan). What `validate` gives the plan loader to ask."""
    cls = builtin_class_or_none(name)
    return [] if cls is None else cls().validate(args)


def available(name: str) -> bool:
    return builtin_class_or_none(name) is not None
