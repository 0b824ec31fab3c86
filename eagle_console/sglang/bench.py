"""Single-stream streaming benchmark against an SGLang server: output tok/s, TTFT, ITL, accept length.

Requests go one after another (concurrency 1, the figure a single user sees), each streamed with
`ignore_eos` so every request makes `max_new_tokens`. One warmup request is sent first and not counted.
- tok_s: output tokens of all requests / wall time of all requests.
- ttft_ms_median: send → first chunk with a token; itl_ms_median: time between successive chunks (as
  `sglang.bench_serving` measures it: with speculation one chunk can carry several tokens).
- accept_length: mean over requests of completion_tokens / spec_verify_ct (this run only); when the
  server does not report spec_verify_ct, the server-lifetime `avg_spec_accept_length` instead.
"""

from __future__ import annotations

import json
import statistics
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from eagle_console.sglang.client import ServerError, SglangClient

DEFAULT_PROMPTS = (
    "Explain how speculative decoding with a draft model speeds up text generation.",
    "Write a Python function that merges two sorted lists into one sorted list.",
    "Summarise the causes and consequences of the 1929 stock market crash.",
    "What is the derivative of x^3 * sin(x)? Show the steps.",
    "Describe a PCIe switch and why GPUs behind the same switch talk faster.",
)


@dataclass
class RequestStats:
    output_tokens: int
    duration_s: float
    ttft_ms: float | None
    itls_ms: list[float]
    accept_length: float | None  # completion_tokens / spec_verify_ct


@dataclass
class BenchResult:
    requests: int
    output_tokens: int
    duration_s: float
    tok_s: float
    ttft_ms_median: float | None
    itl_ms_median: float | None
    accept_length: float | None
    accept_length_server: float | None = None  # server-lifetime average, after the run
    accept_length_requests: float | None = None  # mean of the per-request figures
    per_request: list[dict[str, Any]] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        """The `bench --json` shape of cli.md (plus the two accept-length sources and per-request rows)."""
        return asdict(self)


Progress = Callable[[int, int, RequestStats], None]


def load_prompts(prompt: str | None = None, prompts_file: str | Path | None = None) -> list[str]:
    """`prompt`, or the lines of `prompts_file` (plain text, or JSONL with "prompt"/"text"), or the defaults."""
    if prompt:
        return [prompt]
    if prompts_file:
        path = Path(prompts_file)
        try:
            lines = path.read_text().splitlines()
        except OSError as exc:
            raise ValueError(f"{path}: {exc.strerror or exc}") from None
        out = []
        for n, line in enumerate(lines, 1):
            line = line.strip()
            if not line:
                continue
            if line.startswith("{"):
                try:
                    obj = json.loads(line)
                except json.JSONDecodeError as exc:
                    raise ValueError(f"{path}:{n}:{exc.colno}: invalid JSON: {exc.msg}") from None
                text = obj.get("prompt") or obj.get("text") if isinstance(obj, dict) else None
                if not isinstance(text, str):
                    raise ValueError(f"{path}:{n}:1: a JSON line needs a \"prompt\" or \"text\" string")
                out.append(text)
            else:
                out.append(line)
        if not out:
            raise ValueError(f"{path}: no prompts in the file")
        return out
    return list(DEFAULT_PROMPTS)


def _median(values: list[float]) -> float | None:
    return round(statistics.median(values), 2) if values else None


def measure_request(client: SglangClient, prompt: str, max_new_tokens: int) -> RequestStats:
    start = time.monotonic()
    first: float | None = None
    last_t: float | None = None
    last_tokens = 0
    itls: list[float] = []
    meta: dict[str, Any] = {}
    for chunk in client.stream_generate(prompt, max_new_tokens):
        tokens = chunk.completion_tokens
        meta = chunk.meta or meta
        if tokens > last_tokens:
            if first is None:
                first = chunk.t
            elif last_t is not None:
                itls.append((chunk.t - last_t) * 1000)
            last_t, last_tokens = chunk.t, tokens
    end = time.monotonic()
    verify = meta.get("spec_verify_ct")
    accept = last_tokens / verify if isinstance(verify, (int, float)) and verify > 0 else None
    return RequestStats(last_tokens, end - start, (first - start) * 1000 if first is not None else None,
                        itls, accept)


def run_bench(url: str, requests: int = 10, max_new_tokens: int = 256, prompts: list[str] | None = None,
              progress: Progress | None = None, warmup: bool = True, timeout: float = 300.0) -> BenchResult:
    """Run the benchmark; ServerError when the server cannot be used."""
    if requests < 1 or max_new_tokens < 1:
        raise ValueError("requests and max_new_tokens must be >= 1")
    prompts = prompts or list(DEFAULT_PROMPTS)
    with SglangClient(url, timeout=timeout) as client:
        status = client.health()
        if status != 200:
            raise ServerError(f"{client.base_url}/health: " + ("no answer" if status is None else f"HTTP {status}")
                              + " (is the server up and ready?)")
        if warmup:
            measure_request(client, prompts[0], min(16, max_new_tokens))
        stats: list[RequestStats] = []
        for i in range(requests):
            s = measure_request(client, prompts[i % len(prompts)], max_new_tokens)
            stats.append(s)
            if progress:
                progress(i + 1, requests, s)
        try:
            server_accept = client.accept_length()
        except ServerError:
            server_accept = None
    tokens = sum(s.output_tokens for s in stats)
    duration = sum(s.duration_s for s in stats)
    per_request = [s.accept_length for s in stats if s.accept_length is not None]
    req_accept = round(statistics.fmean(per_request), 3) if per_request else None
    return BenchResult(
        requests=len(stats), output_tokens=tokens, duration_s=round(duration, 3),
        tok_s=round(tokens / duration, 2) if duration > 0 else 0.0,
        ttft_ms_median=_median([s.ttft_ms for s in stats if s.ttft_ms is not None]),
        itl_ms_median=_median([x for s in stats for x in s.itls_ms]),
        accept_length=req_accept if req_accept is not None else
        (round(server_accept, 3) if server_accept is not None else None),
        accept_length_server=round(server_accept, 3) if server_accept is not None else None,
        accept_length_requests=req_accept,
        per_request=[{"output_tokens": s.output_tokens, "duration_s": round(s.duration_s, 3),
                      "ttft_ms": round(s.ttft_ms, 2) if s.ttft_ms is not None else None,
                      "accept_length": round(s.accept_length, 3) if s.accept_length is not None else None}
                     for s in stats],
    )
