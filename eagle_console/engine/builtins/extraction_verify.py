"""`uses = "extraction.verify"`: open a sample of extracted files (the longest included) and check them."""

from __future__ import annotations

from typing import Any

from eagle_console.engine.builtins.base import ActionContext, Builtin, BuiltinError

KNOWN = {"path", "pattern", "sample", "hidden_size", "layers"}


class ExtractionVerify(Builtin):
    name = "extraction.verify"
    undo_marks = "a verification changes nothing: marked rolled back"

    def validate(self, args: dict[str, Any]) -> list[str]:
        problems = [] if args.get("path") else ["extraction.verify needs `path` (the output folder)"]
        for key in ("sample", "hidden_size", "layers"):
            v = args.get(key)
            if v is not None and (not isinstance(v, int) or isinstance(v, bool) or v < 1):
                problems.append(f"extraction.verify: `{key}` must be a positive integer")
        if set(args) - KNOWN:
            problems.append(f"extraction.verify: unknown keys {sorted(set(args) - KNOWN)}")
        return problems

    def run(self, ctx: ActionContext) -> int:
        from eagle_console.drafter.samples import verify_extraction

        a = ctx.args
        try:
            r = verify_extraction(str(ctx.path(a["path"])), a.get("pattern"), int(a.get("sample", 20)),
                                  a.get("hidden_size"), a.get("layers"))
        except FileNotFoundError as exc:
            raise BuiltinError(str(exc)) from None
        for bad in r["problems"]:
            ctx.say(f"BAD {bad['file']}: {'; '.join(bad['problems'])}")
        if r["skipped"]:
            ctx.say(f"skipped {r['skipped']} files: {r['skipped_reason']}")
        largest = f" (largest: {r['largest_file']})" if r["largest_file"] else ""
        ctx.say(f"{r['checked']} of {r['files']} files checked{largest}; {r['bad']} bad")
        ctx.result("verify_files", r["files"])
        ctx.result("verify_checked", r["checked"])
        ctx.result("verify_bad", r["bad"])
        if not r["checked"]:
            ctx.say("no sample file could be checked")
        return 0 if r["ok"] else 1
