"""`drafter check` as SGLang really loads drafters (issue #16): real safetensors drafters written by the tests,
judged against a given SGLang version (docs/upstream.md, "Drafter doctor")."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import clikit
import pytest

from eagle_console.drafter.check import check_drafter
from eagle_console.engine.builtins import get_builtin
from eagle_console.engine.builtins.base import ActionContext
from eagle_console.sim import drafters as sim


def codes(result: dict[str, Any], severity: str | None = None) -> set[str]:
    return {f["code"] for f in result["findings"] if severity is None or f["severity"] == severity}


def finding(result: dict[str, Any], code: str) -> dict[str, Any]:
    return next(f for f in result["findings"] if f["code"] == code)


@pytest.fixture
def target(tmp_path: Path) -> Path:
    return sim.write_target(tmp_path / "Kimi-K2.5")


@pytest.fixture
def write(tmp_path: Path) -> Callable[..., Path]:
    def _write(cfg: dict[str, Any], tensors: dict[str, Any], name: str = "drafter") -> Path:
        return sim.write_drafter(tmp_path / name, cfg, tensors)
    return _write


def llama(cfg_edit: Callable[[dict], None] | None = None) -> tuple[dict[str, Any], dict[str, Any]]:
    cfg = sim.draft_config()
    tensors = sim.draft_tensors(cfg, sim.k25_target_ids())
    if cfg_edit:
        cfg_edit(cfg)
    return cfg, tensors


def test_mla_drafter_layout_is_ok(write: Callable[..., Path], target: Path) -> None:
    cfg = sim.mla_draft_config()
    r = check_drafter(write(cfg, sim.mla_draft_tensors(cfg, sim.k25_target_ids())), target, sglang_version="0.5.14")
    assert r["ok"] and codes(r, "error") == set() and codes(r, "warning") == set(), r["findings"]
    assert r["tensors"] == 18 and "input to layer" in finding(r, "AUX_LAYERS")["message"]


def test_mla_shape_table_follows_lora_ranks_and_head_dims(write: Callable[..., Path], target: Path) -> None:
    cfg = sim.mla_draft_config()
    tensors = sim.mla_draft_tensors(cfg, sim.k25_target_ids())
    cfg["kv_lora_rank"] = 24  # config no longer describes kv_a_proj_with_mqa, kv_a_layernorm, kv_b_proj
    r = check_drafter(write(cfg, tensors), target, sglang_version="0.5.14")
    shapes = sorted(f["message"].split(" ")[0] for f in r["findings"] if f["code"] == "TENSOR_SHAPE")
    assert shapes == ["layers.0.self_attn.kv_a_layernorm.weight", "layers.0.self_attn.kv_a_proj_with_mqa.weight",
                      "layers.0.self_attn.kv_b_proj.weight"]
    # kv_lora + rope = 24 + 4 rows over 2H = 128 columns (cat(embeds, hidden))
    assert any("implies [28, 128]" in f["message"] for f in r["findings"] if f["code"] == "TENSOR_SHAPE")


def test_mla_drafter_needs_sglang_0_5_12(write: Callable[..., Path]) -> None:
    cfg = sim.mla_draft_config()
    path = write(cfg, sim.mla_draft_tensors(cfg, sim.k25_target_ids()))
    r = check_drafter(path, sglang_version="0.5.11")
    bad = finding(r, "CONFIG_INVALID")
    assert not r["ok"] and "Eagle3DeepseekV2ForCausalLM" in bad["message"] and "SGLang 0.5.11" in bad["message"]


def test_61_layers_is_refused_before_0_5_12_and_unloaded_after(write: Callable[..., Path]) -> None:
    """A target's config.json copied over the drafter's: 0.5.11 refuses 61 layers; 0.5.12+ builds them
    (llama_eagle3.py) and 60 of them find no weights."""
    cfg, tensors = llama(lambda c: c.update(num_hidden_layers=61))
    path = write(cfg, tensors)
    r = check_drafter(path, sglang_version="0.5.11")
    bad = finding(r, "CONFIG_INVALID")
    assert not r["ok"] and bad["severity"] == "error" and "only supports 1 layer" in bad["message"]
    assert "SGLang 0.5.11" in bad["message"]
    r = check_drafter(path, sglang_version="0.5.14")
    warn = finding(r, "CONFIG_INVALID")
    assert warn["severity"] == "warning" and "copied" in warn["message"]
    (missing,) = [f for f in r["findings"] if f["code"] == "MISSING_TENSOR"]  # one finding, not 540
    assert not r["ok"] and "540 tensors of decoder layers 1-60" in missing["message"]


@pytest.mark.parametrize("declared", [False, True])
def test_full_vocab_drafter_loads(write: Callable[..., Path], target: Path, declared: bool) -> None:
    cfg = sim.draft_config()
    tensors = sim.full_vocab_tensors(cfg)
    if declared:
        cfg["draft_vocab_size"] = cfg["vocab_size"]
    else:
        cfg.pop("draft_vocab_size")
    r = check_drafter(write(cfg, tensors), target, sglang_version="0.5.14")
    assert r["ok"] and codes(r, "error") == set() and codes(r, "warning") == set(), r["findings"]
    assert "full-vocabulary" in finding(r, "D2T_SHAPE")["message"]


def test_specforge_config_gets_information_not_a_warning(write: Callable[..., Path], target: Path) -> None:
    """The keys of SpecForge's configs/deepseek-v3-671b-eagle3.json (no norm_before_residual), at small size."""
    cfg, tensors = llama(lambda c: (c.pop("norm_before_residual"), c.update(
        initializer_range=0.02, use_cache=True, transformers_version="4.51.0", bos_token_id=163584)))
    r = check_drafter(write(cfg, tensors), target, sglang_version="0.5.12")
    nbr = finding(r, "NORM_BEFORE_RESIDUAL_UNSET")
    assert nbr["severity"] == "info" and "vLLM" in nbr["message"] and "SGLang 0.5.12" in nbr["message"]
    assert r["ok"] and codes(r, "warning") == set()


def test_fc_norm_flag_without_its_tensors_is_an_error(write: Callable[..., Path]) -> None:
    cfg, tensors = llama(lambda c: c.update(fc_norm=True, norm_output=True))
    r = check_drafter(write(cfg, tensors), sglang_version="0.5.14")
    bad = finding(r, "MISSING_TENSOR")
    assert not r["ok"] and "fc_norm.0.weight, fc_norm.1.weight, fc_norm.2.weight" in bad["message"]
    r = check_drafter(write(cfg, {**tensors, **sim.fc_norm_tensors(cfg)}, name="with"), sglang_version="0.5.14")
    assert r["ok"] and codes(r, "error") == set()
    legacy = {k: v for k, v in cfg.items() if k != "fc_norm"}
    r = check_drafter(write({**legacy, "use_aux_norm": True}, tensors, name="legacy"), sglang_version="0.5.14")
    assert "MISSING_TENSOR" in codes(r, "error")
    r = check_drafter(write(legacy, {**tensors, **sim.fc_norm_tensors(cfg)}, name="unflagged"), sglang_version="0.5.14")
    assert "fc_norm" in finding(r, "CONFIG_MISSING_FIELD")["message"] and "CONFIG_MISSING_FIELD" in codes(r, "warning")


def aux(r: dict[str, Any]) -> list[dict[str, Any]]:
    return [f for f in r["findings"] if f["code"] == "AUX_LAYERS"]


def test_aux_ids_are_judged_per_sglang_version(write: Callable[..., Path], target: Path) -> None:
    cfg, tensors = llama(lambda c: c["eagle_config"].update(eagle_aux_hidden_state_layer_ids=[2, 30, 58]))
    path = write(cfg, tensors)
    old = check_drafter(path, target, sglang_version="0.5.12")
    (w,) = aux(old)
    assert w["severity"] == "warning" and "SGLang 0.5.12" in w["message"]
    assert "[3, 31, 59] instead of [2, 30, 58]" in w["message"] and "[1, 29, 57]" in w["message"]
    new = check_drafter(path, target, sglang_version="0.5.14")
    assert [f["severity"] for f in aux(new)] == ["info"] and "SGLang 0.5.14" in aux(new)[0]["message"]
    unknown = check_drafter(path, sglang_version=None, python=str(Path(sys.executable).parent / "no-python"))
    assert codes(unknown, "warning") == set()  # newest behaviour assumed, and said so in what it reports
    # SpecForge's [1, 29, 57]: +1 in every version, the same layers
    spec = write(*llama(), name="specforge")
    for version in ("0.5.10", "0.5.14"):
        (f,) = aux(check_drafter(spec, target, sglang_version=version))
        assert f["severity"] == "info" and "[2, 30, 58]" in f["message"] and f"SGLang {version}" in f["message"]


def test_layers0_names_are_not_loaded_before_0_5_12(write: Callable[..., Path]) -> None:
    """The midlayer -> layers.0 map is in the 0.5.12 wheel's llama_eagle3.py, not in 0.5.11's."""
    cfg, tensors = llama()
    renamed = {k.replace("midlayer.", "layers.0."): v for k, v in tensors.items()}
    path = write(cfg, renamed)
    r = check_drafter(path, sglang_version="0.5.11")
    assert not r["ok"] and "layers.0.*" in finding(r, "MISSING_TENSOR")["message"]
    assert "SGLang 0.5.11" in finding(r, "MISSING_TENSOR")["message"]
    assert check_drafter(path, sglang_version="0.5.12")["ok"]


def test_fc_width_follows_the_aux_id_count_from_0_5_12(write: Callable[..., Path], target: Path) -> None:
    import numpy as np

    cfg, tensors = llama(lambda c: c["eagle_config"].update(eagle_aux_hidden_state_layer_ids=[1, 15, 29, 57]))
    H, T = cfg["hidden_size"], cfg["target_hidden_size"]
    tensors["fc.weight"] = sim._bf16(np.zeros((H, 4 * T), dtype=np.float32))
    path = write(cfg, tensors)
    assert check_drafter(path, target, sglang_version="0.5.12")["ok"]
    r = check_drafter(path, target, sglang_version="0.5.11")
    shape = finding(r, "TENSOR_SHAPE")["message"]
    assert not r["ok"] and shape.startswith("fc.weight") and f"[{H}, {3 * T}]" in shape and "SGLang 0.5.11" in shape
    assert any(f["severity"] == "warning" and "reads 3" in f["message"] for f in aux(r))


def test_k25_target_needs_0_5_10(write: Callable[..., Path], target: Path) -> None:
    path = write(*llama())
    r = check_drafter(path, target, sglang_version="0.5.9")
    assert not r["ok"] and "0.5.10" in finding(r, "ALGORITHM")["message"]
    assert "ALGORITHM" not in codes(check_drafter(path, target, sglang_version="0.5.10"))


def test_version_is_read_from_the_launch_interpreter(write: Callable[..., Path], target: Path, tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """A real interpreter reads real package metadata (a dist-info folder on its path), as importlib does."""
    site = tmp_path / "site"
    (site / "sglang-0.5.9.dist-info").mkdir(parents=True)
    (site / "sglang-0.5.9.dist-info" / "METADATA").write_text("Metadata-Version: 2.1\nName: sglang\nVersion: 0.5.9\n")
    monkeypatch.setenv("PYTHONPATH", f"{site}:{Path(__file__).parents[1]}")
    r = check_drafter(write(*llama()), target, python=sys.executable)
    alg = finding(r, "ALGORITHM")
    assert alg["severity"] == "error" and f"SGLang 0.5.9 (installed for {sys.executable})" in alg["message"]


def test_cli_flag_and_builtin_key(write: Callable[..., Path], target: Path, tmp_path: Path,
                                  capsys: pytest.CaptureFixture[str]) -> None:
    cfg, tensors = llama(lambda c: c["eagle_config"].update(eagle_aux_hidden_state_layer_ids=[2, 30, 58]))
    path = write(cfg, tensors)
    p = clikit.run(["drafter", "check", path, "--target", target, "--sglang-version", "0.5.12", "--json"], timeout=60)
    assert p.returncode == 0 and "SGLang 0.5.12" in aux(json.loads(p.stdout))[0]["message"]
    builtin = get_builtin("drafter.check")
    assert builtin.validate({"path": "x", "sglang_version": "0.5.14", "python": "/usr/bin/python3"}) == []
    assert builtin.validate({"path": "x", "sglang_version": "latest"})
    ctx = ActionContext(step_id="1", args={"path": str(path), "target": str(target), "sglang_version": "0.5.12"},
                        state_dir=tmp_path, artifacts=tmp_path / "a", folder=tmp_path)
    assert builtin.run(ctx) == 0
    assert "WARNING AUX_LAYERS" in capsys.readouterr().out
