"""Single-stream streaming benchmark against an SGLang server: tok/s, decode tok/s, TTFT, ITL, accept length.

Requests go one after another (concurrency 1, the figure a single user sees), each streamed with
`ignore_eos` so every request makes `max_new_tokens`. One warmup request is sent first and not counted,
then `/flush_cache`: the server's accept length is cumulative since start (or the last flush).
Definitions (docs/upstream.md, "Benchmark"; reported under `definitions` in `--json`):
- tok_s: end-to-end, output tokens of all requests / wall time of all requests (prefill included).
- decode_tok_s: (n - 1) / (t_last - t_first) per request, summed over requests: decode speed, the
  figure the 82 tok/s baseline is (and the one `speedup` compares).
- itl_ms: as `sglang.bench_serving` computes it: a chunk's gap divided by the tokens it carries, once per
  token (with speculation one chunk carries several tokens). Mean ITL = 1000 / decode tok/s.
- tpot_ms: bench_serving's (latency - ttft) / (n - 1).
- accept_length: mean over requests of completion_tokens / spec_verify_ct; when the server does not
  report spec_verify_ct (chat requests, old servers), the server's average since the flush.
A failed request is counted in `failed` with its error, and the run goes on.
"""

from __future__ import annotations

import json
import statistics
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from eagle_console.sglang.client import ServerError, SglangClient, accept_length_from_info

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
    itls_ms: list[float]  # one per token after the first: chunk gap / tokens in the chunk
    accept_length: float | None  # completion_tokens / spec_verify_ct
    decode_s: float = 0.0  # t_last - t_first: first token chunk to last token chunk
    error: str | None = None

    @property
    def decode_tok_s(self) -> float | None:
        return (self.output_tokens - 1) / self.decode_s if self.output_tokens > 1 and self.decode_s > 0 else None

    @property
    def tpot_ms(self) -> float | None:
        if self.output_tokens < 2 or self.ttft_ms is None:
            return None
        return (self.duration_s * 1000 - self.ttft_ms) / (self.output_tokens - 1)


@dataclass
class BenchResult:
    requests: int
    output_tokens: int
    duration_s: float
    tok_s: float
    ttft_ms_median: float | None
    itl_ms_median: float | None
    accept_length: float | None
    decode_tok_s: float | None = None
    itl_ms_mean: float | None = None
    tpot_ms_median: float | None = None
    failed: int = 0
    errors: list[str] = field(default_factory=list)
    accept_length_server: float | None = None  # server average since the flush, after the run
    accept_length_requests: float | None = None  # mean of the per-request figures
    definitions: dict[str, Any] = field(default_factory=dict)
    per_request: list[dict[str, Any]] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        """The `bench --json` shape of cli.md, plus decode speed, failures, definitions and per-request rows."""
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


def measure_request(client: SglangClient, prompt: str, max_new_tokens: int, chat: bool = False) -> RequestStats:
    """One streamed request; a ServerError mid-stream comes back as `error` with what arrived until then."""
    start = time.monotonic()
    first: float | None = None
    last_t: float | None = None
    last_tokens = 0
    itls: list[float] = []
    meta: dict[str, Any] = {}
    error = None
    stream = client.stream_chat(prompt, max_new_tokens) if chat else client.stream_generate(prompt, max_new_tokens)
    try:
        for chunk in stream:
            tokens = chunk.completion_tokens
            meta = chunk.meta or meta
            if tokens > last_tokens:
                if first is None:
                    first = chunk.t
                elif last_t is not None:  # bench_serving: the gap is shared by the tokens the chunk carries
                    gap_ms = (chunk.t - last_t) * 1000
                    itls.extend([gap_ms / (tokens - last_tokens)] * (tokens - last_tokens))
                last_t, last_tokens = chunk.t, tokens
    except ServerError as exc:
        error = str(exc)
    end = time.monotonic()
    verify = meta.get("spec_verify_ct")
    accept = last_tokens / verify if isinstance(verify, (int, float)) and verify > 0 else None
    return RequestStats(last_tokens, end - start, (first - start) * 1000 if first is not None else None,
                        itls, accept, (last_t - first) if first is not None and last_t is not None else 0.0, error)


def _definitions(chat: bool, flushed: bool, info_endpoint: str | None, accept_source: str | None) -> dict[str, Any]:
    return {
        "tok_s": "end-to-end: output tokens / request wall time, summed over requests",
        "decode_tok_s": "decode: sum(n - 1) / sum(t_last - t_first): first to last token chunk of each request "
                        "(the figure a decode-speed baseline such as 82 tok/s is)",
        "itl_ms": "bench_serving: chunk gap / tokens in the chunk, once per token",
        "tpot_ms": "bench_serving: (latency - ttft) / (n - 1)",
        "accept_length": accept_source,
        "prompt_format": "chat template (/v1/chat/completions)" if chat else "raw prompt (/generate)",
        "cache_flushed": flushed,
        "server_info_endpoint": info_endpoint,
    }


def run_bench(url: str, requests: int = 10, max_new_tokens: int = 256, prompts: list[str] | None = None,
              progress: Progress | None = None, warmup: bool = True, timeout: float = 300.0,
              chat: bool = False) -> BenchResult:
    """Run the benchmark; ServerError when the server cannot be used at all (failed requests are counted)."""
    if requests < 1 or max_new_tokens < 1:
        raise ValueError("requests and max_new_tokens must be >= 1")
    prompts = prompts or list(DEFAULT_PROMPTS)
    with SglangClient(url, timeout=timeout) as client:
        status = client.health()
        if status != 200:
            raise ServerError(f"{client.base_url}/health: " + ("no answer" if status is None else f"HTTP {status}")
                              + " (is the server up and ready?)")
        if warmup:
            measure_request(client, prompts[0], min(16, max_new_tokens), chat)
        flushed = client.flush_cache()  # the server's accept length then covers this run only
        stats: list[RequestStats] = []
        for i in range(requests):
            s = measure_request(client, prompts[i % len(prompts)], max_new_tokens, chat)
            stats.append(s)
            if progress:
                progress(i + 1, requests, s)
        try:
            endpoint, info = client.server_info_from()
            server_accept = accept_length_from_info(info)
        except ServerError:
            endpoint, server_accept = None, None
    return summarize(stats, server_accept, chat, flushed, endpoint)


def summarize(stats: list[RequestStats], server_accept: float | None, chat: bool = False, flushed: bool = False,
              endpoint: str | None = None) -> BenchResult:
    ok = [s for s in stats if s.error is None]
    tokens = sum(s.output_tokens for s in ok)
    duration = sum(s.duration_s for s in ok)
    decode_tokens = sum(s.output_tokens - 1 for s in ok if s.decode_tok_s is not None)
    decode_s = sum(s.decode_s for s in ok if s.decode_tok_s is not None)
    per_request = [s.accept_length for s in ok if s.accept_length is not None]
    req_accept = round(statistics.fmean(per_request), 3) if per_request else None
    server = round(server_accept, 3) if server_accept is not None else None
    source = ("requests: completion_tokens / spec_verify_ct" if req_accept is not None else
              ("server: avg_spec_accept_length since /flush_cache" if flushed else
               "server: avg_spec_accept_length since server start (flush refused)") if server is not None else None)
    itls = [x for s in ok for x in s.itls_ms]
    return BenchResult(
        requests=len(ok), output_tokens=tokens, duration_s=round(duration, 3),
        tok_s=round(tokens / duration, 2) if duration > 0 else 0.0,
        ttft_ms_median=_median([s.ttft_ms for s in ok if s.ttft_ms is not None]),
        itl_ms_median=_median(itls),
        accept_length=req_accept if req_accept is not None else server,
        decode_tok_s=round(decode_tokens / decode_s, 2) if decode_s > 0 else None,
        itl_ms_mean=round(statistics.fmean(itls), 2) if itls else None,
        tpot_ms_median=_median([t for s in ok if (t := s.tpot_ms) is not None]),
        failed=len(stats) - len(ok), errors=[s.error for s in stats if s.error is not None],
        accept_length_server=server, accept_length_requests=req_accept,
        definitions=_definitions(chat, flushed, endpoint, source),
        per_request=[{"output_tokens": s.output_tokens, "duration_s": round(s.duration_s, 3),
                      "ttft_ms": round(s.ttft_ms, 2) if s.ttft_ms is not None else None,
                      "decode_tok_s": round(d, 2) if (d := s.decode_tok_s) is not None else None,
                      "accept_length": round(s.accept_length, 3) if s.accept_length is not None else None,
                      "error": s.error}
                     for s in stats],
    )
