"""compare-vocab on the demo's drafter pair, the CLI commands, and the drafter built-ins' validation."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import clikit
import numpy as np
import pytest

from eagle_console.drafter.vocab import compare_vocab
from eagle_console.engine.builtins import get_builtin
from eagle_console.sim import drafters as sim


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return sim.build(tmp_path_factory.mktemp("drafters"))


def test_sim_pair_differs_in_31748_positions(demo: dict[str, Path]) -> None:
    r = compare_vocab(demo["k25"], demo["aqmedai"])
    assert (r["size_a"], r["size_b"], r["positions_differ"]) == (32000, 32000, 31748)
    assert r["target_overlap"] == 31960 and r["only_in_a"] == r["only_in_b"] == 40
    assert "lm_head" in r["meaning"] and "own d2t" in r["meaning"]
    same = compare_vocab(demo["k25"], demo["k25"])
    assert same["positions_differ"] == 0 and same["target_overlap"] == 32000


def test_different_sizes_count_as_differing(demo: dict[str, Path], tmp_path: Path) -> None:
    from eagle_console.drafter.safetensors_io import write_file

    small = tmp_path / "small.safetensors"
    write_file(small, {"d2t": np.zeros(100, dtype=np.int64)})
    r = compare_vocab(demo["k25"], small)
    assert r["size_b"] == 100 and r["positions_differ"] >= 31900


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return clikit.run(args, timeout=60)


def test_cli_check_compare_and_errors(demo: dict[str, Path]) -> None:
    p = run_cli("drafter", "check", str(demo["aqmedai"]), "--target", str(demo["target"]), "--json")
    assert p.returncode == 1
    doc = json.loads(p.stdout)
    assert doc["ok"] is False and {"CONTEXT_LENGTH", "NORM_BEFORE_RESIDUAL_UNSET"} <= {f["code"] for f in doc["findings"]}
    p = run_cli("drafter", "check", str(demo["k25"]), "--target", str(demo["target"]))
    assert p.returncode == 0 and "OK" in p.stdout
    p = run_cli("drafter", "compare-vocab", str(demo["k25"]), str(demo["aqmedai"]), "--json")
    assert p.returncode == 0 and json.loads(p.stdout)["positions_differ"] == 31748
    p = run_cli("drafter", "check", str(demo["k25"] / "nope"))
    assert p.returncode == 2 and p.stderr.count("\n") == 1 and "Traceback" not in p.stderr
    p = run_cli("drafter", "compare-vocab", str(demo["target"]), str(demo["k25"]))
    assert p.returncode == 2 and "no *.safetensors" not in p.stderr and "Traceback" not in p.stderr


def test_builtin_validation() -> None:
    assert get_builtin("drafter.check").validate({}) == ["drafter.check needs `path` (the drafter folder)"]
    assert get_builtin("drafter.compare_vocab").validate({"a": "x", "b": "y", "max_mismatch": -1})
    assert get_builtin("drafter.compare_vocab").validate({"a": "x", "b": "y", "max_mismatch": 10}) == []
    assert get_builtin("extraction.verify").validate({"path": "p", "sample": 0})
