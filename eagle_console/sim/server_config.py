"""The simulated server's view of `sglang.launch_server` flags, parsed as SGLang's argparse does.

Like the real one: an unknown flag is an error, and argparse's abbreviations are accepted (`--por 30001`
is `--port 30001`; allow_abbrev is argparse's default and SGLang does not turn it off). Flags the sim
has no use for are accepted and ignored (NO_EFFECT). SGLang's assert is kept: `--speculative-eagle-topk`
or `--speculative-num-draft-tokens` without `--speculative-num-steps` is refused.
"""

from __future__ import annotations

import argparse
import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path

# Per-GPU weights of Kimi-K2.5 (INT4 experts, ~595 GB) spread over 8 ranks, and the draft model's share.
K25_WEIGHTS_GIB_TP8 = 72.6
DRAFT_WEIGHTS_GIB = 0.9
DEFAULT_MEM_FRACTION = 0.82  # what SGLang auto-picks for a 96 GB card at tp 8 (≈ 78 GB held per GPU)
CONTEXT_LEN = 262144


@dataclass
class ServerConfig:
    model_path: str = "moonshotai/Kimi-K2.5"
    tokenizer_path: str | None = None
    served_model_name: str | None = None
    host: str = "127.0.0.1"
    port: int = 30000
    tp_size: int = 1
    speculative_algorithm: str | None = None
    speculative_draft_model_path: str | None = None
    speculative_num_steps: int | None = None
    speculative_eagle_topk: int | None = None
    speculative_num_draft_tokens: int | None = None
    decode_log_interval: int = 40
    mem_fraction_static: float | None = None
    context_length: int | None = None
    disable_cuda_graph: bool = False
    cuda_graph_backend_decode: str | None = None  # 0.5.23: "disabled" replaces --disable-cuda-graph
    cuda_graph_backend_prefill: str | None = None
    trust_remote_code: bool = False
    skip_server_warmup: bool = False
    nnodes: int = 1
    node_rank: int = 0
    dist_init_addr: str | None = None
    enable_metrics: bool = False  # /metrics exists only with it, as in SGLang (http_server.py:314)
    enable_metrics_for_all_schedulers: bool = False
    ignored: list[str] = field(default_factory=list)

    @property
    def tp_per_node(self) -> int:
        """engine.py `_launch_scheduler_processes`: each node runs tp_size / nnodes schedulers."""
        return self.tp_size // self.nnodes

    @property
    def local_tp_ranks(self) -> range:
        """The global TP ranks this node's schedulers take (node_rank's slice)."""
        return range(self.tp_per_node * self.node_rank, self.tp_per_node * (self.node_rank + 1))

    @property
    def speculative(self) -> bool:
        return bool(self.speculative_algorithm)

    @property
    def has_server_info(self) -> bool:
        """`/server_info` exists on new servers; EAGLE_SIM_NO_SERVER_INFO=1 plays an old one."""
        return os.environ.get("EAGLE_SIM_NO_SERVER_INFO") != "1"

    def drafts_accepted(self) -> bool:
        """False for `--speculative-algorithm EAGLE` with an EAGLE-3 drafter: SGLang then accepts nothing. Also
        False with EAGLE_SIM_ACCEPT=none: a drafter that loads and is never accepted (a d2t from another
        vocabulary, hidden states from the wrong layers), which no log line reveals: the demo's silent drafter."""
        if os.environ.get("EAGLE_SIM_ACCEPT", "").lower() == "none":
            return False
        if (self.speculative_algorithm or "").upper() != "EAGLE" or not self.speculative_draft_model_path:
            return True
        config = draft_config(self.speculative_draft_model_path)
        return config is None or not is_eagle3_config(config)

    @property
    def decode_graph(self) -> bool:
        """Whether the decode CUDA graph is captured (--disable-cuda-graph, or 0.5.23's backend flag)."""
        return not self.disable_cuda_graph and self.cuda_graph_backend_decode != "disabled"

    @property
    def num_steps(self) -> int:
        return self.speculative_num_steps or 3

    @property
    def num_draft_tokens(self) -> int:
        return self.speculative_num_draft_tokens or self.num_steps + 1

    @property
    def model_name(self) -> str:
        return self.served_model_name or self.model_path

    def as_server_args(self) -> dict:
        data = asdict(self)
        data.pop("ignored")
        data["tokenizer_path"] = self.tokenizer_path or self.model_path
        data["served_model_name"] = self.model_name
        data["mem_fraction_static"] = self.mem_fraction_static or DEFAULT_MEM_FRACTION
        data["context_length"] = self.context_length or CONTEXT_LEN
        data["cuda_graph_max_bs_decode"] = data["cuda_graph_max_bs_prefill"] = None
        if self.speculative:
            data["speculative_num_steps"] = self.num_steps
            data["speculative_eagle_topk"] = self.speculative_eagle_topk or 1
            data["speculative_num_draft_tokens"] = self.num_draft_tokens
        return data


# Real SGLang flags the sim accepts and ignores: (flags, takes a value).
NO_EFFECT = (
    (("--disable-radix-cache",), False), (("--disable-custom-all-reduce",), False),
    (("--num-continuous-decode-steps",), True), (("--cuda-graph-max-bs",), True), (("--cuda-graph-bs",), True),
    # SGLang 0.5.23's per-phase names (srt/arg_groups/fields/exec_.py:629-645); the old ones stay for older plans
    (("--cuda-graph-max-bs-decode",), True), (("--cuda-graph-max-bs-prefill",), True),
    (("--cuda-graph-bs-decode",), True), (("--cuda-graph-bs-prefill",), True),
    (("--max-running-requests",), True), (("--chunked-prefill-size",), True), (("--max-total-tokens",), True),
    (("--log-level",), True), (("--attention-backend",), True),
    (("--kv-cache-dtype",), True), (("--dtype",), True), (("--quantization",), True),
    (("--speculative-token-map",), True), (("--speculative-draft-load-format",), True),
    (("--speculative-attention-mode",), True), (("--enable-torch-compile",), False),
    (("--dp-size", "--data-parallel-size", "--dp"), True), (("--ep-size", "--expert-parallel-size", "--ep"), True),
    (("--reasoning-parser",), True), (("--tool-call-parser",), True), (("--chat-template",), True),
    (("--watchdog-timeout",), True), (("--stream-interval",), True), (("--disable-overlap-schedule",), False),
    (("--enable-dp-attention",), False), (("--page-size",), True), (("--random-seed",), True),
    (("--base-gpu-id",), True), (("--log-requests",), False), (("--api-key",), True),
)


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        raise ValueError(message)


def draft_config(path: str) -> dict | None:
    """The drafter's config.json (a folder or the file), or None when it is not on this machine."""
    p = Path(path)
    config = p / "config.json" if p.is_dir() else p
    try:
        data = json.loads(config.read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


# hf_transformers_utils.get_context_length: the first of these keys, times rope_scaling.factor unless
# original_max_position_embeddings is there or the type is llama3 (docs/upstream.md "Simulated node").
CONTEXT_KEYS = ("max_sequence_length", "seq_length", "max_seq_len", "model_max_length", "max_position_embeddings")
TARGET_CONTEXT = 262144  # Kimi-K2.5's text_config.max_position_embeddings


def derived_context_length(config: dict) -> int | None:
    text = config.get("text_config") if isinstance(config.get("text_config"), dict) else config
    rope = text.get("rope_scaling") or {}
    factor = 1.0
    if isinstance(rope, dict) and "original_max_position_embeddings" not in rope and \
            rope.get("rope_type", rope.get("type")) != "llama3":
        factor = float(rope.get("factor", 1.0) or 1.0)
    for key in CONTEXT_KEYS:
        if isinstance(text.get(key), int):
            return int(text[key] * factor)
    return None


def target_context_length(cfg: ServerConfig) -> int:
    """--context-length, else the target's own config when it is on this machine, else K2.5's."""
    if cfg.context_length:
        return cfg.context_length
    config = draft_config(cfg.model_path)
    return (derived_context_length(config) if config else None) or TARGET_CONTEXT


def draft_context_error(cfg: ServerConfig, allow_longer: bool) -> tuple[str | None, list[str]]:
    """model_config.ModelConfig._derive_context_length for the draft model (is_draft_model: the target's
    context_len is passed in): the ValueError SGLang raises, or the warnings it logs when allowed."""
    config = draft_config(cfg.speculative_draft_model_path) if cfg.speculative_draft_model_path else None
    derived = derived_context_length(config) if config else None
    target = target_context_length(cfg)
    if derived is None or target <= derived:
        return None, []
    msg = (f"Warning: Target model's context_length ({target}) is greater than the derived context_length "
           f"({derived}). This may lead to incorrect model outputs or CUDA errors. Note that the derived "
           "context_length may differ from max_position_embeddings in the model's config.")
    if allow_longer:
        return None, [msg, f"Overriding the draft model's max_position_embeddings to {target}."]
    return f"{msg} To allow overriding this maximum, set the env var SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1", []


def draft_class(cfg: ServerConfig) -> str:
    """The class SGLang builds for the drafter, as its "Load weight end. type=…" line names it: the config's
    first architecture (model_runner's `type(self.model).__name__`; EntryClass of models/llama_eagle3.py or,
    for an MLA drafter, models/kimi_k25_eagle3.py in 0.5.23)."""
    config = draft_config(cfg.speculative_draft_model_path) if cfg.speculative_draft_model_path else None
    archs = (config or {}).get("architectures") or ["LlamaForCausalLMEagle3"]
    return str(archs[0])


def is_eagle3_config(config: dict) -> bool:
    archs = config.get("architectures") or []
    return any("eagle3" in str(a).lower() for a in archs) or isinstance(config.get("eagle_config"), dict)


def parse_server_args(argv: list[str]) -> ServerConfig:
    """Flags as SGLang spells them (aliases, abbreviations); ValueError for an unknown or bad one."""
    if argv[:2] == ["-m", "sglang.launch_server"]:  # `with.python` put the sim in front of the real module
        argv = argv[2:]
    ap = _Parser(add_help=False, exit_on_error=False)
    ap.add_argument("--model-path", "--model")
    ap.add_argument("--tokenizer-path")
    ap.add_argument("--served-model-name")
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=30000)
    ap.add_argument("--tp-size", "--tensor-parallel-size", "--tp", type=int, default=1)
    ap.add_argument("--speculative-algorithm")
    ap.add_argument("--speculative-draft-model-path", "--speculative-draft-model")
    ap.add_argument("--speculative-num-steps", type=int)
    ap.add_argument("--speculative-eagle-topk", type=int)
    ap.add_argument("--speculative-num-draft-tokens", type=int)
    ap.add_argument("--decode-log-interval", type=int, default=40)
    ap.add_argument("--mem-fraction-static", type=float)
    ap.add_argument("--context-length", type=int)
    ap.add_argument("--disable-cuda-graph", action="store_true")  # deprecated in 0.5.23 (server_args.py:408)
    ap.add_argument("--cuda-graph-backend-decode", choices=("full", "breakable", "disabled"))
    ap.add_argument("--cuda-graph-backend-prefill", choices=("full", "breakable", "disabled"))
    ap.add_argument("--trust-remote-code", action="store_true")
    ap.add_argument("--skip-server-warmup", action="store_true")
    ap.add_argument("--nnodes", type=int, default=1)
    ap.add_argument("--node-rank", type=int, default=0)
    ap.add_argument("--dist-init-addr", "--nccl-init-addr")
    ap.add_argument("--enable-metrics", action="store_true")
    ap.add_argument("--enable-metrics-for-all-schedulers", action="store_true")
    ignored = ap.add_argument_group("no effect in the sim")
    for flags, takes_value in NO_EFFECT:
        dest = "ignored_" + flags[0].lstrip("-").replace("-", "_")
        if takes_value:
            ignored.add_argument(*flags, dest=dest, nargs="+" if flags[0].startswith("--cuda-graph-bs") else None)
        else:
            ignored.add_argument(*flags, dest=dest, action="store_true")
    try:
        ns, rest = ap.parse_known_args(argv)
    except argparse.ArgumentError as exc:
        raise ValueError(str(exc)) from None
    if rest:
        raise ValueError(f"unrecognized arguments: {' '.join(rest)}")
    if ns.tp_size < 1:
        raise ValueError(f"--tp-size must be >= 1, got {ns.tp_size}")
    multinode_check(ns.nnodes, ns.node_rank, ns.dist_init_addr, ns.tp_size)
    if ns.speculative_algorithm and ns.speculative_num_steps is None and (
            ns.speculative_eagle_topk is not None or ns.speculative_num_draft_tokens is not None):
        # server_args.py: `assert self.speculative_eagle_topk is None and self.speculative_num_draft_tokens is None`
        raise ValueError("AssertionError: --speculative-eagle-topk / --speculative-num-draft-tokens need "
                         "--speculative-num-steps (SGLang auto-chooses all three or none)")
    values = {k: v for k, v in vars(ns).items() if v is not None and not k.startswith("ignored_")}
    given = [f for f in argv if f.startswith("--")]
    return ServerConfig(**values, ignored=[f for f in given if _is_ignored(ap, f)])


def multinode_check(nnodes: int, node_rank: int, addr: str | None, tp_size: int) -> None:
    if nnodes < 1 or not 0 <= node_rank < nnodes:
        raise ValueError(f"--node-rank {node_rank} is not in 0..{nnodes - 1} (--nnodes {nnodes})")
    if nnodes > 1 and not addr:
        raise ValueError("--dist-init-addr is required with --nnodes > 1 (rank 0's HOST:PORT)")
    if tp_size % nnodes:
        raise ValueError(f"--tp-size {tp_size} does not divide over --nnodes {nnodes}")


def split_addr(addr: str) -> tuple[str, int]:
    """`HOST:PORT` or `[V6]:PORT` → (host, port); ValueError otherwise."""
    host, sep, port = addr.rpartition(":")
    if not sep or not port.isdigit():
        raise ValueError(f"--dist-init-addr {addr!r} is not HOST:PORT")
    return host.strip("[]"), int(port)


def _is_ignored(ap: argparse.ArgumentParser, flag: str) -> bool:
    name = flag.split("=", 1)[0]
    for action in ap._actions:
        if action.dest.startswith("ignored_") and any(o.startswith(name) for o in action.option_strings):
            return True
    return False


def startup_seconds() -> float:
    """Total simulated startup time (EAGLE_SIM_STARTUP_S, default 3 s; tests use ~1 s)."""
    try:
        return max(0.0, float(os.environ.get("EAGLE_SIM_STARTUP_S", "3")))
    except ValueError:
        return 3.0


def visible_devices(tp_size: int) -> list[int]:
    """The physical GPU index behind each TP rank (CUDA_VISIBLE_DEVICES honoured, as CUDA does)."""
    raw = os.environ.get("CUDA_VISIBLE_DEVICES", "").strip()
    if raw:
        devs = [int(x) for x in raw.split(",") if x.strip().isdigit()]
    else:
        devs = list(range(tp_size))
    return devs
