"""A small httpx client for a running SGLang server (or the simulated one): the endpoints the console reads."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from eagle_console import httpnet
from eagle_console._httpx import httpx


class ServerError(Exception):
    """The server could not be reached, or answered something that is not SGLang's shape."""


@dataclass(frozen=True)
class StreamChunk:
    t: float  # time.monotonic() when the chunk arrived
    data: dict[str, Any]

    @property
    def completion_tokens(self) -> int:
        return int((self.data.get("meta_info") or {}).get("completion_tokens", 0))

    @property
    def meta(self) -> dict[str, Any]:
        return self.data.get("meta_info") or {}


def accept_length_from_info(info: dict[str, Any]) -> float | None:
    """Server-lifetime average accept length: `internal_states[0]` first, then the top level (old servers)."""
    states = info.get("internal_states")
    if isinstance(states, list) and states and isinstance(states[0], dict):
        value = states[0].get("avg_spec_accept_length")
        if isinstance(value, (int, float)):
            return float(value)
    value = info.get("avg_spec_accept_length")
    return float(value) if isinstance(value, (int, float)) else None


# SGLang 0.5.23 benchmark/serving.py:1011 `_DEFAULT_SGLANG_FLUSH_CACHE_TIMEOUT = 60.0`, sent as
# `params={"timeout": flush_cache_timeout}` (flush_server_cache, :1014-1032).
FLUSH_TIMEOUT_S = 60.0


class SglangClient:
    def __init__(self, base_url: str, timeout: float = 30.0) -> None:
        self.base_url = base_url.rstrip("/")
        for suffix in ("/health", "/generate"):  # accept a health/generate URL as the server's
            if self.base_url.endswith(suffix):
                self.base_url = self.base_url[: -len(suffix)]
        self.http = httpnet.client(self.base_url, timeout)  # no proxy for loopback, no redirects

    def close(self) -> None:
        self.http.close()

    def __enter__(self) -> SglangClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _get_json(self, path: str) -> dict[str, Any]:
        try:
            r = self.http.get(path)
        except httpx.HTTPError as exc:
            raise ServerError(f"{self.base_url}{path}: {type(exc).__name__}: {exc}") from None
        if r.status_code != 200:
            raise ServerError(f"{self.base_url}{path}: HTTP {r.status_code}")
        try:
            data = r.json()
        except ValueError:
            raise ServerError(f"{self.base_url}{path}: not JSON") from None
        if not isinstance(data, dict):
            raise ServerError(f"{self.base_url}{path}: expected a JSON object")
        return data

    def health(self) -> int | None:
        """The /health status code (200 ready, 503 starting), or None when nothing answers."""
        try:
            return self.http.get("/health").status_code
        except httpx.HTTPError:
            return None

    def server_info(self) -> dict[str, Any]:
        return self.server_info_from()[1]

    def server_info_from(self) -> tuple[str, dict[str, Any]]:
        """(endpoint, info): `/server_info` (new servers), else the deprecated `/get_server_info` (old ones)."""
        try:
            r = self.http.get("/server_info")
        except httpx.HTTPError as exc:
            raise ServerError(f"{self.base_url}/server_info: {type(exc).__name__}: {exc}") from None
        if r.status_code in (404, 405):  # an old server: only the deprecated name exists
            return "/get_server_info", self._get_json("/get_server_info")
        return "/server_info", self._get_json("/server_info")

    def accept_length(self) -> float | None:
        return accept_length_from_info(self.server_info())

    def model_info(self) -> dict[str, Any]:
        return self._get_json("/get_model_info")

    def flush_cache(self, timeout_s: float = FLUSH_TIMEOUT_S) -> bool:
        """POST /flush_cache?timeout=S as bench_serving does: True when flushed. With a timeout the server waits
        for its running requests (the warm-up's may still be held) instead of answering 400 at once."""
        try:
            r = self.http.post("/flush_cache", params={"timeout": timeout_s}, timeout=timeout_s + 30.0)
            return r.status_code == 200
        except httpx.HTTPError:
            return False

    def stream_chat(self, text: str, max_new_tokens: int, model: str = "default",
                    ignore_eos: bool = True) -> Iterator[StreamChunk]:
        """A streamed /v1/chat/completions (the server applies the model's chat template).

        Each chunk is re-shaped as /generate's: `meta_info.completion_tokens` from the per-chunk usage that
        `stream_options.continuous_usage_stats` asks for, so the same ITL arithmetic applies.
        """
        body = {"model": model, "messages": [{"role": "user", "content": text}], "max_tokens": max_new_tokens,
                "temperature": 0.0, "stream": True, "ignore_eos": ignore_eos,
                "stream_options": {"include_usage": True, "continuous_usage_stats": True}}
        for data in self._sse("/v1/chat/completions", body):
            usage = data.get("usage") or {}
            choices = data.get("choices") or [{}]
            content = (choices[0].get("delta") or {}).get("content") if choices else None
            meta = {"completion_tokens": usage.get("completion_tokens", 0)} if usage else {}
            yield StreamChunk(time.monotonic(), {"text": content or "", "meta_info": meta})

    def generate(self, text: str, max_new_tokens: int, ignore_eos: bool = True,
                 temperature: float = 0.0) -> dict[str, Any]:
        """A plain (non-streamed) /generate."""
        body = self._body(text, max_new_tokens, ignore_eos, temperature, stream=False)
        try:
            r = self.http.post("/generate", json=body)
        except httpx.HTTPError as exc:
            raise ServerError(f"{self.base_url}/generate: {type(exc).__name__}: {exc}") from None
        if r.status_code != 200:
            raise ServerError(f"{self.base_url}/generate: HTTP {r.status_code}: {r.text[:200]}")
        return r.json()

    def stream_generate(self, text: str, max_new_tokens: int, ignore_eos: bool = True,
                        temperature: float = 0.0) -> Iterator[StreamChunk]:
        """A streamed /generate: one StreamChunk per `data: {...}` event, until `data: [DONE]`."""
        body = self._body(text, max_new_tokens, ignore_eos, temperature, stream=True)
        for data in self._sse("/generate", body):
            yield StreamChunk(time.monotonic(), data)

    def _sse(self, path: str, body: dict[str, Any]) -> Iterator[dict[str, Any]]:
        """The `data: {...}` events of a streamed POST, until `data: [DONE]`; ServerError on an error event."""
        try:
            with self.http.stream("POST", path, json=body) as r:
                if r.status_code != 200:
                    r.read()
                    raise ServerError(f"{self.base_url}{path}: HTTP {r.status_code}: {r.text[:200]}")
                for line in r.iter_lines():
                    if not line.startswith("data:"):
                        continue
                    payload = line[5:].strip()
                    if payload == "[DONE]":
                        return
                    try:
                        data = json.loads(payload)
                    except ValueError:
                        raise ServerError(f"{self.base_url}{path}: bad stream event {payload[:80]!r}") from None
                    if isinstance(data, dict) and "error" in data:
                        raise ServerError(f"{self.base_url}{path}: {data['error']}")
                    if isinstance(data, dict):
                        yield data
        except httpx.HTTPError as exc:
            raise ServerError(f"{self.base_url}{path}: {type(exc).__name__}: {exc}") from None

    @staticmethod
    def _body(text: str, max_new_tokens: int, ignore_eos: bool, temperature: float, stream: bool) -> dict:
        return {"text": text, "stream": stream,
                "sampling_params": {"max_new_tokens": max_new_tokens, "temperature": temperature,
                                    "ignore_eos": ignore_eos}}
