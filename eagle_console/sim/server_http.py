"""HTTP side of the simulated SGLang server: endpoints in SGLang's shapes and paced generation.

Pacing: without speculation one forward step makes one token in ~12.2 ms (≈82 tok/s single stream, the
plan's baseline). With EAGLE/EAGLE3 a step (draft `num_steps` tokens, verify) takes 20 ms + 3.6 ms per
draft step and yields 1 + the run of accepted draft tokens, each accepted with p = 0.85: accept length
≈3.2 and ≈100 tok/s at num_steps 3. Noise ±5 % per step. A stream sends one chunk per step, so with
speculation a chunk carries several tokens, as real EAGLE-3 decoding does. `--speculative-algorithm
EAGLE` with an EAGLE-3 drafter accepts nothing (accept length 1.0), as SGLang does (sglang PR #21272).
`--num-continuous-decode-steps` changes nothing: no SGLang code reads it. EAGLE_SIM_ACCEPT=none plays a
drafter that loads and is never accepted (the demo's silent drafter: nothing in the log says so).
With `--enable-metrics`, `/metrics` serves SGLang's Prometheus series (server_metrics.py); without it, 404.
"""

from __future__ import annotations

import json
import random
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from eagle_console.sim import server_logs as logs
from eagle_console.sim.server_config import ServerConfig

BASE_STEP_S = 0.0122
SPEC_STEP_S = 0.020
DRAFT_STEP_S = 0.0036
ACCEPT_P = 0.85
WORDS = ("the", "model", "drafts", "tokens", "and", "verifies", "them", "in", "one", "pass", "of", "target",
         "layers", "so", "throughput", "rises", "when", "acceptance", "is", "high", "on", "this", "node")
FLUSH_TEXT = ("Cache flushed.\nPlease check backend logs for more details. (When there are running or "
              "waiting requests, the operation will not be performed.)\n")


class SimEngine:
    """Server-wide counters and the pacing of each request's forward steps."""

    def __init__(self, cfg: ServerConfig, sim_dir: Path | None, gpus: list[int]) -> None:
        self.cfg = cfg
        self.sim_dir = sim_dir
        self.gpus = gpus
        self.ready = False
        self.lock = threading.Lock()
        self.running = 0
        self.forward_ct = 0  # speculative verify steps, server lifetime
        self.accepted = 0  # tokens produced by those steps, bonus token included
        self.last_gen_throughput = 0.0
        self.used_tokens = 0
        self._win_steps = 0
        self._win_tokens = 0
        self._win_accept = 0
        self._win_t0 = time.monotonic()
        self._decode_ct = 0  # forward_ct_decode: the log cadence counts every decode step, idle or not
        self.rng = random.Random()
        self.accepts_drafts = cfg.drafts_accepted()
        self.metrics = None
        if cfg.enable_metrics:
            from eagle_console.sim.server_metrics import SimMetrics

            ranks = list(cfg.local_tp_ranks) if cfg.enable_metrics_for_all_schedulers else [0]
            self.metrics = SimMetrics(cfg.model_name, ranks, cfg.num_steps if cfg.speculative else 0,
                                      cfg.num_draft_tokens if cfg.speculative else 0)

    # -- counters and logs -------------------------------------------------------------------------
    def _activity(self) -> None:
        if self.sim_dir is None:
            return
        from eagle_console.sim.gpustate import set_activity

        util = self.rng.uniform(93, 99) if self.running else 0.0
        try:
            set_activity(self.sim_dir, {g: util for g in self.gpus})
        except OSError:
            pass

    def begin(self, prompt_tokens: int) -> None:
        with self.lock:
            if self.running == 0:  # an idle gap is not decode time (the throughput window restarts)
                self._win_tokens = 0
                self._win_t0 = time.monotonic()
                # the accept counters are not reset here: SGLang 0.5.23 (metrics_reporter.py
                # report_decode_stats) zeroes spec_num_accept_tokens/spec_num_forward_ct only when it logs, so
                # a window spans every verify step since the last decode log, across idle gaps
            self.running += 1
            self.used_tokens += prompt_tokens
            usage = self.used_tokens / 75000
            logs.emit(logs.sglang_line(
                f"Prefill batch, #new-seq: 1, #new-token: {prompt_tokens}, #cached-token: 0, "
                f"#token: {self.used_tokens}, token usage: {usage:.2f}, #running-req: {self.running - 1}, "
                "#queue-req: 0, ", 0, self.cfg.tp_size))
            if self.metrics is not None:  # report_prefill_stats publishes the scheduler's gauges too
                self.metrics.scheduler(running=self.running, queued=0, tput=self.last_gen_throughput,
                                       used=self.used_tokens, usage=usage)
            self._activity()

    def end(self, tokens_in_use: int) -> None:
        with self.lock:
            self.running -= 1
            self.used_tokens = max(0, self.used_tokens - tokens_in_use)
            if self.metrics is not None and self.running == 0:  # _maybe_log_idle_metrics: idle at once, 0 tok/s
                self.metrics.scheduler(running=0, queued=0, tput=0.0, used=self.used_tokens,
                                       usage=self.used_tokens / 75000)
            self._activity()

    def step(self, tokens: int) -> None:
        with self.lock:
            self.used_tokens += tokens
            self._win_steps += 1
            self._win_tokens += tokens
            if self.cfg.speculative:
                self.forward_ct += 1
                self.accepted += tokens
                self._win_accept += tokens
            self._decode_ct += 1
            # metrics_reporter.py:934: a decode log every decode_log_interval steps of the server, not of a
            # request (a request shorter than the interval still gets its window logged)
            if self._decode_ct % self.cfg.decode_log_interval == 0:
                self._log_decode()

    def _log_decode(self) -> None:
        now = time.monotonic()
        tput = self._win_tokens / max(now - self._win_t0, 1e-6)
        self.last_gen_throughput = tput
        msg = f"Decode batch, #running-req: {self.running}, #token: {self.used_tokens}, " \
              f"token usage: {self.used_tokens / 75000:.2f}, "
        accept = rate = 0.0
        if self.cfg.speculative:
            # SGLang 0.5.23 (scheduler_components/metrics_reporter.py:970-983): accepted drafts over proposed
            # drafts, the bonus token excluded (before sglang PR #23530 the bonus token was counted)
            accept = self._win_accept / self._win_steps
            rate = (self._win_accept - self._win_steps) / (self._win_steps * max(self.cfg.num_draft_tokens - 1, 1))
            msg += f"accept len: {accept:.2f}, accept rate: {rate:.2f}, "
        if self.metrics is not None:
            self.metrics.scheduler(running=self.running, queued=0, tput=tput, used=self.used_tokens,
                                   usage=self.used_tokens / 75000, accept=accept, rate=rate)
        msg += f"cuda graph: {self.cfg.decode_graph}, gen throughput (token/s): {tput:.2f}, #queue-req: 0"
        logs.emit(logs.sglang_line(msg, 0, self.cfg.tp_size))
        self._win_steps = self._win_tokens = self._win_accept = 0
        self._win_t0 = now
        self._activity()

    def flush(self, timeout_s: float = 0.0) -> tuple[bool, str]:
        """/flush_cache as SGLang 0.5.23 answers it (http_server.py:1025-1040, scheduler_components/
        flush_wrapper.py): without a timeout, refused while requests run; with `?timeout=S`, deferred until
        the server is idle, refused when S pass first. A flush resets the average accept length's counters."""
        deadline = time.monotonic() + timeout_s
        while True:
            with self.lock:
                if not self.running:
                    self.forward_ct = self.accepted = 0
                    return True, FLUSH_TEXT
            if timeout_s <= 0.0:
                return False, FLUSH_TEXT
            if time.monotonic() >= deadline:
                return False, "Timed out waiting for idle state."
            time.sleep(0.01)

    def avg_accept_length(self) -> float | None:
        with self.lock:
            return self.accepted / self.forward_ct if self.cfg.speculative and self.forward_ct else None

    # -- pacing --------------------------------------------------------------------------------------
    def step_time(self) -> float:
        base = SPEC_STEP_S + DRAFT_STEP_S * self.cfg.num_steps if self.cfg.speculative else BASE_STEP_S
        return base * self.rng.uniform(0.95, 1.05)

    def tokens_per_step(self) -> int:
        if not self.cfg.speculative or not self.accepts_drafts:
            return 1
        n = 1
        while n <= self.cfg.num_steps and self.rng.random() < ACCEPT_P:
            n += 1
        return n

    def prefill_time(self, prompt_tokens: int) -> float:
        return 0.035 + 0.00008 * prompt_tokens


def _prompt_tokens(body: dict) -> int:
    ids = body.get("input_ids")
    if isinstance(ids, list) and ids and isinstance(ids[0], int):
        return len(ids)
    text = body.get("text") or ""
    if isinstance(text, list):
        text = text[0] if text else ""
    return max(1, int(len(str(text).split()) * 1.3))


def chat_as_generate(body: dict) -> dict:
    """An OpenAI chat request as the /generate body it amounts to (the chat template adds ~8 tokens)."""
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise ValueError("`messages` must be a non-empty list")
    text = " ".join(str(m.get("content", "")) for m in messages if isinstance(m, dict))
    return {"text": "<|im_user|>user<|im_middle|>" + text + "<|im_end|><|im_assistant|>assistant<|im_middle|>",
            "stream": bool(body.get("stream")),
            "sampling_params": {"max_new_tokens": body.get("max_tokens") or body.get("max_completion_tokens") or 128,
                                "temperature": body.get("temperature", 1.0),
                                "ignore_eos": bool(body.get("ignore_eos"))}}


def make_handler(engine: SimEngine, server_args: dict, version: str) -> type[BaseHTTPRequestHandler]:
    cfg = engine.cfg

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        server_version = "uvicorn"
        sys_version = ""

        def log_message(self, format: str, *args: Any) -> None:  # uvicorn's access log instead
            pass

        def _access(self, status: int) -> None:
            phrase = {200: "OK", 400: "Bad Request", 404: "Not Found", 503: "Service Unavailable"}.get(status, "")
            logs.emit(logs.uvicorn_line(f'{self.client_address[0]}:{self.client_address[1]} - '
                                        f'"{self.command} {self.path} HTTP/1.1" {status} {phrase}'))

        def _send(self, status: int, body: bytes = b"", ctype: str = "application/json") -> None:
            self.send_response(status)
            self.send_header("content-type", ctype)
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            if body:
                self.wfile.write(body)
            self._access(status)

        def _json(self, obj: Any, status: int = 200) -> None:
            self._send(status, json.dumps(obj).encode())

        def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
            path = self.path.split("?", 1)[0]
            if path in ("/health", "/health_generate"):
                self._send(200 if engine.ready else 503, b"", "text/plain")
            elif path == "/ping":
                self._send(200, b"", "text/plain")
            elif path in ("/get_model_info", "/model_info"):
                info = {"model_path": cfg.model_path, "tokenizer_path": cfg.tokenizer_path or cfg.model_path,
                        "is_generation": True, "preferred_sampling_params": None, "weight_version": "default"}
                if path == "/model_info":
                    info.update(has_image_understanding=True, has_audio_understanding=False,
                                model_type="kimi_k25", architectures=["KimiK25ForConditionalGeneration"])
                self._json(info)
            elif path == "/get_server_info" or (path == "/server_info" and cfg.has_server_info):
                self._json(self._server_info())
            elif path == "/v1/models":
                self._json({"object": "list", "data": [{
                    "id": cfg.model_name, "object": "model", "created": int(time.time()), "owned_by": "sglang",
                    "root": cfg.model_name, "max_model_len": server_args["context_length"]}]})
            elif path == "/flush_cache":
                self._flush()
            elif path == "/metrics" and engine.metrics is not None:  # only with --enable-metrics
                self._send(200, engine.metrics.exposition(), "text/plain; version=0.0.4; charset=utf-8")
            else:
                self._json({"detail": "Not Found"}, 404)

        def do_POST(self) -> None:  # noqa: N802
            path = self.path.split("?", 1)[0]
            if path == "/generate":
                self._generate()
            elif path == "/v1/chat/completions":
                self._generate(chat=True)
            elif path == "/flush_cache":
                self._flush()
            else:
                self._json({"detail": "Not Found"}, 404)

        do_PUT = do_POST  # noqa: N815

        def _flush(self) -> None:
            from urllib.parse import parse_qs, urlsplit

            raw = parse_qs(urlsplit(self.path).query).get("timeout", ["0"])[0]
            try:
                timeout_s = float(raw)
            except ValueError:
                timeout_s = -1.0
            if timeout_s < 0:  # FastAPI's Query(0.0, ge=0.0)
                self._json({"detail": [{"type": "greater_than_equal", "loc": ["query", "timeout"]}]}, 422)
                return
            ok, text = engine.flush(timeout_s)
            self._send(200 if ok else 400, text.encode(), "text/plain; charset=utf-8")

        def _server_info(self) -> dict:
            state = {**server_args, "last_gen_throughput": round(engine.last_gen_throughput, 2)}
            accept = engine.avg_accept_length()
            if accept is not None:
                state["avg_spec_accept_length"] = accept
            return {**server_args, "internal_states": [state], "version": version}

        def _generate(self, chat: bool = False) -> None:
            try:
                length = int(self.headers.get("content-length", "0"))
                body = json.loads(self.rfile.read(length) or b"{}")
                if not isinstance(body, dict):
                    raise ValueError("the body must be a JSON object")
                if chat:
                    body = chat_as_generate(body)
                params = body.get("sampling_params") or {}
                max_new = int(params.get("max_new_tokens", 128))
                if max_new < 0:
                    raise ValueError("max_new_tokens must be >= 0")
            except (ValueError, TypeError) as exc:
                self._json({"error": {"message": f"invalid request: {exc}"}}, 400)
                return
            if not engine.ready:
                self._json({"error": {"message": "The server is not ready yet."}}, 503)
                return
            stream = bool(body.get("stream"))
            prompt = _prompt_tokens(body)
            rid = body.get("rid") or uuid.uuid4().hex
            if stream:
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.send_header("transfer-encoding", "chunked")
                self.end_headers()
                self._access(200)
            self.chat_model = cfg.model_name if chat else None
            try:
                final = self._run(rid, prompt, max_new, stream)
            except (BrokenPipeError, ConnectionResetError):
                return
            if chat:
                final = self._as_chat(final, done=True)
            if stream:
                self._chunk(b"data: [DONE]\n\n")
                self.wfile.write(b"0\r\n\r\n")
                self.wfile.flush()
            else:
                self._json(final)

        def _event(self, out: dict, delta: str = "") -> None:
            if self.chat_model is not None:
                out = self._as_chat(out, out["meta_info"]["finish_reason"] is not None, delta)
            self._chunk(b"data: " + json.dumps(out).encode() + b"\n\n")

        def _as_chat(self, out: dict, done: bool, delta: str | None = None) -> dict:
            """A /generate output as an OpenAI chat chunk, with the usage continuous_usage_stats asks for."""
            meta = out["meta_info"]
            usage = {"prompt_tokens": meta["prompt_tokens"], "completion_tokens": meta["completion_tokens"],
                     "total_tokens": meta["prompt_tokens"] + meta["completion_tokens"]}
            if delta is None:  # not streamed: the whole message
                return {"id": meta["id"], "object": "chat.completion", "created": int(time.time()),
                        "model": self.chat_model, "usage": usage,
                        "choices": [{"index": 0, "message": {"role": "assistant", "content": out["text"]},
                                     "finish_reason": "length"}]}
            return {"id": meta["id"], "object": "chat.completion.chunk", "created": int(time.time()),
                    "model": self.chat_model, "usage": usage,
                    "choices": [{"index": 0, "delta": {"role": "assistant", "content": delta},
                                 "finish_reason": "length" if done else None}]}

        def _chunk(self, data: bytes) -> None:
            self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
            self.wfile.flush()

        def _run(self, rid: str, prompt: int, max_new: int, stream: bool) -> dict:
            t0 = time.monotonic()
            words: list[str] = []
            ids: list[int] = []
            verify_ct = 0
            sent = 0
            metrics = engine.metrics
            engine.begin(prompt)
            try:
                time.sleep(engine.prefill_time(prompt))
                deadline = last = time.monotonic()
                first = True
                while len(ids) < max_new:
                    if first:  # prefill makes the first token
                        n = 1
                        first = False
                        if metrics is not None:
                            metrics.first_token(last - t0, stream)
                    else:
                        deadline += engine.step_time()
                        time.sleep(max(0.0, deadline - time.monotonic()))
                        n = min(engine.tokens_per_step(), max_new - len(ids))
                        verify_ct += 1 if cfg.speculative else 0
                        engine.step(n)
                        if metrics is not None:
                            now = time.monotonic()
                            metrics.tokens(now - last, n)
                            last = now
                    for _ in range(n):
                        ids.append(engine.rng.randrange(1000, 160000))
                        words.append(engine.rng.choice(WORDS))
                    if stream:  # one chunk per forward step: all the tokens that step made
                        out = self._output(rid, prompt, words, ids, verify_ct, t0, len(ids) >= max_new)
                        self._event(out, " " + " ".join(words[sent:]))
                        sent = len(words)
                if stream and not ids:
                    self._event(self._output(rid, prompt, words, ids, verify_ct, t0, True))
            finally:
                engine.end(prompt + len(ids))
                if metrics is not None:
                    metrics.finished(prompt, len(ids), verify_ct, time.monotonic() - t0, stream)
            return self._output(rid, prompt, words, ids, verify_ct, t0, True)

        def _output(self, rid: str, prompt: int, words: list[str], ids: list[int], verify_ct: int,
                    t0: float, done: bool) -> dict:
            meta: dict[str, Any] = {
                "id": rid,
                "finish_reason": {"type": "length", "length": len(ids)} if done else None,
                "prompt_tokens": prompt, "completion_tokens": len(ids), "cached_tokens": 0,
                "weight_version": "default", "total_retractions": 0,
            }
            if done:
                meta["e2e_latency"] = round(time.monotonic() - t0, 4)
                if cfg.speculative:
                    meta["spec_verify_ct"] = verify_ct
                    if verify_ct:
                        meta["spec_accept_length"] = len(ids) / verify_ct
                        meta["spec_accept_rate"] = (len(ids) - verify_ct) / (
                            verify_ct * max(1, cfg.num_draft_tokens - 1))
            return {"text": " " + " ".join(words) if words else "", "output_ids": list(ids), "meta_info": meta}

    return Handler


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        # a client dropping its idle keep-alive connection is normal, and uvicorn logs nothing for it
        import sys

        if isinstance(sys.exc_info()[1], (ConnectionError, TimeoutError)):
            return
        super().handle_error(request, client_address)


def serve(engine: SimEngine, server_args: dict, version: str) -> ThreadingHTTPServer:
    """Bind host:port and serve on a daemon thread (/health answers 503 until the warmup is done)."""
    httpd = _Server((engine.cfg.host, engine.cfg.port), make_handler(engine, server_args, version))
    threading.Thread(target=httpd.serve_forever, name="http", daemon=True).start()
    return httpd
