"""Registry of built-in actions, imported lazily so a heavy one costs nothing until used."""

from __future__ import annotations

import importlib

from eagle_console.engine.builtins.base import Builtin, BuiltinError
from eagle_console.plan.model import BUILTINS

# name -> "module:Class". Each module holds one built-in.
REGISTRY: dict[str, str] = {
    "gpu.kill": "eagle_console.engine.builtins.gpu_kill:GpuKill",
    "gpu.wait_free": "eagle_console.engine.builtins.gpu_wait_free:GpuWaitFree",
    "json.set": "eagle_console.engine.builtins.json_set:JsonSet",
    "http.wait": "eagle_console.engine.builtins.http_wait:HttpWait",
    "drafter.check": "eagle_console.engine.builtins.drafter_check:DrafterCheck",
    "drafter.compare_vocab": "eagle_console.engine.builtins.compare_vocab:CompareVocab",
    "sglang.server": "eagle_console.engine.builtins.sglang_server:SglangServer",
    "sglang.bench": "eagle_console.engine.builtins.sglang_bench:SglangBench",
    "extraction.verify": "eagle_console.engine.builtins.extraction_verify:ExtractionVerify",
}
assert set(REGISTRY) == set(BUILTINS)


class NotAvailable(BuiltinError):
    pass


def get_builtin(name: str) -> Builtin:
    """The built-in `name`, or NotAvailable with a clear reason (never a fake success)."""
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
    return getattr(module, cls_name)()


def available(name: str) -> bool:
    try:
        get_builtin(name)
    except NotAvailable:
        return False
    return True
