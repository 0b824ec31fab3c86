"""`eagle-console init [PATH]`: write a commented plan for a real node, never over an existing file."""

from __future__ import annotations

import argparse
from pathlib import Path

from eagle_console.cli.common import CliError

DEFAULT_PATH = Path("plans") / "kimi-k25-eagle3.toml"
SCHEMA = Path(__file__).resolve().parent.parent / "plan" / "schema.json"

# The node the project serves: 8x RTX PRO 6000 (PCIe, no NVLink), Kimi-K2.5 with an EAGLE-3 drafter.
# Every action is a real built-in (docs/plan-format.md#built-ins); `validate` passes on it as written.
def plan_for(path: Path, schema_url: str) -> str:
    """The commented plan written at `path` (named in its comments), pointing editors at the schema."""
    from eagle_console.plan.text import SPECULATIVE_CHAIN, Note, Phase, Step, plan_text, table

    preamble = [
        f"#:schema {schema_url}",
        "An eagle-console game plan (docs/plan-format.md). It says what you intend to do; statuses, runs,",
        "results and notes go in the journal (.eagle-console/<plan id>/journal.db), never in this file.",
        f"  eagle-console validate {path}    # every error as PLAN:LINE:COL: message",
        f"  eagle-console {path}             # the console: run (r), mark, roll back (u), kill orphans (K)",
        f"  eagle-console next {path} --wait # or step by step from a shell",
    ]
    plan = table("plan", [
        ("id", "kimi-k25-eagle3", "the journal is keyed by it: keep it when you edit the plan"),
        ("title", "Kimi-K2.5 with an EAGLE-3 drafter on 8x RTX PRO 6000"),
        ("node", "8x RTX PRO 6000 Blackwell (96 GB), PCIe, no NVLink"),
        ("todo_label", "{id}: {title}", "what `export --format todowrite` writes per item"),
        ("baseline", {"tok_s": 82.0}, "single-stream tok/s without speculation; sglang.bench compares"),
    ])
    variables = table("vars", [
        ("model", "/data/models/Kimi-K2.5", "the target model folder (config.json is read)"),
        ("drafter", "/data/drafters/kimi-k25-eagle3", "the EAGLE-3 drafter folder (config.json + safetensors)"),
        ("port", 30000),
        ("url", "http://127.0.0.1:${port}"),
    ], comment="use them below as ${name}")
    env = table("env", [
        Note("PCIe Blackwell cards through a host bridge: NCCL may take SHM instead of P2P (normal on NCCL >= 2.23)."),
        Note('If the server hangs after "Init COMPLETE" with the GPUs busy, try NCCL_P2P_DISABLE = "1" and'),
        Note('NCCL_CUMEM_ENABLE = "0" here (see `eagle-console nccl LOG`).'),
        ("NCCL_PROTO", "LL"),
        ("NCCL_ALGO", "Ring"),
    ], comment="for every action of the plan")
    prep = Phase([("id", "prep"), ("title", "Free the GPUs and check the drafter"), ("priority", "high")], [
        Step([("id", "prep.kill"), ("title", "Kill orphaned GPU workers left by earlier servers"),
              ("uses", "gpu.kill", "asks before running (confirm defaults to true)"),
              ("with", {"scope": "orphans", "grace": "10s"})]),
        Step([("id", "prep.free"), ("title", "Wait until every GPU is free"), ("needs", ["prep.kill"]),
              ("uses", "gpu.wait_free"), ("with", {"max_used_mib": 1024, "timeout": "2m"})]),
        Step([("id", "prep.context"), ("title", "Give the drafter K2.5's context length"),
              Note("SGLang enforces the context limit; K2.5 expects 262144. Undo restores the file's exact bytes."),
              ("uses", "json.set"),
              ("with", {"path": "${drafter}/config.json", "set": {"max_position_embeddings": 262144}}),
              ("check", {"uses": "drafter.check", "with": {"path": "${drafter}", "target": "${model}"}})]),
    ])
    serve = Phase([("id", "serve"), ("title", "Serve K2.5 with speculative decoding"), ("priority", "high"),
                   ("needs", ["prep"], "every step here waits for the whole prep phase")], [
        Step([("id", "serve.launch"), ("title", "Launch SGLang: K2.5 + EAGLE-3 drafter, TP 8"),
              ("uses", "sglang.server", "a service: ready at /health; rollback stops it"),
              ("log", "logs/sglang-kimi-k25.log"),
              ("timeout", "40m", "loading 8 shards of a 1T model takes a while"),
              ("env", {"NCCL_DEBUG": "INFO"}, "NCCL lines in the log for the NCCL tab")],
             with_=[("model", "${model}"), ("draft", "${drafter}"), ("tp", 8), ("port", "${port}"),
                    Note("A chain (eagle_topk = 1) wants num_draft_tokens = num_steps + 1."),
                    ("speculative", SPECULATIVE_CHAIN), ("args", ["--trust-remote-code"])]),
        Step([("id", "serve.health"), ("title", "The server answers /health"), ("needs", ["serve.launch"]),
              ("uses", "http.wait"), ("with", {"url": "${url}/health", "status": 200, "timeout": "2m"})]),
    ])
    bench = Phase([("id", "bench"), ("title", "Measure"), ("priority", "medium"), ("needs", ["serve"])], [
        Step([("id", "bench.single"), ("title", "Single-stream throughput against the baseline"),
              ("uses", "sglang.bench", "records tok_s, accept_length, speedup"),
              ("with", {"url": "${url}", "requests": 20, "max_new_tokens": 512})]),
    ])
    return plan_text(preamble, [plan, variables, env], [prep, serve, bench])


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "init", help="write a commented plan template for a real node (never overwrites)",
        description="Write a commented game plan for an 8x RTX PRO 6000 node serving Kimi-K2.5 with an "
        f"EAGLE-3 drafter, using the real built-ins. Default PATH: {DEFAULT_PATH}. An existing file is "
        "never overwritten (exit 2).",
    )
    p.add_argument("path", nargs="?", metavar="PATH", default=str(DEFAULT_PATH))
    p.set_defaults(func=cmd_init)


def render(path: Path) -> str:
    """The plan written at `path` (named in its comments), pointing editors at the schema."""
    return plan_for(path, SCHEMA.as_uri())


def cmd_init(args: argparse.Namespace) -> int:
    path = Path(args.path)
    if path.exists() or path.is_symlink():
        raise CliError(f"{path} already exists; not overwriting it (choose another PATH or remove it)")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "x", encoding="utf-8") as f:  # "x": a file created meanwhile is not overwritten
            f.write(render(path))
    except FileExistsError:
        raise CliError(f"{path} already exists; not overwriting it") from None
    except OSError as exc:
        raise CliError(f"cannot write {path}: {exc.strerror or exc}") from None
    print(f"wrote {path}: edit [vars] (model, drafter), then: eagle-console validate {path}")
    return 0
