"""A plan's problems: each with the line and column it is at, all of them in one PlanError."""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

from eagle_console.plan.safe_text import printable


class PlanIssue(NamedTuple):
    line: int | None
    column: int | None
    message: str


class PlanError(Exception):
    """The plan cannot be used; `errors` holds every problem found, in file order."""

    def __init__(self, path: Path, errors: list[PlanIssue]) -> None:
        self.path = Path(path)
        # Messages quote the plan (an unknown key, an id): never let them carry a control character out.
        self.errors = [e._replace(message=printable(e.message)) for e in errors]
        super().__init__(self.format_first())

    @staticmethod
    def _fmt(path: Path, issue: PlanIssue) -> str:
        where = str(path)
        if issue.line is not None:
            where += f":{issue.line}"
            if issue.column is not None:
                where += f":{issue.column}"
        return f"{where}: {issue.message}"

    def format_first(self) -> str:
        if not self.errors:
            return f"{self.path}: invalid plan"
        more = len(self.errors) - 1
        tail = f" (and {more} more error{'s' if more > 1 else ''}; run `eagle-console validate`)" if more else ""
        return self._fmt(self.path, self.errors[0]) + tail

    def format_all(self) -> list[str]:
        return [self._fmt(self.path, e) for e in self.errors]
