"""`drafter check`: one real safetensors drafter per finding code, written by the test."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from eagle_console.drafter.check import check_drafter, is_eagle3
from eagle_console.drafter.safetensors_io import read_header
from eagle_console.sim import drafters as sim


def codes(result: dict[str, Any], severity: str | None = None) -> set[str]:
    return {f["code"] for f in result["findings"] if severity is None or f["severity"] == severity}


@pytest.fixture
def target(tmp_path: Path) -> Path:
    return sim.write_target(tmp_path / "Kimi-K2.5")


@pytest.fixture
def make(tmp_path: Path) -> Callable[..., Path]:
    def _make(cfg_edit: Callable[[dict], None] | None = None, tensor_edit: Callable[[dict], None] | None = None,
              shards: int = 1, name: str = "drafter") -> Path:
        cfg = sim.draft_config()
        if cfg_edit:
            cfg_edit(cfg)
        tensors = sim.draft_tensors(sim.draft_config(), sim.k25_target_ids())
        if tensor_edit:
            tensor_edit(tensors)
        return sim.write_drafter(tmp_path / name, cfg, tensors, shards=shards)
    return _make


def test_good_drafter_is_ok_and_reports_convention(make: Callable[..., Path], target: Path) -> None:
    r = check_drafter(make(), target, values=True)
    assert r["ok"] and codes(r, "error") == set() and codes(r, "warning") == set()
    assert r["tensors"] == 15 and r["config"]["draft_vocab_size"] == 32000
    aux = next(f for f in r["findings"] if f["code"] == "AUX_LAYERS")
    assert aux["severity"] == "info" and "output of block" in aux["message"]


def test_missing_config_and_weights(tmp_path: Path) -> None:
    (tmp_path / "d").mkdir()
    assert codes(check_drafter(tmp_path / "d")) == {"MISSING_FILE"}
    (tmp_path / "d" / "config.json").write_text(json.dumps(sim.draft_config()))
    r = check_drafter(tmp_path / "d")
    assert not r["ok"] and "MISSING_FILE" in codes(r, "error")


def test_invalid_config_gives_line_and_column(tmp_path: Path) -> None:
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "config.json").write_text('{\n  "hidden_size": 64,\n  oops\n}')
    r = check_drafter(tmp_path / "d")
    assert not r["ok"] and f"{tmp_path / 'd' / 'config.json'}:3:3:" in r["findings"][0]["message"]


def test_config_missing_field(make: Callable[..., Path]) -> None:
    r = check_drafter(make(lambda c: c.pop("intermediate_size")))
    assert "CONFIG_MISSING_FIELD" in codes(r, "error") and not r["ok"]


def test_missing_tensor(make: Callable[..., Path]) -> None:
    r = check_drafter(make(tensor_edit=lambda t: t.pop("fc.weight")))
    msgs = [f["message"] for f in r["findings"] if f["code"] == "MISSING_TENSOR"]
    assert msgs and "fc.weight" in msgs[0] and not r["ok"]


def test_missing_d2t_is_missing_tensor(make: Callable[..., Path]) -> None:
    r = check_drafter(make(tensor_edit=lambda t: t.pop("d2t")))
    assert any("d2t" in f["message"] for f in r["findings"] if f["code"] == "MISSING_TENSOR")


def test_tensor_shape(make: Callable[..., Path]) -> None:
    r = check_drafter(make(lambda c: c.update(intermediate_size=256)))
    shapes = [f["message"] for f in r["findings"] if f["code"] == "TENSOR_SHAPE"]
    assert len(shapes) == 3 and any("mlp.down_proj" in m for m in shapes)


def test_d2t_shape_and_dtype(make: Callable[..., Path]) -> None:
    r = check_drafter(make(tensor_edit=lambda t: t.update(d2t=t["d2t"][:31000])))
    assert "D2T_SHAPE" in codes(r, "error")
    r = check_drafter(make(tensor_edit=lambda t: t.update(d2t=t["d2t"].astype(np.int32)), name="i32"))
    assert "D2T_SHAPE" in codes(r, "error")


def test_t2d_shape(make: Callable[..., Path]) -> None:
    r = check_drafter(make(tensor_edit=lambda t: t.update(t2d=t["t2d"][:129280])))
    assert "T2D_SHAPE" in codes(r, "error")


def test_vocab_mapping_inconsistent(make: Callable[..., Path]) -> None:
    def flip(t: dict) -> None:
        t2d = t["t2d"].copy()
        first = int(np.flatnonzero(t2d)[0])
        t2d[first] = False
        t["t2d"] = t2d
    r = check_drafter(make(tensor_edit=flip))
    assert codes(r, "error") == {"VOCAB_MAPPING_INCONSISTENT"}


def test_d2t_out_of_range(make: Callable[..., Path]) -> None:
    def push(t: dict) -> None:
        d2t = t["d2t"].copy()
        d2t[-1] += 200000
        t["d2t"] = d2t
    r = check_drafter(make(tensor_edit=push))
    assert "D2T_OUT_OF_RANGE" in codes(r, "error") and "VOCAB_MAPPING_INCONSISTENT" not in codes(r)


def test_target_vocab_and_hidden_size(make: Callable[..., Path], tmp_path: Path) -> None:
    other = tmp_path / "DeepSeek-V3"
    other.mkdir()
    (other / "config.json").write_text(json.dumps({"hidden_size": 4096, "num_hidden_layers": 61,
                                                   "vocab_size": 129280, "max_position_embeddings": 163840}))
    r = check_drafter(make(), other)
    assert {"TARGET_VOCAB", "TARGET_HIDDEN_SIZE"} <= codes(r, "error")


def test_context_length_names_the_fix(make: Callable[..., Path], target: Path) -> None:
    r = check_drafter(make(lambda c: c.update(max_position_embeddings=131072)), target)
    ctx = next(f for f in r["findings"] if f["code"] == "CONTEXT_LENGTH")
    assert ctx["severity"] == "error" and "262144" in ctx["message"] and "max_position_embeddings" in ctx["message"]
    # rope_scaling.factor counts, as SGLang's derivation does
    r = check_drafter(make(lambda c: c.update(max_position_embeddings=131072, rope_scaling={"type": "yarn", "factor": 2.0}),
                           name="yarn"), target)
    assert "CONTEXT_LENGTH" not in codes(r)


def test_aux_layers_out_of_range_says_convention(make: Callable[..., Path], target: Path) -> None:
    r = check_drafter(make(lambda c: c["eagle_config"].update(eagle_aux_hidden_state_layer_ids=[2, 46, 61])), target)
    aux = next(f for f in r["findings"] if f["code"] == "AUX_LAYERS")
    assert aux["severity"] == "error" and "[61]" in aux["message"] and "convention" in aux["message"]
    r = check_drafter(make(lambda c: c["eagle_config"].update(eagle_aux_hidden_state_layer_ids=[2, 30, 58]),
                           name="conv2"), target)
    aux = next(f for f in r["findings"] if f["code"] == "AUX_LAYERS")
    assert aux["severity"] == "info" and "input to layer" in aux["message"]


def test_norm_before_residual_unset_is_info_naming_vllm(make: Callable[..., Path]) -> None:
    """No SGLang reads the key (SpecForge's own configs leave it out): information naming vLLM, not a warning."""
    r = check_drafter(make(lambda c: c.pop("norm_before_residual")), sglang_version="0.5.14")
    nbr = next(f for f in r["findings"] if f["code"] == "NORM_BEFORE_RESIDUAL_UNSET")
    assert nbr["severity"] == "info" and "vLLM" in nbr["message"] and "SGLang 0.5.14" in nbr["message"]
    assert r["ok"] and codes(r, "warning") == set()


def test_nonfinite_weights_only_with_values(make: Callable[..., Path]) -> None:
    def poison(t: dict) -> None:
        bits, dtype = t["lm_head.weight"]
        bits = bits.copy()
        bits[3, 5] = 0x7FC0  # bfloat16 NaN
        t["lm_head.weight"] = (bits, dtype)
    path = make(tensor_edit=poison)
    assert "NONFINITE_WEIGHTS" not in codes(check_drafter(path))
    r = check_drafter(path, values=True)
    bad = next(f for f in r["findings"] if f["code"] == "NONFINITE_WEIGHTS")
    assert "lm_head.weight (1)" in bad["message"] and not r["ok"]


def test_sharded_checkpoint(make: Callable[..., Path], target: Path) -> None:
    path = make(shards=3)
    assert (path / "model.safetensors.index.json").exists() and not (path / "model.safetensors").exists()
    r = check_drafter(path, target)
    assert r["ok"] and r["tensors"] == 15
    (path / "model-00002-of-00003.safetensors").unlink()
    r = check_drafter(path, target)
    assert "MISSING_FILE" in codes(r, "error") and "MISSING_TENSOR" in codes(r, "error")


def test_reads_files_written_by_the_safetensors_library(tmp_path: Path) -> None:
    from safetensors.numpy import save_file

    f = tmp_path / "x.safetensors"
    save_file({"a": np.zeros((3, 4), np.float16), "d2t": np.arange(5, dtype=np.int64)}, str(f))
    tensors, _ = read_header(f)
    assert tensors["a"].dtype == "F16" and tensors["a"].shape == (3, 4)
    assert tensors["d2t"].dtype == "I64" and tensors["d2t"].nbytes == 40


def test_is_eagle3() -> None:
    assert is_eagle3(sim.draft_config())
    assert not is_eagle3({"architectures": ["LlamaForCausalLM"], "hidden_size": 4096})
    assert is_eagle3({"speculators_model_type": "eagle3", "transformer_layer_config": {"hidden_size": 8}})
