"""`drafter check` against what SGLang 0.5.23 really does, on real drafter configs.

The configs in tests/data/drafters/ are copied verbatim from SpecForge and TorchSpec (README there names
repository, path and commit). Each test scales the widths down (hidden 64) so the weights stay small, keeps
every other key as published, and writes a real safetensors file. The rules and their upstream lines are
in docs/upstream.md, "Drafter doctor (SGLang 0.5.23)".
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from eagle_console.drafter.check import check_drafter
from eagle_console.drafter.layouts import is_mla
from eagle_console.sim import drafters as sim

DATA = Path(__file__).parent / "data" / "drafters"


def real(name: str) -> dict[str, Any]:
    return json.loads((DATA / name).read_text())


def scaled(cfg: dict[str, Any]) -> dict[str, Any]:
    """The published config with small widths; fc still reads the real target width (target_hidden_size)."""
    out = {**cfg, "target_hidden_size": cfg.get("target_hidden_size", cfg["hidden_size"])}
    out.update(hidden_size=64, intermediate_size=128, num_attention_heads=4)
    if is_mla(cfg):
        out.update(num_key_value_heads=4, q_lora_rank=32, kv_lora_rank=16, qk_nope_head_dim=8, qk_rope_head_dim=4,
                   v_head_dim=8)
    else:
        out.update(num_key_value_heads=2, head_dim=16)
    return out


def weights(cfg: dict[str, Any]) -> dict[str, Any]:
    """Tensors named as the SGLang exports ship them, d2t and t2d included (tests drop what they test)."""
    rng = np.random.default_rng(7)
    ids = np.sort(rng.choice(cfg["vocab_size"], cfg["draft_vocab_size"], replace=False)).astype(np.int64)
    if is_mla(cfg):
        return sim.mla_draft_tensors(cfg, ids)
    return sim.draft_tensors(cfg, ids)


def codes(r: dict[str, Any], severity: str | None = None) -> set[str]:
    return {f["code"] for f in r["findings"] if severity is None or f["severity"] == severity}


def found(r: dict[str, Any], code: str) -> list[dict[str, Any]]:
    return [f for f in r["findings"] if f["code"] == code]


def write_model(folder: Path, config: dict[str, Any]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(json.dumps(config))
    return folder


@pytest.fixture
def k25(tmp_path: Path) -> Path:
    return sim.write_target(tmp_path / "Kimi-K2.5")


# -- t2d is never read --------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["specforge-kimi-k2-eagle3.json", "torchspec-kimi-k25-eagle3-mla.json"])
def test_d2t_without_t2d_is_a_valid_drafter(tmp_path: Path, k25: Path, name: str) -> None:
    """SGLang skips t2d and builds hot_token_id from d2t alone (llama_eagle3.py, kimi_k25_eagle3.py)."""
    cfg = scaled(real(name))
    cfg.update(draft_vocab_size=32000, max_position_embeddings=262144)  # reduced vocab: d2t is needed
    tensors = weights(cfg)
    del tensors["t2d"]
    r = check_drafter(sim.write_drafter(tmp_path / "d", cfg, tensors), k25, sglang_version="0.5.23")
    assert r["ok"] and codes(r, "error") == set(), r["findings"]
    assert not any("'t2d'" in f["message"] for f in found(r, "MISSING_TENSOR"))
    # without d2t a reduced vocabulary is still an error: draft ids would be taken as target ids
    del tensors["d2t"]
    r = check_drafter(sim.write_drafter(tmp_path / "no-d2t", cfg, tensors), k25, sglang_version="0.5.23")
    assert any("'d2t'" in f["message"] for f in found(r, "MISSING_TENSOR")) and not r["ok"]


# -- aux-hidden-state ids, per target architecture ---------------------------------------------------------

def gpt_oss_120b(tmp_path: Path) -> Path:
    """The target of nvidia/gpt-oss-120b-Eagle3-v3 (36 blocks, width 2880; sglang PR #32334)."""
    return write_model(tmp_path / "gpt-oss-120b", {
        "architectures": ["GptOssForCausalLM"], "model_type": "gpt_oss", "hidden_size": 2880,
        "num_hidden_layers": 36, "vocab_size": 201088, "max_position_embeddings": 131072})


def qwen3_30b_a3b(tmp_path: Path) -> Path:
    return write_model(tmp_path / "Qwen3-30B-A3B", {
        "architectures": ["Qwen3MoeForCausalLM"], "model_type": "qwen3_moe", "hidden_size": 2048,
        "num_hidden_layers": 48, "vocab_size": 151936, "max_position_embeddings": 262144})


def test_gpt_oss_boundary_ids_are_kept(tmp_path: Path) -> None:
    """gpt_oss.py keeps ids whose largest equals the layer count and captures boundary 36 (the final state)."""
    cfg = scaled(real("specforge-gpt-oss-20B-eagle3-dense.json"))
    cfg["eagle_config"]["eagle_aux_hidden_state_layer_ids"] = [24, 30, 36]
    cfg["max_position_embeddings"] = 131072  # the target's context, as json.set would write it
    path = sim.write_drafter(tmp_path / "d", cfg, weights(cfg))
    target = gpt_oss_120b(tmp_path)
    new = check_drafter(path, target, sglang_version="0.5.23")
    assert "AUX_LAYERS" not in codes(new, "error") and "AUX_LAYERS" not in codes(new, "warning"), new["findings"]
    (info,) = found(new, "AUX_LAYERS")
    assert "[24, 30, 36]" in info["message"] and "GptOssForCausalLM" in info["message"]
    # before 0.5.17 gpt-oss added +1 to every id: 37 is past the last block and never captured
    old = check_drafter(path, target, sglang_version="0.5.16")
    (err,) = found(old, "AUX_LAYERS")
    assert err["severity"] == "error" and "[25, 31, 37]" in err["message"] and "0.5.17" in err["message"]


def test_qwen3_target_still_adds_one_to_every_id(tmp_path: Path) -> None:
    """qwen3_moe.py adds +1 to every id in 0.5.23: first-id-2 ids are read one layer late there."""
    cfg = scaled(real("specforge-qwen3-30B-A3B-eagle3.1.json"))
    cfg.pop("fc_norm")
    cfg["eagle_config"] = {"eagle_aux_hidden_state_layer_ids": [2, 24, 45]}
    r = check_drafter(sim.write_drafter(tmp_path / "d", cfg, weights(cfg)), qwen3_30b_a3b(tmp_path),
                      sglang_version="0.5.23")
    (w,) = found(r, "AUX_LAYERS")
    assert w["severity"] == "warning" and "[3, 25, 46] instead of [2, 24, 45]" in w["message"]
    assert "Qwen3MoeForCausalLM" in w["message"] and "[1, 23, 44]" in w["message"]


def test_first_id_rule_on_deepseek_family_from_0_5_13(tmp_path: Path, k25: Path) -> None:
    """PR #25454 is in the 0.5.13 wheel (deepseek_v2.py), not in 0.5.12.post1."""
    cfg = scaled(real("specforge-kimi-k2-eagle3.json"))  # ids [2, 30, 58], first id 2
    cfg["max_position_embeddings"] = 262144
    path = sim.write_drafter(tmp_path / "d", cfg, weights(cfg))
    (ok,) = found(check_drafter(path, k25, sglang_version="0.5.13"), "AUX_LAYERS")
    assert ok["severity"] == "info" and "[2, 30, 58]" in ok["message"]
    (late,) = found(check_drafter(path, k25, sglang_version="0.5.12.post1"), "AUX_LAYERS")
    assert late["severity"] == "warning" and "[3, 31, 59] instead of [2, 30, 58]" in late["message"]


# -- multi-layer drafters ---------------------------------------------------------------------------------

def layer_tensors(cfg: dict[str, Any], i: int) -> dict[str, Any]:
    """Layer i > 0 of llama_eagle3.py: attention over H (not 2H), no embeddings concatenated."""
    rng = np.random.default_rng(i)
    H, nh, nkv, hd, inter = (cfg["hidden_size"], cfg["num_attention_heads"], cfg["num_key_value_heads"],
                             cfg["head_dim"], cfg["intermediate_size"])

    def w(*shape: int) -> tuple[Any, str]:
        return sim._bf16(rng.standard_normal(shape, dtype=np.float32) * 0.02)

    p = f"layers.{i}."
    return {f"{p}self_attn.q_proj.weight": w(nh * hd, H), f"{p}self_attn.k_proj.weight": w(nkv * hd, H),
            f"{p}self_attn.v_proj.weight": w(nkv * hd, H), f"{p}self_attn.o_proj.weight": w(H, nh * hd),
            f"{p}mlp.gate_proj.weight": w(inter, H), f"{p}mlp.up_proj.weight": w(inter, H),
            f"{p}mlp.down_proj.weight": w(H, inter), f"{p}hidden_norm.weight": w(H),
            f"{p}post_attention_layernorm.weight": w(H)}


def test_multi_layer_llama_drafter_builds_from_0_5_12(tmp_path: Path) -> None:
    cfg = scaled(real("specforge-gpt-oss-20B-eagle3-dense.json"))
    cfg["num_hidden_layers"] = 2
    tensors = {**weights(cfg), **layer_tensors(cfg, 1)}
    path = sim.write_drafter(tmp_path / "d", cfg, tensors)
    r = check_drafter(path, sglang_version="0.5.23")
    assert r["ok"] and codes(r, "error") == set(), r["findings"]
    old = check_drafter(path, sglang_version="0.5.11")
    assert not old["ok"] and "only supports 1 layer" in found(old, "CONFIG_INVALID")[0]["message"]
    # the extra layer's weights are checked: an H-wide q_proj, not 2H
    bad = {**tensors, "layers.1.self_attn.q_proj.weight": weights(cfg)["midlayer.self_attn.q_proj.weight"]}
    r = check_drafter(sim.write_drafter(tmp_path / "bad", cfg, bad), sglang_version="0.5.23")
    assert any(f["message"].startswith("layers.1.self_attn.q_proj.weight") for f in found(r, "TENSOR_SHAPE"))
    missing = {k: v for k, v in tensors.items() if not k.startswith("layers.1.mlp.")}
    r = check_drafter(sim.write_drafter(tmp_path / "missing", cfg, missing), sglang_version="0.5.23")
    assert any("layers.1.mlp.down_proj.weight" in f["message"] for f in found(r, "MISSING_TENSOR"))
    assert not r["ok"]


def test_multi_layer_mla_drafter_is_refused(tmp_path: Path) -> None:
    cfg = scaled(real("torchspec-kimi-k25-eagle3-mla.json"))
    cfg.update(num_hidden_layers=2, draft_vocab_size=32000)
    r = check_drafter(sim.write_drafter(tmp_path / "d", cfg, weights(cfg)), sglang_version="0.5.23")
    bad = found(r, "CONFIG_INVALID")
    assert not r["ok"] and "kimi_k25_eagle3.py" in bad[0]["message"] and "only supports 1 layer" in bad[0]["message"]


# -- a missing max_position_embeddings --------------------------------------------------------------------

def test_missing_max_position_embeddings_takes_deepseek_v3_default(tmp_path: Path, k25: Path) -> None:
    """TorchSpec's K2.5 MLA config has no max_position_embeddings: model_type kimi_k2 is read as
    DeepseekV3Config (default 4096, YaRN factor not applied since original_max_position_embeddings is set), and
    the server refuses the draft's 4096 against the target's 262144."""
    cfg = scaled(real("torchspec-kimi-k25-eagle3-mla.json"))
    assert "max_position_embeddings" not in cfg
    cfg["draft_vocab_size"] = 32000  # a d2t drafter: keeps the weights small
    path = sim.write_drafter(tmp_path / "d", cfg, weights(cfg))
    r = check_drafter(path, k25, sglang_version="0.5.23")
    assert "CONFIG_MISSING_FIELD" not in codes(r, "error"), r["findings"]
    (ctx,) = found(r, "CONTEXT_LENGTH")
    assert ctx["severity"] == "error"
    for part in ("4096", "262144", "DeepseekV3Config", "kimi_k2", "model_config.py", "max_position_embeddings"):
        assert part in ctx["message"], part
    # no target: a warning that says what SGLang will take
    r = check_drafter(path, sglang_version="0.5.23")
    (w,) = [f for f in found(r, "CONFIG_MISSING_FIELD") if "max_position_embeddings" in f["message"]]
    assert w["severity"] == "warning" and "4096" in w["message"] and r["ok"]


# -- config keys 0.5.23 knows -----------------------------------------------------------------------------

def test_norm_before_fc_needs_input_norm(tmp_path: Path) -> None:
    """llama_eagle3.py builds input_norm [n_aux x target_hidden] when norm_before_fc is set (0.5.17+)."""
    cfg = scaled(real("specforge-gpt-oss-20B-eagle3-dense.json"))
    cfg["eagle_config"]["norm_before_fc"] = True
    tensors = weights(cfg)
    path = sim.write_drafter(tmp_path / "flag-only", cfg, tensors)
    r = check_drafter(path, sglang_version="0.5.23")
    assert not r["ok"] and "input_norm.weight" in found(r, "MISSING_TENSOR")[0]["message"]
    T = cfg["target_hidden_size"]
    ok = {**tensors, "input_norm.weight": sim._bf16(np.ones(3 * T, dtype=np.float32))}
    good = sim.write_drafter(tmp_path / "good", cfg, ok)
    assert check_drafter(good, sglang_version="0.5.23")["ok"]
    old = check_drafter(good, sglang_version="0.5.16")
    assert not old["ok"] and "norm_before_fc" in found(old, "CONFIG_INVALID")[0]["message"]
    unflagged = {k: v for k, v in cfg.items() if k != "eagle_config"}
    r = check_drafter(sim.write_drafter(tmp_path / "unflagged", unflagged, ok), sglang_version="0.5.23")
    assert any("norm_before_fc" in f["message"] for f in found(r, "CONFIG_MISSING_FIELD")
               if f["severity"] == "warning")


def test_legacy_aux_norm_names_load_as_fc_norm(tmp_path: Path) -> None:
    """llama_eagle3.py maps aux_norm_low/mid/high to fc_norm.0/1/2 on load."""
    cfg = scaled(real("specforge-qwen3-30B-A3B-eagle3.1.json"))  # fc_norm: true, norm_output: true
    legacy = {f"aux_norm_{n}.weight": t for n, t in zip(("low", "mid", "high"),
                                                        sim.fc_norm_tensors(cfg).values(), strict=True)}
    r = check_drafter(sim.write_drafter(tmp_path / "d", cfg, {**weights(cfg), **legacy}), sglang_version="0.5.23")
    assert r["ok"] and codes(r, "error") == set(), r["findings"]


def test_fc_norm_on_llama_layout_needs_0_5_12(tmp_path: Path) -> None:
    """0.5.11's llama_eagle3.py builds no fc_norm: the flag and the weights are ignored without a word."""
    cfg = scaled(real("specforge-qwen3-30B-A3B-eagle3.1.json"))
    path = sim.write_drafter(tmp_path / "d", cfg, {**weights(cfg), **sim.fc_norm_tensors(cfg)})
    assert check_drafter(path, sglang_version="0.5.12")["ok"]
    old = check_drafter(path, sglang_version="0.5.11")
    bad = found(old, "CONFIG_INVALID")
    assert not old["ok"] and "fc_norm" in bad[0]["message"] and "0.5.12" in bad[0]["message"]


def test_fc_norm_on_mla_layout_needs_0_5_13(tmp_path: Path) -> None:
    cfg = scaled(real("torchspec-kimi-k25-eagle3-mla.json"))
    cfg.update(draft_vocab_size=32000, fc_norm=True)
    path = sim.write_drafter(tmp_path / "d", cfg, {**weights(cfg), **sim.fc_norm_tensors(cfg)})
    assert check_drafter(path, sglang_version="0.5.13")["ok"]
    old = check_drafter(path, sglang_version="0.5.12")
    assert not old["ok"] and "0.5.13" in found(old, "CONFIG_INVALID")[0]["message"]


def test_layers0_names_load_from_0_5_12(tmp_path: Path) -> None:
    """The midlayer -> layers.0 map of llama_eagle3.py load_weights is in the 0.5.12 wheel, not in 0.5.11."""
    cfg = scaled(real("specforge-kimi-k2-eagle3.json"))
    renamed = {k.replace("midlayer.", "layers.0."): v for k, v in weights(cfg).items()}
    path = sim.write_drafter(tmp_path / "d", cfg, renamed)
    assert check_drafter(path, sglang_version="0.5.12")["ok"]
    old = check_drafter(path, sglang_version="0.5.11")
    assert not old["ok"] and "layers.0.*" in found(old, "MISSING_TENSOR")[0]["message"]


# -- the demo's step 0.2 --------------------------------------------------------------------------------------

def test_demo_step_0_2_passes_a_d2t_only_mla_drafter(tmp_path: Path) -> None:
    """`eagle-console demo`'s step 0.2 (json.set, then the drafter.check check) run by the engine on the demo's
    drafter: the K2.x MLA layout with d2t and no t2d, as the public MLA drafters ship."""
    from enginekit import engine_for

    from eagle_console.demo.build import build_demo
    from eagle_console.drafter.checkpoint import load_checkpoint

    plan = build_demo(tmp_path / "demo", orphans=0)
    drafter = tmp_path / "demo" / "drafters" / "AQ-MedAI-Kimi-K2-Instruct-eagle3"
    ckpt = load_checkpoint(drafter)
    assert is_mla(ckpt.config) and "d2t" in ckpt.tensors and "t2d" not in ckpt.tensors
    eng = engine_for(plan)
    run = eng.wait(eng.start("0.2"), timeout=60)
    log = Path(run.log).read_text()
    assert run.exit_code == 0 and run.outcome == "completed", log
    assert eng.journal.statuses()["0.2"] == "completed", log
