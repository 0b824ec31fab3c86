"""The simulated server's view of `sglang.launch_server` flags: the ones it uses, the rest ignored."""

from __future__ import annotations

import argparse
import os
from dataclasses import asdict, dataclass, field

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
    num_continuous_decode_steps: int = 1
    decode_log_interval: int = 40
    mem_fraction_static: float | None = None
    context_length: int | None = None
    disable_cuda_graph: bool = False
    disable_custom_all_reduce: bool = False
    trust_remote_code: bool = False
    skip_server_warmup: bool = False
    ignored: list[str] = field(default_factory=list)

    @property
    def speculative(self) -> bool:
        return bool(self.speculative_algorithm)

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
        if self.speculative:
            data["speculative_num_steps"] = self.num_steps
            data["speculative_eagle_topk"] = self.speculative_eagle_topk or 1
            data["speculative_num_draft_tokens"] = self.num_draft_tokens
        return data


def parse_server_args(argv: list[str]) -> ServerConfig:
    """Flags as SGLang spells them (with its aliases); anything else is kept in `ignored`."""
    ap = argparse.ArgumentParser(add_help=False, allow_abbrev=False, exit_on_error=False)
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
    ap.add_argument("--num-continuous-decode-steps", type=int, default=1)
    ap.add_argument("--decode-log-interval", type=int, default=40)
    ap.add_argument("--mem-fraction-static", type=float)
    ap.add_argument("--context-length", type=int)
    ap.add_argument("--disable-cuda-graph", action="store_true")
    ap.add_argument("--disable-custom-all-reduce", action="store_true")
    ap.add_argument("--trust-remote-code", action="store_true")
    ap.add_argument("--skip-server-warmup", action="store_true")
    try:
        ns, rest = ap.parse_known_args(argv)
    except argparse.ArgumentError as exc:
        raise ValueError(str(exc)) from None
    if ns.tp_size < 1:
        raise ValueError(f"--tp-size must be >= 1, got {ns.tp_size}")
    if ns.num_continuous_decode_steps < 1:
        raise ValueError("--num-continuous-decode-steps must be >= 1")
    values = {k: v for k, v in vars(ns).items() if v is not None}
    return ServerConfig(**values, ignored=rest)


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
