"""docs/architecture.md cites only files that exist (issue 30: it cited sim.md, console.md, state.md and
spec/ files that are not in the repository, and modules that had moved).

Read from the document: every backticked path, every markdown link, every `docs/`, `tests/`, `plans/` or
`benchmarks/` path in the text, and, in its tree of the package, every module named under each package.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "architecture.md"
PACKAGE = ROOT / "eagle_console"

TICKED = re.compile(r"`([^`\s]+)`")
LINK = re.compile(r"\]\(([^)\s#]+)")
BARE = re.compile(r"(?<![\w/.])((?:docs|tests|plans|benchmarks|eagle_console)/[\w./*-]*\w/?)")
DOC_NAME = re.compile(r"(?<![\w/.-])([\w-]+\.md)\b")  # "the simulated node of sim.md"
MODULE = re.compile(r"(?<![\w/.-])(\w+\.py)\b")
SUFFIXES = ("py", "md", "toml", "json", "txt", "svg", "tcss")
TREE_ENTRY = re.compile(r"^  (\w+)(/|\.py)\s")  # a top-level package or module of the tree


def exists(path: str) -> bool:
    """`path` relative to the repository, the package or docs/ (a glob may match several files); a name in a
    module (`sglang/multinode_run.load_ranks`) is its module's file."""
    path = path.rstrip(".,;:")
    head, _, last = path.rpartition(".")
    candidates = [path]
    if head and "/" not in last and last not in SUFFIXES:
        candidates.append(f"{head}.py")
    for candidate in candidates:
        for base in (ROOT, PACKAGE, ROOT / "docs"):
            if any(ch in candidate for ch in "*?["):
                if list(base.glob(candidate)):
                    return True
            elif (base / candidate).exists():
                return True
    return False


def is_path(token: str) -> bool:
    """A token that names a file or folder of the repository (not a URL, a command, a placeholder path)."""
    if "<" in token or "://" in token or token.startswith(("/", "-", "$", "~")):
        return False
    if token.endswith("/") and token.count("/") == 1:
        return False  # a folder of the state dir (`runs/`, `logs/`), not of the repository
    return "/" in token and not token.startswith(".") or token.endswith((".py", ".md", ".toml"))


def cited_paths(text: str) -> set[str]:
    found = {t for t in TICKED.findall(text) if is_path(t)}
    found |= {t for t in LINK.findall(text) if is_path(t)}
    found |= set(BARE.findall(text))
    found |= set(DOC_NAME.findall(text))
    return found


def tree_modules(text: str) -> list[tuple[str, str]]:
    """(package, module file) for each `x.py` named in the package tree, under the package it is listed in."""
    block = text.split("```\neagle_console/\n", 1)[1].split("```", 1)[0]
    out: list[tuple[str, str]] = []
    package = ""
    for line in block.splitlines():
        entry = TREE_ENTRY.match(line)
        if entry:
            package = entry.group(1) if entry.group(2) == "/" else ""
            line = line[entry.end():]
        out += [(package, name) for name in MODULE.findall(line)]
    return out


def missing(text: str) -> list[str]:
    gone = sorted(p for p in cited_paths(text) if not exists(p))
    for package, name in tree_modules(text):
        where = PACKAGE / package if package else PACKAGE
        if not list(where.rglob(name)):
            gone.append(f"{package or '.'}: {name}")
    return gone


def test_every_file_the_architecture_cites_exists():
    text = DOC.read_text()
    assert len(cited_paths(text)) > 10 and len(tree_modules(text)) > 50  # the check reads the document
    assert missing(text) == []


def test_the_check_sees_a_file_that_is_not_there():
    text = ("See `spec/state.md` and [the sim](sim.md), docs/console.md, keys of state.md, `tui/panes/gpus.py`, `runs/<id>.json`,\n"
            "`ops/orphans.plan_kill` and `ops/no_such_module.tracked_here`.\n"
            "```\neagle_console/\n  engine/      runner.py, no_such_module.py (gone)\n  ports.py     free_port\n```\n")
    assert missing(text) == ["docs/console.md", "ops/no_such_module.tracked_here", "sim.md", "spec/state.md",
                             "state.md", "engine: no_such_module.py"]
