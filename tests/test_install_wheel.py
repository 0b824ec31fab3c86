"""Installed from a wheel (not editable), the console keeps its own import path out of the steps.

Issue #15: installed by pip/pipx/uv, every step got the console's whole site-packages first on its
PYTHONPATH, so a step running SGLang's own Python imported the console's numpy and broke. This builds a
wheel of this checkout, installs it into a fresh venv (offline: the venv reaches the console's
dependencies through a .pth file naming the directories this interpreter imports them from) and runs a
plan with the installed `eagle-console`: the shell step sees the operator's PYTHONPATH and none of the
install's paths, and a built-in step (json.set, run by the installed package) still works.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.install]  # builds and installs a wheel: ~10 s, run in CI all the same

REPO = Path(__file__).resolve().parent.parent
DEPS = ("textual", "rich", "psutil", "httpx", "pynvml", "safetensors", "numpy")


def _run(argv: list[str], **kw) -> subprocess.CompletedProcess:
    out = subprocess.run(argv, capture_output=True, text=True, timeout=120, **kw)
    assert out.returncode == 0, f"{argv}\n{out.stdout}\n{out.stderr}"
    return out


def _source_copy(dest: Path) -> Path:
    """The checkout's tracked files (building in place would leave build/ and egg-info in it)."""
    files = _run(["git", "ls-files", "-z"], cwd=REPO).stdout.split("\0")
    for name in filter(None, files):
        src = REPO / name
        if src.is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / name)
    return dest


def _dep_dirs() -> list[str]:
    dirs = []
    for mod in DEPS:
        spec = importlib.util.find_spec(mod)
        if spec and spec.origin:
            d = str(Path(spec.origin).resolve().parents[1 if spec.submodule_search_locations else 0])
            if d not in dirs:
                dirs.append(d)
    return dirs


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Path:
    """A fresh venv with the wheel of this checkout installed; returns the venv."""
    tmp = tmp_path_factory.mktemp("install")
    src = _source_copy(tmp / "src")
    _run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-index", "--no-build-isolation",
          "-w", str(tmp / "dist"), str(src)])
    (wheel,) = (tmp / "dist").glob("eagle_console-*.whl")
    venv = tmp / "venv"
    _run([sys.executable, "-m", "venv", "--without-pip", str(venv)])
    # Without PYTHONPATH: where the suite puts the checkout on it, pip would see eagle_console "already
    # satisfied" by the checkout and install nothing.
    clean = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    _run([sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python"), "install", "-q",
          "--no-deps", "--no-index", str(wheel)], env=clean)
    site = Path(_run([str(venv / "bin" / "python"), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                     env={"PATH": os.environ["PATH"]}).stdout.strip())
    (site / "zz_console_deps.pth").write_text("\n".join(_dep_dirs()) + "\n")  # after the wheel's own dir
    return venv


def test_an_installed_console_leaves_its_site_packages_out_of_steps(installed: Path, tmp_path: Path) -> None:
    py = installed / "bin" / "python"
    probe = _run([str(py), "-c", "import eagle_console, sysconfig; print(eagle_console.__file__); "
                                 "print(sysconfig.get_path('purelib'))"], env={"PATH": os.environ["PATH"]}, cwd=tmp_path)
    pkg_file, site = probe.stdout.split()
    assert pkg_file.startswith(site), "the venv imports the installed copy, not the checkout"
    ours = [site, str(Path(pkg_file).parent), str(installed)]

    target = tmp_path / "config.json"
    target.write_text('{"max_position_embeddings": 131072}\n')
    plan = tmp_path / "plan.toml"
    plan.write_text(f"""
[plan]
id = "inst"
title = "installed"

[[phase]]
id = "0"
title = "P"

  [[phase.step]]
  id = "0.1"
  title = "where does a step's python look"
  run = '''python3 -c 'import sys, os, json; print(json.dumps({{"pp": os.environ.get("PYTHONPATH"), "path": sys.path}}))' > {tmp_path}/seen.json'''

  [[phase.step]]
  id = "0.2"
  title = "a built-in, run by the installed package"
  uses = "json.set"
  with = {{ path = "{target}", set = {{ max_position_embeddings = 262144 }} }}
""")
    operator_pp = str(tmp_path / "operator-lib")
    env = {"PATH": os.environ["PATH"], "HOME": os.environ.get("HOME", str(tmp_path)), "PYTHONPATH": operator_pp}
    cli = str(installed / "bin" / "eagle-console")
    for step in ("0.1", "0.2"):
        out = subprocess.run([cli, "run", str(plan), step, "--yes", "--wait"], env=env, cwd=tmp_path,
                             capture_output=True, text=True, timeout=60)
        assert out.returncode == 0, out.stdout + out.stderr
    seen = json.loads((tmp_path / "seen.json").read_text())
    assert seen["pp"] == operator_pp, "the step sees the operator's PYTHONPATH, nothing added"
    leaked = [p for p in seen["path"] if any(p == o or p.startswith(o + os.sep) for o in ours)]
    assert not leaked, f"the console's install is on the step's sys.path: {leaked}"
    assert json.loads(target.read_text())["max_position_embeddings"] == 262144
