"""`drafter check`, `drafter compare-vocab` and `extraction`: thin commands over drafter/ and node/extraction."""

from __future__ import annotations

import argparse
from pathlib import Path

from eagle_console.cli.common import CliError, add_json, print_json
from eagle_console.figures import format_value


def register(sub: argparse._SubParsersAction) -> None:
    drafter = sub.add_parser("drafter", help="inspect EAGLE-3 drafter checkpoints")
    dsub = drafter.add_subparsers(dest="drafter_command", metavar="SUBCOMMAND")
    check = dsub.add_parser("check", help="findings for a drafter folder (headers only unless --values)")
    check.add_argument("dir", metavar="DIR", help="the drafter folder (config.json and *.safetensors)")
    check.add_argument("--target", metavar="DIR", help="target model folder (its config.json; text_config read)")
    check.add_argument("--values", action="store_true", help="also scan float weights for NaN/Inf (reads them)")
    check.add_argument("--sglang-version", metavar="X.Y.Z",
                       help="judge by this SGLang version (default: the one installed for --python, else here)")
    check.add_argument("--python", metavar="PATH", help="interpreter that will launch SGLang (its sglang is read)")
    add_json(check)
    check.set_defaults(func=cmd_check)
    cmp = dsub.add_parser("compare-vocab", help="how two drafters' d2t vocabulary mappings differ")
    cmp.add_argument("a", metavar="A", help="one drafter folder")
    cmp.add_argument("b", metavar="B", help="the other drafter folder")
    add_json(cmp)
    cmp.set_defaults(func=cmd_compare)
    # `drafter` alone is bad usage: one line on stderr, exit 2, as every other (docs/cli.md)
    drafter.set_defaults(func=lambda args: drafter.error(f"give a subcommand: {', '.join(dsub.choices)}"))

    ext = sub.add_parser("extraction", help="progress, size and free space of a hidden-state extraction")
    ext.add_argument("paths", nargs="+", metavar="LOG_OR_DIR", help="the job's log file(s) and/or output folder(s)")
    ext.add_argument("--total", type=int, help="samples expected (default: from the progress lines)")
    ext.add_argument("--pattern", help="sample file glob (default: *.pt, *.ckpt, *.ckpt.gz, *.safetensors)")
    add_json(ext)
    ext.set_defaults(func=cmd_extraction)


def cmd_check(args: argparse.Namespace) -> int:
    from eagle_console.drafter.check import check_drafter

    if not Path(args.dir).is_dir():
        raise CliError(f"{args.dir}: drafter folder not found")
    if args.target and not Path(args.target).is_dir():
        raise CliError(f"{args.target}: target model folder not found")
    result = check_drafter(args.dir, args.target, args.values, args.sglang_version, args.python)
    if args.json:
        print_json(result)
    else:
        for f in result["findings"]:
            print(f"{f['severity']:7} {f['code']:26} {f['message']}")
        errors = sum(f["severity"] == "error" for f in result["findings"])
        print(f"{args.dir}: {result['tensors']} tensors, {errors} errors -> {'OK' if result['ok'] else 'NOT OK'}")
    return 0 if result["ok"] else 1


def cmd_compare(args: argparse.Namespace) -> int:
    from eagle_console.drafter.checkpoint import CheckpointError
    from eagle_console.drafter.vocab import compare_vocab

    try:
        r = compare_vocab(args.a, args.b)
    except CheckpointError as exc:
        raise CliError(str(exc)) from None
    if args.json:
        print_json(r)
    else:
        print(f"size A {r['size_a']}, size B {r['size_b']}; positions differ: {r['positions_differ']}; "
              f"target overlap {r['target_overlap']} (only in A {r['only_in_a']}, only in B {r['only_in_b']})")
        print(r["meaning"])
    return 0


def _gb(n: int | None) -> str:
    return "?" if n is None else f"{n / 1e9:.2f} GB"


def cmd_extraction(args: argparse.Namespace) -> int:
    from eagle_console.node.extraction import ExtractionWatch

    missing = [p for p in args.paths if not Path(p).exists()]
    if missing:
        raise CliError(f"{missing[0]}: not found")
    r = ExtractionWatch.from_paths(args.paths, pattern=args.pattern, total=args.total).tick()
    if args.json:
        print_json(r)
        return 0
    total = r["total"] if r["total"] is not None else "?"
    rate = f"{r['rate_per_s']:.2f}/s" if r["rate_per_s"] else "?"
    eta = f"{r['eta_s'] / 60:.1f} min" if r["eta_s"] is not None else "?"
    print(f"samples {r['done']}/{total}  rate {rate}  ETA {eta}  tokens {r['tokens'] if r['tokens'] is not None else '?'}")
    print(f"files {r['files']}  output {_gb(r['output_bytes'])}  projected {_gb(r['projected_bytes'])}  "
          f"free {_gb(r['free_bytes'])}  /dev/shm free {_gb(r['shm_free_bytes'])}")
    for w in r["warnings"]:
        print(f"warning: {w}")
    if r["summary"]:
        print(f"finished: {format_value(r['summary'])}")
    return 0
