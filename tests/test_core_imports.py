"""The core never imports Textual (or Rich): the console and the CLI are layers over it."""

from __future__ import annotations

import pkgutil
import subprocess
import sys
from pathlib import Path

import eagle_console

CORE = ("plan", "journal", "engine", "ops", "node", "parse", "drafter", "sglang", "sim")


def core_modules() -> list[str]:
    root = Path(eagle_console.__file__).parent
    names = []
    for pkg in CORE:
        names.append(f"eagle_console.{pkg}")
        for info in pkgutil.walk_packages([str(root / pkg)], prefix=f"eagle_console.{pkg}."):
            names.append(info.name)
    return names


def test_core_packages_exist():
    assert len(core_modules()) > len(CORE)


def test_importing_the_core_does_not_import_textual_or_rich():
    modules = core_modules()
    code = (
        "import importlib, sys\n"
        f"for name in {modules!r}:\n"
        "    importlib.import_module(name)\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('textual', 'rich'))\n"
        "print(','.join(bad))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "", f"core imported: {out.stdout.strip()}"


def test_cli_entry_does_not_import_textual_or_torch():
    code = "import sys; import eagle_console.cli as c; c.build_parser(); " \
           "print(','.join(sorted(m for m in sys.modules if m.split('.')[0] in ('textual','torch','safetensors'))))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == ""
