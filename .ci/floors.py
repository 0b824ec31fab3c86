"""Print a pip constraints file pinning every declared dependency to its floor (`>=X` -> `==X`).

Used by .ci/run to run the suite at the floors pyproject.toml promises; markers are kept, so
`tomli` is pinned only where it is installed. Extras given as arguments add their requirements.
"""

from __future__ import annotations

import sys
from pathlib import Path

from packaging.requirements import Requirement

if sys.version_info >= (3, 11):
    import tomllib
else:
    import tomli as tomllib


def floors(pyproject: Path, extras: list[str]) -> list[str]:
    project = tomllib.loads(pyproject.read_text())["project"]
    reqs = list(project["dependencies"])
    for extra in extras:
        reqs += project["optional-dependencies"][extra]
    lines = []
    for text in reqs:
        req = Requirement(text)
        lows = [s.version for s in req.specifier if s.operator in (">=", "==")]
        if not lows:
            raise SystemExit(f"{text!r} declares no floor: every dependency needs one")
        marker = f"; {req.marker}" if req.marker else ""
        lines.append(f"{req.name}=={lows[0]}{marker}")
    return lines


if __name__ == "__main__":
    root = Path(__file__).resolve().parent.parent
    print("\n".join(floors(root / "pyproject.toml", sys.argv[1:])))
