"""`eagle-console bench URL`: the single-stream benchmark against a running server."""

from __future__ import annotations

import argparse
import sys

from eagle_console.cli.common import CliError, add_json, print_json


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("bench", help="single-stream streaming benchmark of an SGLang server: tok/s, TTFT, ITL, "
                       "accept length")
    p.add_argument("url", help="the server, e.g. http://127.0.0.1:30000")
    p.add_argument("--requests", type=int, default=10, help="requests, sent one at a time (default 10)")
    p.add_argument("--max-new-tokens", type=int, default=256, help="tokens per request (default 256)")
    p.add_argument("--prompt", help="one prompt for every request")
    p.add_argument("--prompts-file", help="prompts, one per line (or JSONL with \"prompt\")")
    p.add_argument("--chat", action="store_true",
                   help="send prompts through the model's chat template (/v1/chat/completions): raw prompts can "
                   "overstate a drafter's accept length about 2x")
    add_json(p)
    p.set_defaults(func=cmd_bench)


def cmd_bench(args: argparse.Namespace) -> int:
    from eagle_console.sglang.bench import load_prompts, run_bench
    from eagle_console.sglang.client import ServerError

    if args.requests < 1 or args.max_new_tokens < 1:
        raise CliError("--requests and --max-new-tokens must be >= 1")
    try:
        prompts = load_prompts(args.prompt, args.prompts_file)
    except ValueError as exc:
        raise CliError(str(exc)) from None

    def progress(done: int, total: int, s) -> None:
        if not args.json:
            rate = s.output_tokens / s.duration_s if s.duration_s > 0 else 0.0
            print(f"  {done}/{total}: {s.output_tokens} tokens, {rate:.1f} tok/s", file=sys.stderr, flush=True)

    try:
        r = run_bench(args.url, requests=args.requests, max_new_tokens=args.max_new_tokens, prompts=prompts,
                      progress=progress, chat=args.chat)
    except ServerError as exc:
        raise CliError(str(exc), code=1) from None
    code = 1 if r.failed else 0  # partial results are still shown; the exit status says some failed
    if args.json:
        print_json(r.to_json())
        return code
    fmt = lambda v, unit="": "n/a" if v is None else f"{v:g}{unit}"  # noqa: E731
    print(f"requests          {r.requests}")
    print(f"output tokens     {r.output_tokens}")
    print(f"duration          {r.duration_s:.2f} s")
    print(f"output tok/s      {r.tok_s:.2f} (end to end)")
    print(f"decode tok/s      {fmt(r.decode_tok_s)} (first to last token)")
    print(f"TTFT median       {fmt(r.ttft_ms_median, ' ms')}")
    print(f"ITL median/mean   {fmt(r.itl_ms_median, ' ms')} / {fmt(r.itl_ms_mean, ' ms')} (per token)")
    print(f"TPOT median       {fmt(r.tpot_ms_median, ' ms')}")
    print(f"accept length     {fmt(r.accept_length)} ({r.definitions.get('accept_length') or 'not reported'})")
    print(f"prompts           {r.definitions['prompt_format']}")
    if r.failed:
        print(f"failed requests   {r.failed}")
        for e in r.errors:
            print(f"  {e}", file=sys.stderr)
    return code
