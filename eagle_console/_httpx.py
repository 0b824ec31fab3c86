"""httpx without its command-line client: `import httpx` imports httpx._main when click is installed (Ray
brings click), and that imports Rich and Pygments, which the core must never load (tests/test_core_imports.py)
and no command needs. A None in sys.modules makes that import fail, and httpx falls back to a stub."""

from __future__ import annotations

import sys

sys.modules.setdefault("httpx._main", None)  # type: ignore[arg-type]

import httpx  # noqa: E402

__all__ = ["httpx"]
