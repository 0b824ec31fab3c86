"""SGLang server log → the `server-log --json` summary: startup stages, ready, decode stats, errors.

Incremental (`SglangLogParser.feed(lines)`), so the console's Server pane can feed it the lines its log
follower delivers. Handles old and new releases: `Decode batch.` / `Decode batch,`, with or without
`accept len`, with or without a ` TP0` / ` DP0 TP0` prefix, with SGLANG_LOG_FORWARD_ITERS' ` [123]` after
`batch`, with SGLANG_LOG_MS' `.123` after the seconds, and launcher prefixes (docker `svc  | `, Ray
`(Worker pid=N) `) in front of the `[timestamp ...]` part. The weight-loading bar (`Loading safetensors
checkpoint shards:  45% Completed | 29/64 [...]`, the longest startup phase of a large model) is read as
progress: `summary()["load"]`.
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TypedDict

from eagle_console.findings import Finding, FindingJson
from eagle_console.parse import alarms
from eagle_console.parse.tqdm import Progress, parse_progress

# `[2025-10-22 10:27:56 TP0] msg` / `[2025-06-08 21:06:35] msg` / `[... DP0 TP0] msg`; SGLANG_LOG_MS=1 adds
# `.%(msecs)03d` after the seconds (`configure_logger`, srt/utils/common.py).
_PREFIX = re.compile(
    r"\[(?P<ts>\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d{3})?)(?P<ranks>(?: [A-Z_]+\d+)*)\] (?P<msg>.*)$")
# The same up to the message: on a line without a newline the message is the rest of it (3x faster than
# capturing it with `.*$`, on every line a followed log delivers).
_PREFIX_HEAD = re.compile(_PREFIX.pattern.removesuffix("(?P<msg>.*)$"))
_RANK_TP = re.compile(r"\bTP(\d+)\b")
# What launchers put before a line: Ray `(WorkerDict pid=N) `, docker compose `sglang-1  | `.
_LAUNCHER = re.compile(r"^(?:\([\w.-]+ pid=\d+(?:, ip=[\d.]+)?\) |[\w.-]+\s+\| )")

# Startup stages in the order a server passes them; the first match of each is kept.
STAGES: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("load weights begin", re.compile(r"Load weight begin")),
    ("load weights", re.compile(r"Load weight end")),
    # 0.5.23 logs "VA upper bound" instead when the pool is reserved before capture (mem_cache/memory_pool.py
    # _finalize_allocation_log: `{cache_name} {'VA upper bound' if post_capture_active else 'is allocated'}.`).
    ("KV cache", re.compile(r"KV Cache (?:is allocated|VA upper bound)\.")),
    ("memory pool", re.compile(r"Memory pool end")),
    ("CUDA graph capture begin", re.compile(r"Capture (?:\w+ )*cuda graph begin", re.IGNORECASE)),
    ("CUDA graph capture", re.compile(r"Capture (?:\w+ )*cuda graph end", re.IGNORECASE)),
    ("token budget", re.compile(r"max_total_num_tokens=")),
    ("HTTP server", re.compile(r"Uvicorn running on|Application startup complete")),
    ("ready", re.compile(r"The server is fired up and ready to roll")),
)
_READY = STAGES[-1][1]
# SGLANG_LOG_FORWARD_ITERS=1: `Decode batch [123], ...` (scheduler_metrics_mixin.py, `iter_msg`).
_DECODE = re.compile(r"Decode batch(?: \[(\d+)\])?[.,]")
_PREFILL = re.compile(r"Prefill batch(?: \[\d+\])?[.,]")
# common.py BAR_FORMAT: `{desc}: {percentage:3.0f}% Completed | {n_fmt}/{total_fmt} [...]`. 0.5.23 loads with
# threads by default (model_loader/loader.py:613 `enable_multithread_load` True): its bars are "Multi-thread
# loading shards" and "Multi-thread loading pt checkpoint shards" (weight_utils.py:1369-1373, :1438-1442);
# "Loading safetensors checkpoint shards" only without threads, and in older releases.
_LOAD_BAR = re.compile(r"(?:Loading \w+ checkpoint shards|Multi-thread loading (?:pt checkpoint )?shards):")
_DIED_CODE = re.compile(r"scheduler died during initialization \(exit code: (-?\d+)\)")
_FIELDS = {
    "running_req": re.compile(r"#running-req: (\d+)"),
    "queue_req": re.compile(r"#queue-req: (\d+)"),
    "token_usage": re.compile(r"(?:^|, )token usage: ([0-9.]+)|full token usage: ([0-9.]+)"),
    "accept_len": re.compile(r"accept len: ([0-9.]+)"),
    "accept_rate": re.compile(r"accept rate: ([0-9.]+)"),
    # 0.5.23 metrics_reporter.py report_decode_stats: only printed when > 0 (DSpark/UNO cap-accept verify).
    "cap_len": re.compile(r"(?:^|, )cap len: ([0-9.]+)"),
    "block_accept_len": re.compile(r"block accept len: ([0-9.]+)"),
    "gen_throughput": re.compile(r"gen throughput \(token/s\): ([0-9.]+)"),
    "new_seq": re.compile(r"#new-seq: (\d+)"),
    "new_token": re.compile(r"#new-token: (\d+)"),
    "cached_token": re.compile(r"#cached-token: (\d+)"),
    "input_throughput": re.compile(r"input throughput \(token/s\): ([0-9.]+)"),
}
_THROUGHPUT, _RUNNING = _FIELDS["gen_throughput"], _FIELDS["running_req"]

# (code, severity, pattern, advice). Checked in order on every line; the first match names the error.
ERRORS: tuple[tuple[str, str, re.Pattern[str], str], ...] = (
    ("CUDA_OOM", "error", re.compile(r"CUDA out of memory|CUDA error: out of memory|OutOfMemoryError"),
     "lower --mem-fraction-static, {max_bs} or --max-running-requests"),
    ("NOT_ENOUGH_MEMORY", "error", re.compile(r"Not enough memory(?: to allocate KV cache)?\."),
     "weights leave no room for the KV cache: raise --mem-fraction-static or use more GPUs"),
    # 0.5.23: decode `Capture cuda graph failed: ...` (runner/decode_cuda_graph_runner.py), prefill `Capture
    # prefill CUDA graph failed: ...` (runner/prefill_cuda_graph_runner.py); the advice is upstream's own list.
    ("CUDA_GRAPH_CAPTURE_FAILED", "error", re.compile(r"Capture (?:prefill )?cuda graph failed", re.IGNORECASE),
     "lower --mem-fraction-static / {max_bs}, or {no_graph}"),
    ("SCHEDULER_EXCEPTION", "error",
     re.compile(r"(?:Scheduler|TpModelWorkerClient|DataParallelController|DetokenizerManager) hit an exception"),
     ""),
    ("SCHEDULER_DIED", "error", re.compile(r"scheduler died during initialization"), ""),  # advice: _advice()
    # Launch phase (engine.py) and running phase (tokenizer_manager.py `running_phase_sigquit_handler`).
    ("CHILD_FAILED", "error",
     re.compile(r"Received sigquit from a child process|SIGQUIT received\..*It usually means one child failed"),
     ""),
    # torch's ProcessGroupNCCL watchdog: a collective that never completed (stuck P2P, a dead peer).
    ("POSSIBLE_HANG", "error", re.compile(r"Watchdog caught collective operation timeout"),
     "a collective never completed: broken PCIe P2P (ACS/IOMMU) or a dead rank — retry with "
     "NCCL_P2P_DISABLE=1 to confirm, and read the NCCL log (`eagle-console nccl`)"),
    # torch's C10D_NCCL_CHECK (NCCLUtils.hpp): `NCCL error in: FILE:LINE, <ncclGetErrorWithVersion>`.
    ("NCCL_WARN", "error", re.compile(r"NCCL error in: "),
     "an NCCL call failed: rerun with NCCL_DEBUG=INFO and read the NCCL WARN lines (`eagle-console nccl`)"),
    ("WARMUP_FAILED", "error", re.compile(r"Initialization failed\. warmup error"), ""),
    ("HEALTH_CHECK_FAILED", "warning", re.compile(r"Health check failed"), ""),
    ("KV_CACHE_FULL", "warning", re.compile(r"KV cache pool is full\. Retract requests"),
     "requests are being retracted: lower concurrency or give the KV cache more memory"),
    ("CUSTOM_ALLREDUCE_FAILED", "info", re.compile(r"Setup Custom allreduce failed"),
     "normal without P2P between the GPUs; pass --disable-custom-all-reduce to silence it"),
    # distributed/device_communicators/custom_all_reduce_utils.py (0.5.23: `CustomAllreduce is disabled because
    # it's not supported on more than two PCIe-only GPUs. ...`; older: `Custom allreduce is disabled ...`).
    ("CUSTOM_ALLREDUCE_DISABLED", "info",
     re.compile(r"Custom ?all ?reduce(?:V2)? is disabled because it's not supported on more than two PCIe-only",
                re.IGNORECASE),
     "expected on PCIe-only GPUs without NVLink (tp > 2): all-reduce goes through NCCL, whose settings "
     "(NCCL_P2P_LEVEL, NCCL_PROTO, NCCL_ALGO) then decide its speed"),
)
# Codes that only say which process raised: the traceback's own cause (OOM, capture failure, ...) wins.
_CONTAINER_CODES = frozenset({"SCHEDULER_EXCEPTION"})
_TRACEBACK = re.compile(r"Traceback \(most recent call last\):")
# `torch.OutOfMemoryError: ...`, and the bare `Exception: ...` SGLang's capture runners raise.
_EXC_LINE = re.compile(r"^(?:[A-Za-z_][\w.]*)?(?:Error|Exception|Interrupt|Exit)(?::|$)")
# The launch dump: `server_args=ServerArgs(...)` up to 0.5.x, `server_args={...}` (a dict: resolved_dict())
# in 0.5.23 (entrypoints/engine.py:173, 311, 1185).
_ARGS_DUMP = re.compile(r"server_args=(?P<form>ServerArgs\(|\{)")
# The flags the advice names, per launch-flag generation (0.5.23: srt/arg_groups/fields/exec_.py
# cuda_graph_max_bs_decode / _prefill; server_args.py:408-414 `--disable-cuda-graph` deprecated for
# `--cuda-graph-backend-{decode,prefill}=disabled`; runner_backend_utils CUDA_GRAPH_CAPTURE_FAILED_MSG).
GRAPH_FLAGS = {
    "old": {"max_bs": "--cuda-graph-max-bs", "no_graph": "--disable-cuda-graph"},
    "new": {"max_bs": "--cuda-graph-max-bs-decode", "no_graph": "--cuda-graph-backend-decode=disabled"},
    "unknown": {"max_bs": "--cuda-graph-max-bs (SGLang 0.5.23: --cuda-graph-max-bs-decode)",
                "no_graph": "--disable-cuda-graph (SGLang 0.5.23: --cuda-graph-backend-decode=disabled)"},
}
PREFILL_GRAPH_FLAGS = {"max_bs": "--cuda-graph-max-bs-prefill", "no_graph": "--cuda-graph-backend-prefill=disabled"}
# What `accept rate` means in the decode log. Before sglang PR #23530 (merged 2026-04-23) it was
# (accepted drafts + bonus) / (steps x num_draft_tokens); from then on accepted drafts / proposed drafts,
# the bonus token excluded (0.5.23 metrics_reporter.py:970-983).
ACCEPT_RATE_DRAFTS = "accepted drafts / proposed drafts (bonus token excluded)"
ACCEPT_RATE_OLD = "(accepted drafts + bonus token) / (num_draft_tokens per step): older SGLang"
ACCEPT_RATE_UNKNOWN = "as logged: drafts only on SGLang 0.5.23, bonus token included on older releases"
MAX_ERRORS = 50
MAX_LINE = 500  # an error string is cut here; tracebacks can carry huge reprs
LOW_ACCEPT_LEN = 1.3  # below this a drafter barely helps (1.0 = nothing accepted)


class Stage(TypedDict):
    name: str  # one of STAGES' names
    line: str  # the log line that reached it


class DecodeJson(TypedDict):
    gen_throughput: float
    accept_len: float | None
    running_req: int
    token_usage: float


class LoadJson(TypedDict):
    """The weight-loading bar (cli.md Additions: `"load"`); rate_s is shards per second."""

    done: int
    total: int
    pct: float
    rate_s: float | None
    eta_s: float | None


class ServerLogSummary(TypedDict):
    """The `server-log --json` document (cli.md "SGLang server log summary", plus Additions' `load`)."""

    ready: bool
    stages: list[Stage]
    decode: DecodeJson | None
    decode_samples: int
    errors: list[str]
    findings: list[FindingJson]
    load: LoadJson | None


def describe_load(load: LoadJson) -> str:
    """`weights: 121/163 shards (74.2%) · 3.30 shards/s · ETA 0:12`: the weight-loading bar in words."""
    out = f"weights: {load['done']}/{load['total']} shards ({load['pct']:.1f}%)"
    if load["rate_s"]:
        out += f" · {load['rate_s']:.2f} shards/s" if load["rate_s"] >= 1 else f" · {1 / load['rate_s']:.1f} s/shard"
    if load["eta_s"] is not None and load["done"] < load["total"]:
        minutes, secs = divmod(int(load["eta_s"]), 60)
        out += f" · ETA {minutes}:{secs:02d}"
    return out


def load_json(p: Progress) -> LoadJson | None:
    if not p.total:
        return None
    return LoadJson(done=p.n, total=p.total, pct=round(100.0 * p.n / p.total, 1),
                    rate_s=p.rate_per_s, eta_s=p.remaining_s)


@dataclass
class DecodeSample:
    gen_throughput: float
    accept_len: float | None
    running_req: int
    token_usage: float
    queue_req: int | None = None
    accept_rate: float | None = None
    tp_rank: int | None = None
    forward_ct: int | None = None  # the ` [123]` of SGLANG_LOG_FORWARD_ITERS
    cap_len: float | None = None  # 0.5.23 `cap len:` (cap-accept verify only)
    block_accept_len: float | None = None  # 0.5.23 `block accept len:` (uncapped full-block accept length)

    def as_json(self) -> DecodeJson:
        return DecodeJson(gen_throughput=self.gen_throughput, accept_len=self.accept_len,
                          running_req=self.running_req, token_usage=self.token_usage)


@dataclass
class PrefillSample:
    new_seq: int
    new_token: int
    cached_token: int | None
    running_req: int | None
    queue_req: int | None
    input_throughput: float | None


def split_prefix(line: str) -> tuple[str | None, str | None, str]:
    """`[ts TP0] msg` → (ts, 'TP0', msg); a line without the logger prefix → (None, None, line)."""
    if "\n" not in line:
        head = _PREFIX_HEAD.search(line)
        if head:
            return head.group("ts"), (head.group("ranks").strip() or None), line[head.end():]
        m = None
    else:
        m = _PREFIX.search(line)
    if not m:
        launcher = _LAUNCHER.match(line)
        return None, None, line[launcher.end():] if launcher else line
    return m.group("ts"), (m.group("ranks").strip() or None), m.group("msg")


def _num(pattern: re.Pattern[str], text: str) -> str | None:
    m = pattern.search(text)
    if not m:
        return None
    return next((g for g in m.groups() if g is not None), None)


def parse_decode(msg: str) -> DecodeSample | None:
    """A `Decode batch` message → its figures, or None if it is not one (or lacks throughput)."""
    head = _DECODE.search(msg)
    if not head:
        return None
    tput = _num(_FIELDS["gen_throughput"], msg)
    running = _num(_FIELDS["running_req"], msg)
    if tput is None or running is None:
        return None
    usage, accept = _num(_FIELDS["token_usage"], msg), _num(_FIELDS["accept_len"], msg)
    queue, rate = _num(_FIELDS["queue_req"], msg), _num(_FIELDS["accept_rate"], msg)
    cap, block = _num(_FIELDS["cap_len"], msg), _num(_FIELDS["block_accept_len"], msg)
    return DecodeSample(
        gen_throughput=float(tput), accept_len=float(accept) if accept is not None else None,
        running_req=int(running), token_usage=float(usage) if usage is not None else 0.0,
        queue_req=int(queue) if queue is not None else None,
        accept_rate=float(rate) if rate is not None else None,
        forward_ct=int(head.group(1)) if head.group(1) else None,
        cap_len=float(cap) if cap is not None else None,
        block_accept_len=float(block) if block is not None else None,
    )


def parse_prefill(msg: str) -> PrefillSample | None:
    if not _PREFILL.search(msg):
        return None
    new_seq, new_token = _num(_FIELDS["new_seq"], msg), _num(_FIELDS["new_token"], msg)
    if new_seq is None or new_token is None:
        return None

    def opt(name: str, kind: type) -> object:
        v = _num(_FIELDS[name], msg)
        return kind(v) if v is not None else None

    return PrefillSample(int(new_seq), int(new_token), opt("cached_token", int), opt("running_req", int),  # type: ignore[arg-type]
                         opt("queue_req", int), opt("input_throughput", float))  # type: ignore[arg-type]


POINTS_LEN = 600  # decode logs kept for the alarms (parse/alarms.py holds each for HOLD_S of them)


@dataclass
class SglangLogParser:
    """Feed server log lines; `summary()` gives the `server-log --json` dict.

    A decode log is counted when fed, but its figures are parsed when read (`decode`, `history`, `points`,
    `summary()`), and then only for the last max(`history_len`, POINTS_LEN) of them: a server logging
    thousands of decode lines a second made the Server pane's parse 80 % of its follow thread, nine regex
    searches a line for figures no one would read (benchmarks/log_ingest.py, docs/performance.md)."""

    history_len: int = 120
    baseline_tok_s: float | None = None  # BELOW_BASELINE's line (`server-log --baseline`, the plan's tok_s)
    ready: bool = False
    stages: list[Stage] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    decode_samples: int = 0
    prefill: PrefillSample | None = None
    prefill_samples: int = 0
    load: Progress | None = None  # the latest "Loading ... checkpoint shards" bar
    _decode: DecodeSample | None = field(default=None, init=False, repr=False)
    _history: deque = field(init=False, repr=False)  # (gen_throughput, accept_len) for a sparkline
    _points: deque = field(init=False, repr=False)  # alarms.Point per timestamped decode log, for the alarms
    _pending: deque = field(init=False, repr=False)  # decode log lines fed but not parsed yet
    _stage_seen: set[str] = field(default_factory=set)
    _codes: dict[str, list] = field(default_factory=dict)  # code → [severity, count, first line, advice]
    _tb: list[str] | None = None  # head of a traceback being read
    _tb_code: str | None = None
    # Which launch flags the server has, from its server_args dump: "old", "new" (0.5.23) or "unknown".
    graph_flags: str = "unknown"
    args_dump: str | None = None  # "repr" (ServerArgs(...)) or "dict" (0.5.23) once the dump was seen

    def __post_init__(self) -> None:
        self._history = deque(maxlen=self.history_len)
        self._points = deque(maxlen=POINTS_LEN)
        # older ones would leave both the history and the alarms' points anyway
        self._pending = deque(maxlen=max(1, self.history_len, POINTS_LEN))

    @property
    def decode(self) -> DecodeSample | None:
        """The latest decode log's figures."""
        self._flush()
        return self._decode

    @property
    def history(self) -> deque:
        """(gen_throughput, accept_len) of the last `history_len` decode logs, oldest first."""
        self._flush()
        return self._history

    @property
    def points(self) -> deque:
        """alarms.Point of the last POINTS_LEN timestamped decode logs, oldest first."""
        self._flush()
        return self._points

    def _flush(self) -> None:
        """Parse the decode logs fed since the last read (at most the last max(history_len, POINTS_LEN))."""
        if not self._pending:
            return
        pending, self._pending = self._pending, deque(maxlen=self._pending.maxlen)
        for line in pending:
            ts, ranks, msg = split_prefix(line)
            sample = parse_decode(msg)
            assert sample is not None  # feed_line checked it
            tp = _RANK_TP.search(ranks or "")
            sample.tp_rank = int(tp.group(1)) if tp else None
            self._decode = sample
            self._history.append((sample.gen_throughput, sample.accept_len))
            t = _epoch(ts)
            if t is not None:
                self._points.append(alarms.Point(t, sample.running_req, sample.accept_len,
                                                 sample.gen_throughput, sample.token_usage))

    def feed(self, lines: Iterable[str]) -> None:
        for line in lines:
            self.feed_line(line)

    def feed_line(self, line: str) -> None:
        line = line.rstrip("\r\n")
        # A decode log (most of a serving log) is kept whole, to be split and parsed if read (`_flush`). The
        # three searches give what they give on the message alone: no logger or launcher prefix can hold
        # their text; the checks before them below (a traceback being read, the loading bar) come first here too.
        if (self._tb is None and "Decode batch" in line and "checkpoint shards:" not in line
                and _DECODE.search(line) and _THROUGHPUT.search(line) and _RUNNING.search(line)):
            self.decode_samples += 1
            self._pending.append(line)
            return
        ts, ranks, msg = split_prefix(line)
        if self._tb is not None and self._traceback_line(msg, ts):
            return
        if "shards:" in msg and _LOAD_BAR.search(msg):
            progress = parse_progress(msg)
            if progress is not None and progress.total:
                self.load = progress
                return
        if "batch" in msg:
            if _DECODE.search(msg) and _THROUGHPUT.search(msg) and _RUNNING.search(msg):  # parse_decode's test
                self.decode_samples += 1
                self._pending.append(line)
                return
            pre = parse_prefill(msg)
            if pre is not None:
                self.prefill, self.prefill_samples = pre, self.prefill_samples + 1
                return
        for name, pattern in STAGES:
            if name not in self._stage_seen and pattern.search(msg):
                self._stage_seen.add(name)
                self.stages.append(Stage(name=name, line=line.strip()[:MAX_LINE]))
                if pattern is _READY:
                    self.ready = True
                return
        if "server_args=" in msg:
            dump = _ARGS_DUMP.search(msg)
            if dump:
                self.args_dump = "dict" if dump.group("form") == "{" else "repr"
                self.graph_flags = "new" if "cuda_graph_max_bs_decode" in msg else "old"
                return
        if _TRACEBACK.search(msg):
            self._tb, self._tb_code = [msg.strip()], self._classify(msg)
            return
        code = self._classify(msg)
        if code:
            self._record(code, line.strip())

    def _traceback_line(self, msg: str, ts: str | None) -> bool:
        """Inside a traceback: True while the line belongs to it; the exception line closes it."""
        body = msg.rstrip()
        if ts is None and (body.startswith((" ", "\t")) or not body or set(body.strip()) <= set("^~ ")):
            self._tb_code = self._cause(self._tb_code, body)
            return True
        tb, self._tb = self._tb or [], None
        if ts is None and _EXC_LINE.match(body.strip()):
            code = self._cause(self._tb_code, body) or "PYTHON_EXCEPTION"
            self._record(code, f"{tb[0]} … {body.strip()}")
            return True
        # The traceback ended without an exception line (cut off): keep what we have.
        self._record(self._tb_code or "PYTHON_EXCEPTION", f"{tb[0]} … (traceback cut off)")
        return False

    def _cause(self, code: str | None, text: str) -> str | None:
        """Inside a traceback the first specific code wins; the header's "which process" code only until
        a cause (OOM, capture failure, NCCL error) shows up (0.5.23 scheduler.py:6370-6372 wraps them all)."""
        if code is not None and code not in _CONTAINER_CODES:
            return code
        return self._classify(text) or code

    @staticmethod
    def _classify(text: str) -> str | None:
        for code, _sev, pattern, _advice in ERRORS:
            if pattern.search(text):
                return code
        return None

    def _advice(self, code: str, text: str, advice: str) -> str:
        if "{" in advice:  # the flags this server takes
            prefill = code == "CUDA_GRAPH_CAPTURE_FAILED" and "prefill" in text.lower()
            advice = advice.format(**(PREFILL_GRAPH_FLAGS if prefill else GRAPH_FLAGS[self.graph_flags]))
        if code == "SCHEDULER_DIED":
            m = _DIED_CODE.search(text)
            if m and m.group(1) == "-9":
                return "exit code -9 is SIGKILL: usually the OS OOM killer (host RAM) — check `dmesg`"
            if m:
                return f"exit code {m.group(1)}: the scheduler's own traceback above says why"
        return advice

    def _record(self, code: str, text: str) -> None:
        severity, advice = next(((s, a) for c, s, _p, a in ERRORS if c == code), ("error", ""))
        entry = self._codes.get(code)
        if entry is None:
            self._codes[code] = [severity, 1, text[:MAX_LINE], advice]
        else:
            entry[1] += 1
        if severity == "info":
            return  # informational lines are findings, not errors
        if len(self.errors) < MAX_ERRORS:
            self.errors.append(text[:MAX_LINE])

    # ---- results -------------------------------------------------------------------------------

    def pending_traceback(self) -> str | None:
        return f"{self._tb[0]} … (traceback still being written)" if self._tb else None

    def findings(self) -> list[Finding]:
        out = []
        codes = dict(self._codes)
        if self._tb:
            code = self._tb_code or "PYTHON_EXCEPTION"
            codes.setdefault(code, ["error", 0, self.pending_traceback(), ""])
        for code, (severity, count, first, advice) in codes.items():
            advice = self._advice(code, first, advice)  # now: the server_args dump may have come since
            msg = (f"{count}× " if count > 1 else "") + first + (f" — {advice}" if advice else "")
            out.append(Finding(severity, code, msg))
        raised = alarms.alarms(list(self.points), self.baseline_tok_s)
        out += raised
        recent = [a for _t, a in list(self.history)[-10:] if a is not None]
        if any(f.code == "ACCEPT_LENGTH_ONE" for f in raised):
            pass  # the stronger finding says it
        elif len(recent) >= 5 and sum(recent) / len(recent) < LOW_ACCEPT_LEN:
            mean = sum(recent) / len(recent)
            out.append(Finding("warning", "LOW_ACCEPT_LEN",
                               f"mean accept length {mean:.2f} over the last {len(recent)} decode logs: "
                               "the drafter is barely accepted (wrong drafter, vocab mapping or aux layers?)"))
        return out

    def accept_rate_definition(self) -> str:
        """What the decode log's `accept rate` means here: the 0.5.23 dump form, the 0.5.23-only fields, or
        a sample no old formula can give (accept len 1.00 with rate 0.00: the bonus token would make it
        1/num_draft_tokens) say drafts only; accept len 1.00 with a nonzero rate says the old formula."""
        d = self.decode
        if self.args_dump == "dict" or (d is not None and (d.cap_len is not None or d.block_accept_len is not None)):
            return ACCEPT_RATE_DRAFTS
        if d is not None and d.accept_len == 1.0 and d.accept_rate is not None:
            return ACCEPT_RATE_DRAFTS if d.accept_rate == 0.0 else ACCEPT_RATE_OLD
        return ACCEPT_RATE_UNKNOWN

    def describe_decode(self) -> str | None:
        """The latest decode log's speculative figures in words, each with its definition."""
        d = self.decode
        if d is None or d.accept_len is None:
            return None
        out = f"accept len {d.accept_len:.2f}"
        if d.accept_rate is not None:
            out += f" · accept rate {d.accept_rate:.2f} ({self.accept_rate_definition()})"
        if d.cap_len is not None:
            out += f" · cap len {d.cap_len:.2f}"
        if d.block_accept_len is not None:
            out += f" · block accept len {d.block_accept_len:.2f} (uncapped full-block accept length)"
        return out

    def summary(self) -> ServerLogSummary:
        errors = list(self.errors)
        if self._tb and len(errors) < MAX_ERRORS:
            errors.append(self.pending_traceback() or "")
        return ServerLogSummary(
            ready=self.ready,
            stages=[Stage(**s) for s in self.stages],
            decode=self.decode.as_json() if self.decode else None,
            decode_samples=self.decode_samples,
            errors=errors,
            findings=[f.to_json() for f in self.findings()],
            load=load_json(self.load) if self.load else None,
        )


def _epoch(ts: str | None) -> float | None:
    """`2025-10-22 10:27:56[.123]` (the server's local time) → seconds; only differences are used."""
    if ts is None:
        return None
    from datetime import datetime

    try:
        return datetime.strptime(ts[:19], "%Y-%m-%d %H:%M:%S").timestamp() + (float(ts[19:]) if len(ts) > 19 else 0.0)
    except ValueError:
        return None


def summarize(lines: Iterable[str]) -> ServerLogSummary:
    parser = SglangLogParser()
    parser.feed(lines)
    return parser.summary()
