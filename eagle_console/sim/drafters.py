"""Small EAGLE-3 drafters with the real layout (reference/eagle3-drafters.md §1), and a Kimi-K2.5-like target
model folder (config only).

Dimensions of the draft layer are scaled down (hidden 64) but everything `drafter check` compares is real:
key names, the config fields, fc's input width 3 x 7168 of the target, and d2t/t2d at full Kimi size
(int64[32000] / bool[163840]). The AQ-MedAI-like drafter (the one the demo's step 0.2 checks) differs from the
K2.5 one as the operators found: max_position_embeddings 131072, norm_before_residual unset, and a d2t that maps
31,748 of 32,000 draft ids to other target tokens (40 tokens swapped out early in the sorted list shift every
later position). It has the K2.x MLA layout (`Eagle3DeepseekV2ForCausalLM`, model_type kimi_k2, `layers.0.*`)
and ships d2t without t2d, as the public MLA drafters do: SGLang reads only d2t.

    python -m eagle_console.sim.drafters --out DIR
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from eagle_console.drafter.safetensors_io import write_file

TARGET_VOCAB = 163840
TARGET_HIDDEN = 7168
TARGET_LAYERS = 61
TARGET_CONTEXT = 262144
DRAFT_VOCAB = 32000
SAME_PREFIX = 252  # positions that keep the same target token in the AQ-MedAI-like mapping
SWAPPED = 40

SMALL_DIMS = {"hidden_size": 64, "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16,
              "intermediate_size": 128}


def target_config() -> dict[str, Any]:
    """A Kimi-K2.5-like model config.json: multimodal wrapper with the DeepSeek-V3 text model nested."""
    return {
        "architectures": ["KimiK25ForConditionalGeneration"],
        "model_type": "kimi_k25",
        "media_placeholder_token_id": 163605,
        "text_config": {
            "architectures": ["DeepseekV3ForCausalLM"],
            "model_type": "deepseek_v3",
            "hidden_size": TARGET_HIDDEN,
            "num_hidden_layers": TARGET_LAYERS,
            "num_attention_heads": 64,
            "n_routed_experts": 384,
            "n_shared_experts": 1,
            "num_experts_per_tok": 8,
            "moe_intermediate_size": 2048,
            "vocab_size": TARGET_VOCAB,
            "max_position_embeddings": TARGET_CONTEXT,
            "bos_token_id": 163584,
            "eos_token_id": 163585,
            "pad_token_id": 163839,
        },
    }


def write_target(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(json.dumps(target_config(), indent=2) + "\n")
    return folder


def k25_target_ids() -> Any:
    """The sorted target ids of the K2.5 drafter's draft vocabulary (deterministic)."""
    import numpy as np

    rng = np.random.default_rng(2025)
    return np.sort(rng.choice(TARGET_VOCAB - 4000, DRAFT_VOCAB, replace=False)).astype(np.int64)


def aqmedai_target_ids() -> Any:
    """K2.5's set with SWAPPED ids removed right after position SAME_PREFIX and as many new high ids added:
    the sets overlap almost fully, yet every position from SAME_PREFIX on maps to another token."""
    import numpy as np

    base = k25_target_ids()
    kept = np.concatenate([base[:SAME_PREFIX], base[SAME_PREFIX + SWAPPED:]])
    added = TARGET_VOCAB - 4000 + np.arange(SWAPPED, dtype=np.int64) * 7  # above every id of `base`
    return np.sort(np.concatenate([kept, added]))


def draft_config(max_position_embeddings: int = TARGET_CONTEXT, norm_before_residual: bool | None = False,
                 aux_ids: list[int] | None = None, **overrides: Any) -> dict[str, Any]:
    cfg: dict[str, Any] = {
        "architectures": ["LlamaForCausalLMEagle3"],
        "model_type": "llama",
        "num_hidden_layers": 1,
        **SMALL_DIMS,
        "target_hidden_size": TARGET_HIDDEN,
        "max_position_embeddings": max_position_embeddings,
        "rms_norm_eps": 1e-05,
        "hidden_act": "silu",
        "vocab_size": TARGET_VOCAB,
        "draft_vocab_size": DRAFT_VOCAB,
        "tie_word_embeddings": False,
        "torch_dtype": "bfloat16",
        "eagle_config": {"eagle_aux_hidden_state_layer_ids": aux_ids or [1, 29, 57], "use_aux_hidden_state": True},
    }
    if norm_before_residual is not None:
        cfg["norm_before_residual"] = norm_before_residual
    cfg.update(overrides)
    return cfg


def _bf16(values: Any) -> tuple[Any, str]:
    import numpy as np

    bits = np.asarray(values, dtype=np.float32).view(np.uint32)
    return ((bits >> 16).astype(np.uint16), "BF16")


def draft_tensors(cfg: dict[str, Any], target_ids: Any, seed: int = 0) -> dict[str, Any]:
    """Tensors named and shaped as SpecForge's SGLang export (no embed_tokens), bf16 weights."""
    import numpy as np

    rng = np.random.default_rng(seed)
    H, nh, nkv, hd = cfg["hidden_size"], cfg["num_attention_heads"], cfg["num_key_value_heads"], cfg["head_dim"]
    inter, T, V, Vd = cfg["intermediate_size"], cfg["target_hidden_size"], cfg["vocab_size"], cfg["draft_vocab_size"]

    def w(*shape: int) -> tuple[Any, str]:
        return _bf16(rng.standard_normal(shape, dtype=np.float32) * 0.02)

    ones = _bf16(np.ones(H, dtype=np.float32))
    t2d = np.zeros(V, dtype=np.bool_)
    t2d[target_ids] = True
    return {
        "midlayer.self_attn.q_proj.weight": w(nh * hd, 2 * H),
        "midlayer.self_attn.k_proj.weight": w(nkv * hd, 2 * H),
        "midlayer.self_attn.v_proj.weight": w(nkv * hd, 2 * H),
        "midlayer.self_attn.o_proj.weight": w(H, nh * hd),
        "midlayer.mlp.gate_proj.weight": w(inter, H),
        "midlayer.mlp.up_proj.weight": w(inter, H),
        "midlayer.mlp.down_proj.weight": w(H, inter),
        "midlayer.hidden_norm.weight": ones,
        "midlayer.input_layernorm.weight": ones,
        "midlayer.post_attention_layernorm.weight": ones,
        "fc.weight": w(H, 3 * T),
        "norm.weight": ones,
        "lm_head.weight": w(Vd, H),
        "d2t": (np.asarray(target_ids, dtype=np.int64) - np.arange(Vd, dtype=np.int64)),
        "t2d": t2d,
    }


MLA_DIMS = {"hidden_size": 64, "num_attention_heads": 4, "num_key_value_heads": 4, "intermediate_size": 128,
            "q_lora_rank": 32, "kv_lora_rank": 16, "qk_nope_head_dim": 8, "qk_rope_head_dim": 4, "v_head_dim": 8}


def mla_draft_config(aux_ids: list[int] | None = None, **overrides: Any) -> dict[str, Any]:
    """The layout of the public Kimi-K2.5 MLA drafters (SGLang `Eagle3DeepseekV2ForCausalLM`,
    models/kimi_k25_eagle3.py): DeepSeek-V2 attention with LoRA ranks and split head dims, aux ids in the
    'input to layer i' convention (first id 2), norm_before_residual unset."""
    cfg = draft_config(norm_before_residual=None, aux_ids=aux_ids or [2, 30, 58], **overrides)
    cfg.pop("head_dim")
    cfg.update({"architectures": ["Eagle3DeepseekV2ForCausalLM"], "model_type": "deepseek_v3", **MLA_DIMS,
                **overrides})
    return cfg


def mla_draft_tensors(cfg: dict[str, Any], target_ids: Any, seed: int = 0, prefix: str = "layers.0.") -> dict[str, Any]:
    """MLA drafter tensors named as the checkpoints ship them (`layers.0.*`, q_a/q_b/kv_a_proj_with_mqa/kv_b)."""
    import numpy as np

    rng = np.random.default_rng(seed)
    H, nh = cfg["hidden_size"], cfg["num_attention_heads"]
    q_lora, kv_lora = cfg["q_lora_rank"], cfg["kv_lora_rank"]
    nope, rope, v = cfg["qk_nope_head_dim"], cfg["qk_rope_head_dim"], cfg["v_head_dim"]

    def w(*shape: int) -> tuple[Any, str]:
        return _bf16(rng.standard_normal(shape, dtype=np.float32) * 0.02)

    base = {k: t for k, t in draft_tensors({**cfg, "head_dim": 16}, target_ids, seed).items()
            if ".self_attn." not in k}
    out = {k.replace("midlayer.", prefix): t for k, t in base.items()}
    a = f"{prefix}self_attn."
    out.update({
        f"{a}q_a_proj.weight": w(q_lora, 2 * H),
        f"{a}q_a_layernorm.weight": _bf16(np.ones(q_lora, dtype=np.float32)),
        f"{a}q_b_proj.weight": w(nh * (nope + rope), q_lora),
        f"{a}kv_a_proj_with_mqa.weight": w(kv_lora + rope, 2 * H),
        f"{a}kv_a_layernorm.weight": _bf16(np.ones(kv_lora, dtype=np.float32)),
        f"{a}kv_b_proj.weight": w(nh * (nope + v), kv_lora),
        f"{a}o_proj.weight": w(H, nh * v),
    })
    return out


def full_vocab_tensors(cfg: dict[str, Any], seed: int = 0) -> dict[str, Any]:
    """A full-vocabulary drafter's tensors: lm_head over the whole target vocabulary, no d2t/t2d."""
    import numpy as np

    tensors = draft_tensors({**cfg, "draft_vocab_size": cfg["vocab_size"]}, np.arange(cfg["vocab_size"]), seed)
    del tensors["d2t"], tensors["t2d"]
    return tensors


def fc_norm_tensors(cfg: dict[str, Any], n: int = 3) -> dict[str, Any]:
    """EAGLE-3.1 `fc_norm.{i}.weight`, one RMSNorm weight of the target's width per aux chunk."""
    import numpy as np

    return {f"fc_norm.{i}.weight": _bf16(np.ones(cfg["target_hidden_size"], dtype=np.float32)) for i in range(n)}


def write_drafter(folder: Path, cfg: dict[str, Any], tensors: dict[str, Any], shards: int = 1) -> Path:
    """config.json plus model.safetensors, or `shards` files with a model.safetensors.index.json."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(json.dumps(cfg, indent=2) + "\n")
    if shards <= 1:
        write_file(folder / "model.safetensors", tensors, metadata={"format": "pt"})
        return folder
    names = list(tensors)
    weight_map: dict[str, str] = {}
    for i in range(shards):
        part = names[i::shards]
        fname = f"model-{i + 1:05d}-of-{shards:05d}.safetensors"
        write_file(folder / fname, {n: tensors[n] for n in part}, metadata={"format": "pt"})
        weight_map.update({n: fname for n in part})
    index = {"metadata": {"total_size": 0}, "weight_map": weight_map}
    (folder / "model.safetensors.index.json").write_text(json.dumps(index, indent=2) + "\n")
    return folder


def build(root: Path) -> dict[str, Path]:
    """The demo's target folder and two drafters under `root`."""
    root = Path(root)
    target = write_target(root / "Kimi-K2.5")
    k25_cfg = draft_config()
    k25 = write_drafter(root / "kimi-k25-eagle3", k25_cfg, draft_tensors(k25_cfg, k25_target_ids(), seed=1))
    aq_cfg = mla_draft_config(max_position_embeddings=131072, model_type="kimi_k2")
    aq_tensors = mla_draft_tensors(aq_cfg, aqmedai_target_ids(), seed=2)
    del aq_tensors["t2d"]  # d2t only: SGLang never reads t2d
    aq = write_drafter(root / "AQ-MedAI-Kimi-K2-Instruct-eagle3", aq_cfg, aq_tensors)
    return {"target": target, "k25": k25, "aqmedai": aq}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m eagle_console.sim.drafters", description=__doc__.split("\n")[0])
    parser.add_argument("--out", required=True, help="folder to write the target config and drafters into")
    args = parser.parse_args(argv)
    for name, path in build(Path(args.out)).items():
        print(f"{name}\t{path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
