"""What an operator does on a new node (issue #19's must-show): `pip install .` (not editable) into a fresh
venv, with pip resolving the dependencies from its index; `pip check` is clean; the demo starts from the
installed `eagle-console`; and the completion script, loaded from ~/.bashrc, is there in an interactive bash.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from test_install_wheel import _source_copy

pytestmark = [pytest.mark.slow, pytest.mark.install]  # resolves and installs the dependencies: ~20 s


def _run(argv: list[str], env: dict[str, str], timeout: int = 600, **kw) -> subprocess.CompletedProcess:
    out = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, env=env, **kw)
    assert out.returncode == 0, f"{argv}\n{out.stdout}\n{out.stderr}"
    return out


@pytest.fixture(scope="module")
def fresh(tmp_path_factory) -> tuple[Path, dict[str, str]]:
    tmp = tmp_path_factory.mktemp("fresh")
    src = _source_copy(tmp / "src")
    venv = tmp / "venv"
    # no PYTHONPATH: the checkout on it would satisfy `eagle_console` and hide what the install lacks
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["HOME"] = str(tmp / "home")
    (tmp / "home").mkdir()
    _run([sys.executable, "-m", "venv", str(venv)], env)
    # --no-compile: pip byte-compiles every installed module (~9 of the install's 16 s here); the demo compiles
    # what it imports. Nothing asserted here depends on it.
    _run([str(venv / "bin" / "pip"), "install", "-q", "--no-compile", str(src)], env, cwd=tmp)
    return venv, env


def test_pip_install_dot_then_pip_check_is_clean(fresh) -> None:
    venv, env = fresh
    out = _run([str(venv / "bin" / "pip"), "check"], env)
    assert "No broken requirements found" in out.stdout
    shown = _run([str(venv / "bin" / "pip"), "show", "-f", "eagle-console"], env).stdout
    assert "Editable project location" not in shown  # a real install, not a link to the checkout


def test_the_installed_demo_starts(fresh, tmp_path: Path) -> None:
    venv, env = fresh
    run_env = {**env, "EAGLE_CONSOLE_EXIT_AFTER_FIRST_PAINT": "1"}  # the console paints once, then exits
    out = _run([str(venv / "bin" / "eagle-console"), "demo", "--dir", str(tmp_path / "demo")], run_env,
               timeout=180, cwd=tmp_path)
    assert "first-paint" in out.stdout, out.stdout
    # what quitting stopped, in one line (cli/demo_cmds.stopped_line), and it left no simulated process behind
    assert re.search(r"stopped (the demo's|\d+ simulated process)", out.stdout), out.stdout


@pytest.mark.skipif(shutil.which("bash") is None, reason="bash is not installed")
def test_completion_from_bashrc_loads_in_an_interactive_bash(fresh) -> None:
    venv, env = fresh
    home = Path(env["HOME"])
    # what docs/cli.md tells the operator to put in ~/.bashrc
    (home / ".bashrc").write_text("source <(eagle-console completion bash)\n")
    run_env = {**env, "PATH": f"{venv / 'bin'}{os.pathsep}{env['PATH']}"}
    out = subprocess.run(["bash", "-i", "-c", "complete -p eagle-console"], capture_output=True, text=True,
                         timeout=60, env=run_env, cwd=home, stdin=subprocess.DEVNULL)
    assert out.returncode == 0, out.stderr
    assert "-F _eagle_console eagle-console" in out.stdout, out.stdout
