"""Each face names its own controls (issue #17): the core's texts (shown by the console and the CLI alike) name
no CLI flag and no console key, and the console's own texts name no CLI flag. Read from the string literals
of the source (every message is one), so a new one that breaks the rule fails here."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import eagle_console

PKG = Path(eagle_console.__file__).parent
FLAGS = re.compile(r"(?<![\w-])--(force|cascade|include-tracked|wait|kill|scope|grace|readonly)\b")
KEYS = re.compile(r"\((r|m|u|K|c|y|n)\)|\bpress [a-zA-Z]\b")
CORE = ("engine", "ops", "journal", "node", "plan", "sglang", "drafter", "parse")


def literals(folder: Path):
    for path in sorted(folder.rglob("*.py")):
        tree = ast.parse(path.read_text(), str(path))
        docstrings = {id(n.body[0].value) for n in ast.walk(tree)
                      if isinstance(n, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
                      and n.body and isinstance(n.body[0], ast.Expr) and isinstance(n.body[0].value, ast.Constant)}
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
                yield f"{path.relative_to(PKG.parent)}:{node.lineno}", node.value


def test_core_texts_name_no_flag_and_no_key():
    bad = [(where, text) for sub in CORE for where, text in literals(PKG / sub)
           if FLAGS.search(text) or KEYS.search(text)]
    # argv the core builds for SGLang or our own supervisor is not a message: only ours are checked
    bad = [(w, t) for w, t in bad if not t.startswith("--") and "sglang" not in w.split(":")[0]]
    assert bad == [], bad


def test_console_texts_name_no_cli_flag():
    bad = [(where, text) for where, text in literals(PKG / "tui") if FLAGS.search(text)]
    assert bad == [], bad
