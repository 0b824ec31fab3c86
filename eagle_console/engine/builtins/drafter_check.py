"""`uses = "drafter.check"`: inspect a drafter (and its target) as a given SGLang loads it; fails on any error
finding."""

from __future__ import annotations

from typing import Any

from eagle_console.drafter.sglang_versions import parse_version
from eagle_console.engine.builtins.base import ActionContext, Builtin

# sglang_version: the SGLang the plan launches; python: the interpreter whose sglang is read instead
KNOWN = {"path", "target", "values", "sglang_version", "python"}


class DrafterCheck(Builtin):
    name = "drafter.check"
    undo_marks = "a check changes nothing: marked rolled back"
    drafter_findings = True

    def validate(self, args: dict[str, Any]) -> list[str]:
        problems = [] if args.get("path") else ["drafter.check needs `path` (the drafter folder)"]
        unknown = set(args) - KNOWN
        if unknown:
            problems.append(f"drafter.check: unknown keys {sorted(unknown)} (known: {', '.join(sorted(KNOWN))})")
        version = args.get("sglang_version")
        if version is not None and parse_version(str(version)) is None:
            problems.append(f"drafter.check: sglang_version {version!r} is not a version like \"0.5.14\"")
        return problems

    def run(self, ctx: ActionContext) -> int:
        from eagle_console.drafter.check import check_drafter

        version = ctx.args.get("sglang_version")
        target = ctx.args.get("target")
        result = check_drafter(str(ctx.path(ctx.args["path"])), str(ctx.path(target)) if target else None,
                               bool(ctx.args.get("values", False)),
                               str(version) if version is not None else None, ctx.args.get("python"))
        for f in result["findings"]:
            ctx.say(f"{f['severity'].upper():7} {f['code']}: {f['message']}")
        counts = {s: sum(f["severity"] == s for f in result["findings"]) for s in ("error", "warning")}
        ctx.say(f"{result['tensors']} tensors; {counts['error']} errors, {counts['warning']} warnings")
        ctx.result("drafter_errors", counts["error"])
        ctx.result("drafter_warnings", counts["warning"])
        return 0 if result["ok"] else 1
