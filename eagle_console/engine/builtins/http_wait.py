"""`http.wait`: wait until a URL answers with the expected status."""

from __future__ import annotations

import time
from typing import Any

from eagle_console.engine.builtins.base import ActionContext, Builtin, BuiltinError, seconds


class HttpWait(Builtin):
    name = "http.wait"
    undo_marks = "waiting changes nothing: marked rolled back"

    def validate(self, args: dict[str, Any]) -> list[str]:
        problems = [] if isinstance(args.get("url"), str) else ["`url` is required"]
        try:
            seconds(args.get("timeout", "60s"))
        except ValueError as exc:
            problems.append(str(exc))
        return problems

    def run(self, ctx: ActionContext) -> int:
        from eagle_console.httpnet import probe, shown_url

        url = ctx.args["url"]
        said = shown_url(url)  # what the log says: never a password in the URL
        want = int(ctx.args.get("status", 200))
        timeout = seconds(ctx.args.get("timeout", "60s"))
        deadline = time.monotonic() + timeout
        last = "no answer yet"
        ctx.say(f"waiting up to {timeout:g}s for {said} to answer {want}")
        started = time.monotonic()
        while time.monotonic() < deadline:
            status = probe(url, deadline_s=max(0.1, min(2.0, deadline - time.monotonic())))
            if status == want:
                ctx.say(f"{said} answered {status} after {time.monotonic() - started:.1f}s")
                ctx.result("wait_s", round(time.monotonic() - started, 2))
                return 0
            last = f"status {status}" if status is not None else "no answer"
            time.sleep(0.5)
        raise BuiltinError(f"{said} did not answer {want} within {timeout:g}s (last: {last})")
