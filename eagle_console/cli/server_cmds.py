"""`nccl LOG...` and `server-log LOG`: summaries of NCCL debug output and of an SGLang server log."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from eagle_console.cli.common import CliError, add_json, print_json
from eagle_console.sparkline import sparkline

if TYPE_CHECKING:
    from eagle_console.parse.nccl import NcclSummary
    from eagle_console.parse.sglang_log import ServerLogSummary, SglangLogParser


def register(sub: argparse._SubParsersAction) -> None:
    nccl = sub.add_parser("nccl", help="NCCL summary of logs (NCCL_DEBUG=INFO): ranks, transports, findings")
    nccl.add_argument("logs", nargs="*", metavar="LOG", help="server logs and/or NCCL_DEBUG_FILE files, "
                      "all ranks' files together")
    nccl.add_argument("--node", action="append", default=[], metavar="NAME=LOG",
                      help="a log of node NAME (repeat per node): the nodes' logs are merged into one diagnosis")
    nccl.add_argument("--service", nargs=2, metavar=("PLAN", "STEP"),
                      help="the ranks' logs of a multi-node sglang.server step, merged")
    nccl.add_argument("--matrix", action="store_true", help="text form: also print the rank×rank matrix")
    add_json(nccl)
    nccl.set_defaults(func=cmd_nccl)

    slog = sub.add_parser("server-log", help="SGLang server log summary: stages, ready, decode stats, errors")
    slog.add_argument("log", metavar="LOG")
    slog.add_argument("--follow", "-f", action="store_true",
                      help="text form: keep reading, print each stage, error and decode line as it comes")
    slog.add_argument("--baseline", type=float, metavar="TOK_S",
                      help="decode tok/s the server should beat with speculative decoding on (BELOW_BASELINE)")
    add_json(slog)
    slog.set_defaults(func=cmd_server_log)


def _check_file(path: str) -> Path:
    p = Path(path)
    if not p.exists():
        raise CliError(f"{path}: no such file")
    if not p.is_file():
        raise CliError(f"{path}: not a regular file")
    return p


def _local_gpu_names(log_hosts: dict[str, None]) -> list[str]:
    """This machine's card names (NVML) when the log is from this machine: SHM_FALLBACK names the card class."""
    import socket

    if socket.gethostname() not in log_hosts:
        return []
    from eagle_console.ops import sample_once

    return [g.name for g in sample_once(None).gpus if g.name]


def cmd_nccl(args: argparse.Namespace) -> int:
    from eagle_console.node.tail import read_lines
    from eagle_console.parse.nccl import NcclParser
    from eagle_console.parse.nccl_matrix import format_matrix

    node_logs = _node_logs(args)
    if node_logs:
        from eagle_console.parse.nccl_merge import merge_nccl

        paths = [_check_file(p) for p in args.logs]
        if paths:
            node_logs.append(("(unnamed)", [str(p) for p in paths]))
        summary = merge_nccl([(node, (line for p in files for line in read_lines(Path(p))))
                              for node, files in node_logs])
        lines_seen = None
    else:
        if not args.logs:
            raise CliError("nccl: give LOG files, --node NAME=LOG, or --service PLAN STEP")
        paths = [_check_file(p) for p in args.logs]
        parser = NcclParser()
        for path in paths:
            parser.feed(read_lines(path))
        parser.gpu_names = _local_gpu_names(parser.hosts)
        summary = parser.summary()
        lines_seen = parser.nccl_lines_seen
    if args.json:
        print_json(summary)
    else:
        _print_nccl(summary, lines_seen)
        if args.matrix:
            print("\n".join(format_matrix(summary)))
    return 1 if any(f["severity"] == "error" for f in summary["findings"]) else 0


def _node_logs(args: argparse.Namespace) -> list[tuple[str, list[str]]]:
    """(node, its log files) from --node NAME=LOG and --service PLAN STEP, in the order given."""
    out: dict[str, list[str]] = {}
    for item in args.node:
        name, sep, path = item.partition("=")
        if not sep or not name or not path:
            raise CliError(f"--node {item}: NAME=LOG expected")
        out.setdefault(name, []).append(str(_check_file(path)))
    if args.service:
        from eagle_console.cli.common import load_plan  # PLAN:LINE:COL: message, exit 2, as every command
        from eagle_console.ops.nccl_ranks import rank_logs
        from eagle_console.ops.steps import check_step

        plan_path, step = args.service
        plan = load_plan(plan_path)

        try:
            check_step(plan, step, "give its sglang.server step ({steps})")
        except ValueError as exc:
            raise CliError(f"--service: {exc}") from None
        ranks = rank_logs(plan.state_dir, step)
        if not ranks:
            raise CliError(f"step {step}: no ranks recorded (not a multi-node sglang.server, or never run)")
        for node, log in ranks:
            out.setdefault(node, []).append(str(_check_file(log)))
    return list(out.items())


def _print_nccl(s: NcclSummary, nccl_lines: int | None) -> None:
    ranks = s["ranks"] if s["ranks"] is not None else "?"
    seen = f" · {nccl_lines} NCCL lines" if nccl_lines is not None else ""
    print(f"NCCL {s['version'] or 'version unknown'} · {s['init_complete']}/{ranks} ranks initialised · "
          f"hosts: {', '.join(s['hosts']) or '—'}{seen}")
    node_ranks = s.get("node_ranks")
    if node_ranks:
        print(f"nodes: {s.get('nnodes') or '?'} per NCCL · " + " · ".join(
            f"{node}: ranks {', '.join(map(str, r)) or '—'}" for node, r in node_ranks.items()))
    # one unit on the line, said: GPU pairs, as the findings count them; the channel connections after them
    pairs = s.get("transport_pairs") or {}
    print("GPU pairs: " + (", ".join(f"{v} {k}" for k, v in pairs.items() if v) or "none")
          + " · channel connections: " + (", ".join(f"{v} {k}" for k, v in s["transports"].items() if v) or "none"))
    for d in s["devices"]:
        print(f"  rank {d['rank']:>3}  cudaDev {d['cuda_dev'] if d['cuda_dev'] is not None else '?':>2}  "
              f"bus {d['bus_id'] or '?'}")
    if s["env"]:
        print("env: " + " ".join(f"{k}={v}" for k, v in s["env"].items()))
    for f in s["findings"]:
        print(f"{f['severity']:7} {f['code']:16} {f['message']}")
    if not s["findings"]:
        print("no findings")


def cmd_server_log(args: argparse.Namespace) -> int:
    from eagle_console.node.tail import read_lines
    from eagle_console.parse.sglang_log import SglangLogParser

    path = _check_file(args.log)
    parser = SglangLogParser(baseline_tok_s=args.baseline)
    if args.follow and not args.json:
        return _follow_server_log(path, parser)
    parser.feed(read_lines(path))
    summary = parser.summary()
    if args.json:
        print_json(summary)
    else:
        _print_server_log(summary, parser)
    return 1 if any(f["severity"] == "error" for f in summary["findings"]) else 0


def _print_server_log(s: ServerLogSummary, parser: SglangLogParser) -> None:
    print(f"ready: {'yes' if s['ready'] else 'no'} · {len(s['stages'])} stages · "
          f"{s['decode_samples']} decode logs · {len(s['errors'])} errors")
    for st in s["stages"]:
        print(f"  {st['name']:<26} {st['line']}")
    if s["load"]:
        from eagle_console.parse.sglang_log import describe_load  # its patterns: ~8 ms no other command needs

        print(describe_load(s["load"]))
    d = s["decode"]
    if d:
        accept = f"{d['accept_len']:.2f}" if d["accept_len"] is not None else "n/a"
        print(f"decode (latest): {d['gen_throughput']:.2f} tok/s · accept len {accept} · "
              f"running {d['running_req']} · token usage {d['token_usage']:.2f}")
        spec = parser.describe_decode()  # accept rate with its definition (changed upstream), cap lens
        if spec:
            print(f"speculative: {spec}")
        history = [t for t, _a in parser.history]
        if len(history) > 1:
            print(f"throughput over {len(history)} logs: {sparkline(history)}")
    for f in s["findings"]:
        print(f"{f['severity']:7} {f['code']:26} {f['message']}")


def _follow_server_log(path: Path, parser: SglangLogParser) -> int:
    from eagle_console.node.tail import follow

    seen_stages = errors = 0
    for line in follow(path):
        before = parser.decode_samples
        parser.feed_line(line)
        stages, errs = parser.stages, parser.errors
        for st in stages[seen_stages:]:
            print(f"[stage] {st['name']}: {st['line']}")
        for err in errs[errors:]:
            print(f"[error] {err}")
        seen_stages, errors = len(stages), len(errs)
        if parser.decode_samples != before and parser.decode is not None:
            d = parser.decode
            spec = parser.describe_decode() or "accept len n/a"
            print(f"[decode] {d.gen_throughput:.2f} tok/s · {spec} · running {d.running_req}")
        sys.stdout.flush()
    return 0
