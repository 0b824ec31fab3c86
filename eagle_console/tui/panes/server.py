"""The Server pane: the service's log followed, with what SGLang says understood: startup stages, the
ready line, decode throughput and accept length (with a sparkline of the recent history), errors."""

from __future__ import annotations

import functools
import re
from typing import Any

from rich.style import Style
from rich.text import Text

from eagle_console.sparkline import sparkline
from eagle_console.tui.labels import findings_text
from eagle_console.tui.panes.follow import LogBatch, ServiceLogPane
from eagle_console.tui.theme import rich_style, tstyle


@functools.cache  # error, ready, stage: compiled at the first line styled, not at import
def _patterns() -> tuple[re.Pattern[str], re.Pattern[str], re.Pattern[str]]:
    return (re.compile(r"Traceback|Error\b|Exception|out of memory|Not enough memory|failed|hit an exception"
                       r"|\bWARN(?:ING)?\b", re.IGNORECASE),
            re.compile(r"The server is fired up and ready to roll"),
            re.compile(r"Load weight (?:begin|end)|KV Cache (?:is allocated|VA upper bound)|"
                       r"Capture (?:\w+ )*cuda graph|Uvicorn running on|max_total_num_tokens=", re.IGNORECASE))


SPARK_WIDTH = 30  # the newest decode logs the head line has room for
# uvicorn's access line of a /metrics read (`[…] INFO:     127.0.0.1:40052 - "GET /metrics HTTP/1.1" 200 OK`,
# SGLang's format in sglang#9099's log): the console's own Metrics readings, one a second or two for as long
# as the server runs, and any Prometheus scraper's. They say nothing of the server and buried what does;
# the pane leaves them out and counts them in its status line ("12 /metrics hidden"); the file keeps them.
@functools.cache  # as _patterns: compiled at the first line that could be one, not at import
def _metrics_read() -> re.Pattern[str]:
    return re.compile(r' - "GET /metrics(?:\?\S*)? HTTP/\d(?:\.\d)?" \d{3}\b')


def is_metrics_read(line: str) -> bool:
    return '"GET /metrics' in line and _metrics_read().search(line) is not None


def server_line_style(line: str) -> Style | None:
    if "Decode batch" in line or "Prefill batch" in line:
        return None
    error, ready, stage = _patterns()
    if ready.search(line):
        return rich_style("ec.ok.bold")
    if error.search(line):
        return rich_style("ec.error.bold")
    if stage.search(line):
        return rich_style("ec.info")
    return None


def summary_text(summary: dict[str, Any], history: list[tuple[float, float | None]],
                 speculative: str | None = None) -> Text:
    """`speculative`: the latest decode log's accept figures in words, each with its definition
    (`SglangLogParser.describe_decode`: 0.5.23's accept rate excludes the bonus token, older ones include it)."""
    stages = summary.get("stages", [])
    if summary.get("ready"):
        out = Text("READY", style=tstyle("ec.ok.bold"))
    elif stages:
        out = Text(f"starting: {stages[-1]['name']}", style=tstyle("ec.warn.bold"))
    else:
        out = Text("no startup stage yet", style="dim")
    load = summary.get("load")
    if load and not summary.get("ready"):  # the weight-loading bar, while the server loads
        # imported here, like the parser in reset_digest: the parser module compiles ~40 regexes, ~15 ms
        # of the first frame, and the pane is built for it
        from eagle_console.parse.sglang_log import describe_load

        out += Text(f" · {describe_load(load)}", style=tstyle("ec.warn"))
    if stages:
        out += Text("  " + " → ".join(s["name"] for s in stages), style=tstyle("ec.info"))
    decode = summary.get("decode")
    if decode:
        acc = decode.get("accept_len")
        accept = speculative or f"accept len {'N/A' if acc is None else format(acc, '.2f')}"
        out += Text(f"\ndecode {decode['gen_throughput']:.1f} tok/s · {accept} · running {decode.get('running_req')}"
                    f" · token usage {decode.get('token_usage')} · {summary.get('decode_samples', 0)} samples")
        tput = sparkline([t for t, _a in history], SPARK_WIDTH)
        accs = sparkline([a for _t, a in history], SPARK_WIDTH)
        out += Text(f"\ntok/s {tput}" + (f"  accept {accs}" if accs else ""), style=tstyle("ec.other"))
    return out + findings_text(summary.get("findings", []), 480)  # SGLang's ValueError whole


class ServerPane(ServiceLogPane):
    """`ServerPane(ctx)`: the selected service's log, else the latest service run's; `summary` is the parse."""

    BORDER_TITLE = "Server"
    DEFAULT_CSS = """
    ServerPane { height: 1fr; }
    ServerPane > .follow-head { height: auto; max-height: 50%; padding: 0 1; }
    """

    def __init__(self, ctx: Any, **kwargs) -> None:
        super().__init__(ctx, **kwargs)
        self.summary: dict[str, Any] | None = None
        self._parser: Any = None
        self.metrics_reads = 0  # /metrics access lines of the followed log left out of the view

    def view_lines(self, batch: LogBatch) -> list[str]:
        before = self.metrics_reads
        if batch.reset:
            self.metrics_reads = 0
        shown = [line for line in batch.lines if not is_metrics_read(line)]
        self.metrics_reads += len(batch.lines) - len(shown)
        self.left_out = f"{self.metrics_reads} /metrics hidden" if self.metrics_reads else ""
        if self.metrics_reads != before and not shown:
            self._show_status()  # a batch of nothing but reads: add_lines draws no status for it
        return shown

    def styler(self, line: str) -> Style | None:
        return server_line_style(line)

    def reset_digest(self) -> None:
        from eagle_console.parse.sglang_log import SglangLogParser

        base = self.ctx.plan.baseline.get("tok_s")  # BELOW_BASELINE's line, as the Metrics tab's
        self._parser = SglangLogParser(baseline_tok_s=float(base) if isinstance(base, (int, float)) else None)

    def digest(self, lines: list[str]) -> Any:
        if self._parser is None:
            return None
        if lines:
            self._parser.feed(lines)
        return self._parser.summary(), list(self._parser.history), self._parser.describe_decode()

    def show_digest(self, batch: LogBatch) -> None:
        if batch.digest is None:
            self.head.update(Text("no service log", style="dim"))
            return
        summary, history, speculative = batch.digest
        if batch.lines or batch.reset or self.summary is None:
            self.summary = summary
            self.head.update(summary_text(summary, history, speculative))
