"""The tensors SGLang's EAGLE-3 draft models expect, with shapes derived from config.json.

Two layouts (docs/upstream.md, "Drafter doctor"):
- `LlamaForCausalLMEagle3` (models/llama_eagle3.py): GQA attention over cat(embeds, hidden), width 2H.
- `Eagle3DeepseekV2ForCausalLM` (models/kimi_k25_eagle3.py): DeepSeek-V2 multi-latent attention; q_a_proj and
  kv_a_proj_with_mqa read 2H (they are fused on load), the rest is MLA as in models/deepseek_v2.py.
"""

from __future__ import annotations

from typing import Any

MLA_ARCHITECTURES = ("Eagle3DeepseekV2ForCausalLM",)
MLA_FIELDS = ("q_lora_rank", "kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim")

Dims = dict[str, Any]
Shape = tuple[Any, ...]


def is_mla(cfg: dict[str, Any]) -> bool:
    archs = [str(a) for a in cfg.get("architectures") or []]
    return any(a in MLA_ARCHITECTURES for a in archs)


def _mul(*xs: int | None) -> int | None:
    out = 1
    for x in xs:
        if x is None:
            return None
        out *= x
    return out


def _add(*xs: int | None) -> int | None:
    return None if any(x is None for x in xs) else sum(xs)  # type: ignore[arg-type]


def common_shapes(d: Dims, p: str) -> dict[str, Shape]:
    """The MLP, the three norms, the final norm and lm_head: the same in both layouts."""
    H, inter = d["H"], d["I"]
    return {
        f"{p}mlp.gate_proj.weight": (inter, H),
        f"{p}mlp.up_proj.weight": (inter, H),
        f"{p}mlp.down_proj.weight": (H, inter),
        f"{p}hidden_norm.weight": (H,),
        f"{p}input_layernorm.weight": (H,),
        f"{p}post_attention_layernorm.weight": (H,),
        "norm.weight": (H,),
        "lm_head.weight": (d["Vd"] or d["V"], H),
    }


def llama_attention(d: Dims, p: str) -> dict[str, Shape]:
    q, kv, two_h = _mul(d["nh"], d["hd"]), _mul(d["nkv"], d["hd"]), _mul(2, d["H"])
    return {
        f"{p}self_attn.q_proj.weight": (q, two_h),
        f"{p}self_attn.k_proj.weight": (kv, two_h),
        f"{p}self_attn.v_proj.weight": (kv, two_h),
        f"{p}self_attn.o_proj.weight": (d["H"], q),
    }


def mla_attention(d: Dims, p: str) -> dict[str, Shape]:
    nh, two_h = d["nh"], _mul(2, d["H"])
    q_lora, kv_lora = d["q_lora_rank"], d["kv_lora_rank"]
    nope, rope, v = d["qk_nope_head_dim"], d["qk_rope_head_dim"], d["v_head_dim"]
    return {
        f"{p}self_attn.q_a_proj.weight": (q_lora, two_h),
        f"{p}self_attn.q_a_layernorm.weight": (q_lora,),
        f"{p}self_attn.q_b_proj.weight": (_mul(nh, _add(nope, rope)), q_lora),
        f"{p}self_attn.kv_a_proj_with_mqa.weight": (_add(kv_lora, rope), two_h),
        f"{p}self_attn.kv_a_layernorm.weight": (kv_lora,),
        f"{p}self_attn.kv_b_proj.weight": (_mul(nh, _add(nope, v)), kv_lora),
        f"{p}self_attn.o_proj.weight": (d["H"], _mul(nh, v)),
    }


def later_llama_layer(d: Dims, i: int) -> dict[str, Shape]:
    """Layer i > 0 of a multi-layer llama_eagle3.py drafter (0.5.12+): attention over H, not 2H (no embeddings
    are concatenated), hidden_norm fused with the residual; its input_layernorm is built but never used."""
    p, H, inter = f"layers.{i}.", d["H"], d["I"]
    q, kv = _mul(d["nh"], d["hd"]), _mul(d["nkv"], d["hd"])
    return {
        f"{p}self_attn.q_proj.weight": (q, H),
        f"{p}self_attn.k_proj.weight": (kv, H),
        f"{p}self_attn.v_proj.weight": (kv, H),
        f"{p}self_attn.o_proj.weight": (H, q),
        f"{p}mlp.gate_proj.weight": (inter, H),
        f"{p}mlp.up_proj.weight": (inter, H),
        f"{p}mlp.down_proj.weight": (H, inter),
        f"{p}hidden_norm.weight": (H,),
        f"{p}post_attention_layernorm.weight": (H,),
    }


def expected_shapes(cfg: dict[str, Any], d: Dims, prefix: str, n_aux: int, n_layers: int = 1,
                    input_norm: bool = False) -> dict[str, Shape]:
    """Name -> shape (None where config.json does not say) for the layout `cfg` declares; fc reads `n_aux`
    target hidden states; `n_layers` decoder layers (Llama layout); `input_norm`: norm_before_fc is honoured."""
    attention = mla_attention(d, prefix) if is_mla(cfg) else llama_attention(d, prefix)
    shapes = {**attention, **common_shapes(d, prefix)}
    if not is_mla(cfg):
        for i in range(1, n_layers):
            shapes.update(later_llama_layer(d, i))
    eagle = cfg.get("eagle_config") if isinstance(cfg.get("eagle_config"), dict) else {}
    if eagle.get("use_aux_hidden_state", True) is not False:
        shapes["fc.weight"] = (d["H"], _mul(n_aux, d["T"]))
        if input_norm:
            shapes["input_norm.weight"] = (_mul(n_aux, d["T"]),)
    return shapes


def fc_norm_enabled(cfg: dict[str, Any]) -> bool:
    """EAGLE-3.1 per-chunk norms before fc: `fc_norm`, or the legacy `use_aux_norm` (both layouts)."""
    return bool(cfg.get("fc_norm") or cfg.get("use_aux_norm"))


def norm_before_fc(cfg: dict[str, Any]) -> bool:
    """One RMSNorm over the concatenated aux states before fc (llama_eagle3.py: eagle_config first, then the
    top level)."""
    eagle = cfg.get("eagle_config") if isinstance(cfg.get("eagle_config"), dict) else {}
    return bool(eagle.get("norm_before_fc", cfg.get("norm_before_fc", False)))


# llama_eagle3.py load_weights `legacy_name_map` (0.5.12+): these names load as fc_norm.0/1/2
LEGACY_FC_NORM = {"aux_norm_low.weight": "fc_norm.0.weight", "aux_norm_mid.weight": "fc_norm.1.weight",
                  "aux_norm_high.weight": "fc_norm.2.weight"}
