"""One finding shape for every checker: NCCL and server-log summaries, `drafter check`, launch arguments.

`Finding` is what the checkers build; `FindingJson` is how a finding appears in a `--json` document
(cli.md: `{"severity", "code", "message"}`), which the console's panes and the CLI read by key.
"""

from __future__ import annotations

from typing import Literal, NamedTuple, TypedDict

Severity = Literal["error", "warning", "info"]
SEVERITY_ORDER: dict[str, int] = {"error": 0, "warning": 1, "info": 2}


class FindingJson(TypedDict):
    severity: Severity
    code: str
    message: str


class Finding(NamedTuple):
    severity: Severity
    code: str  # a code listed in cli.md
    message: str  # what is wrong and what to do about it

    def to_json(self) -> FindingJson:
        return {"severity": self.severity, "code": self.code, "message": self.message}


def by_severity(findings: list[Finding]) -> list[Finding]:
    """Errors first, then warnings, then information; the order within a severity is kept."""
    return sorted(findings, key=lambda f: SEVERITY_ORDER.get(f.severity, 3))
