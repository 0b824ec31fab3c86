"""`sglang.bench`: single-stream streaming benchmark; every figure recorded as a result, with the baseline."""

from __future__ import annotations

from typing import Any

from eagle_console.engine.builtins.base import ActionContext, Builtin, BuiltinError
from eagle_console.figures import format_value

KNOWN = {"url", "requests", "max_new_tokens", "prompt", "prompts_file", "baseline_tok_s", "chat"}


def _positive_int(args: dict[str, Any], key: str, default: int) -> int:
    value = args.get(key, default)
    if isinstance(value, bool) or not isinstance(value, (int, str)) or not str(value).isdigit() or int(value) < 1:
        raise ValueError(f"`{key}` must be a positive integer, got {value!r}")
    return int(value)


class SglangBench(Builtin):
    name = "sglang.bench"
    undo_marks = "a benchmark changes nothing: marked rolled back"

    def validate(self, args: dict[str, Any]) -> list[str]:
        problems = []
        unknown = set(args) - KNOWN
        if unknown:
            problems.append(f"unknown keys: {', '.join(sorted(unknown))}")
        if not isinstance(args.get("url"), str) or not args.get("url"):
            problems.append("`url` is required")
        for key, default in (("requests", 10), ("max_new_tokens", 256)):
            try:
                _positive_int(args, key, default)
            except ValueError as exc:
                problems.append(str(exc))
        base = args.get("baseline_tok_s")
        if base is not None and (isinstance(base, bool) or not isinstance(base, (int, float)) or base <= 0):
            problems.append(f"`baseline_tok_s` must be a positive number, got {base!r}")
        if not isinstance(args.get("chat", False), bool):
            problems.append(f"`chat` must be true or false, got {args.get('chat')!r}")
        if args.get("prompt") is not None and args.get("prompts_file") is not None:
            problems.append("give `prompt` or `prompts_file`, not both")
        return problems

    def run(self, ctx: ActionContext) -> int:
        from eagle_console.httpnet import shown_url
        from eagle_console.sglang.bench import load_prompts, run_bench
        from eagle_console.sglang.client import ServerError

        a = ctx.args
        requests = _positive_int(a, "requests", 10)
        max_new = _positive_int(a, "max_new_tokens", 256)
        prompts_file = a.get("prompts_file")
        if prompts_file:
            prompts_file = str(ctx.path(prompts_file))
        try:
            prompts = load_prompts(a.get("prompt"), prompts_file)
        except ValueError as exc:
            raise BuiltinError(str(exc)) from None
        ctx.say(f"benchmarking {shown_url(a['url'])}: {requests} requests x {max_new} new tokens, one at a time")

        def progress(done: int, total: int, s) -> None:
            if s.error is not None:
                ctx.say(f"request {done}/{total} failed after {s.output_tokens} tokens: {s.error}")
                return
            rate = s.output_tokens / s.duration_s if s.duration_s > 0 else 0.0
            accept = f", accept {s.accept_length:.2f}" if s.accept_length is not None else ""
            ttft = f"{s.ttft_ms:.0f}" if s.ttft_ms is not None else "?"
            ctx.say(f"request {done}/{total}: {s.output_tokens} tokens in {s.duration_s:.2f}s "
                    f"({rate:.1f} tok/s, TTFT {ttft} ms{accept})")

        try:
            r = run_bench(a["url"], requests=requests, max_new_tokens=max_new, prompts=prompts, progress=progress,
                          chat=bool(a.get("chat", False)))
        except ServerError as exc:
            raise BuiltinError(str(exc)) from None
        ctx.result("tok_s", r.tok_s)
        ctx.result("output_tokens", r.output_tokens)
        ctx.result("requests", r.requests)
        ctx.result("duration_s", r.duration_s)
        for name in ("decode_tok_s", "ttft_ms_median", "itl_ms_median", "itl_ms_mean", "tpot_ms_median",
                     "accept_length", "accept_length_server"):
            value = getattr(r, name)
            if value is not None:
                ctx.result(name, value)
        if r.failed:
            ctx.result("failed", r.failed)
        # the 82 tok/s baseline is a decode speed: compare decode speed with it, not end-to-end tok/s; every
        # figure said with what it is, and the % as the Results pane computes it (one decimal)
        speed = r.decode_tok_s if r.decode_tok_s is not None else r.tok_s
        measured = (f"decode_tok_s {format_value(speed)}" if r.decode_tok_s is not None
                    else f"tok_s {format_value(speed)} end-to-end (no decode figure)")
        end_to_end = f"tok_s {format_value(r.tok_s)} end-to-end (prefill included)"
        baseline = a.get("baseline_tok_s", ctx.baseline.get("tok_s"))
        if baseline:
            speedup = speed / float(baseline)
            ctx.result("baseline_tok_s", float(baseline))
            ctx.result("speedup", round(speedup, 3))
            ctx.say(f"{measured} vs {format_value(float(baseline))} baseline (a decode speed): speedup "
                    f"{speedup:.2f}x ({(speedup - 1) * 100:+.1f}%) · {end_to_end}")
        else:
            ctx.say(f"{measured} · {end_to_end} · no baseline: set plan.baseline.tok_s or with.baseline_tok_s")
        if r.failed:
            ctx.say(f"{r.failed} of {r.failed + r.requests} requests failed; figures are from the others")
            return 1
        return 0
