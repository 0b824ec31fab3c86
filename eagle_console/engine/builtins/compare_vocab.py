"""`uses = "drafter.compare_vocab"`: how two drafters' d2t mappings differ; fails past `max_mismatch`."""

from __future__ import annotations

from typing import Any

from eagle_console.engine.builtins.base import ActionContext, Builtin, BuiltinError


class CompareVocab(Builtin):
    name = "drafter.compare_vocab"
    undo_marks = "a comparison changes nothing: marked rolled back"
    drafter_findings = True

    def validate(self, args: dict[str, Any]) -> list[str]:
        problems = [f"drafter.compare_vocab needs `{k}`" for k in ("a", "b") if not args.get(k)]
        mm = args.get("max_mismatch")
        if mm is not None and (not isinstance(mm, int) or isinstance(mm, bool) or mm < 0):
            problems.append("drafter.compare_vocab: `max_mismatch` must be a non-negative integer")
        return problems

    def run(self, ctx: ActionContext) -> int:
        from eagle_console.drafter.checkpoint import CheckpointError
        from eagle_console.drafter.vocab import compare_vocab

        try:
            r = compare_vocab(str(ctx.path(ctx.args["a"])), str(ctx.path(ctx.args["b"])))
        except CheckpointError as exc:
            raise BuiltinError(str(exc)) from None
        ctx.say(f"size a {r['size_a']}, size b {r['size_b']}: {r['positions_differ']} positions differ; "
                f"target sets share {r['target_overlap']} (only in a {r['only_in_a']}, only in b {r['only_in_b']})")
        ctx.say(r["meaning"])
        ctx.result("vocab_positions_differ", r["positions_differ"])
        ctx.result("vocab_target_overlap", r["target_overlap"])
        limit = ctx.args.get("max_mismatch")
        if limit is not None and r["positions_differ"] > int(limit):
            ctx.say(f"{r['positions_differ']} differing positions exceed max_mismatch = {limit}")
            return 1
        return 0
