"""The context length SGLang derives for a drafter, including the one it falls back to when config.json has
no max_position_embeddings (docs/upstream.md, "Drafter doctor (SGLang 0.5.23)").

SGLang builds the draft's config class from `model_type` and reads the context with `get_context_length`
(0.5.23 `utils/hf_transformers/common.py:677-694`); a draft whose derived context is below the target's makes
`ModelConfig._derive_context_length` raise (`configs/model_config.py:1291-1316`) unless
SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from eagle_console.drafter.sglang_versions import KIMI_K2_CONFIG, SGLang

CONTEXT_KEYS = ("max_sequence_length", "seq_length", "max_seq_len", "model_max_length", "max_position_embeddings")


@dataclass(frozen=True)
class ConfigDefault:
    """The max_position_embeddings a config class gives a draft that does not set it."""

    value: int
    config_class: str
    why: str  # where the mapping and the default are written


# model_type -> the class SGLang builds and its default (transformers DeepseekV3Config / LlamaConfig)
DEFAULTS = {
    "kimi_k2": ConfigDefault(4096, "DeepseekV3Config",
                             "SGLang maps model_type 'kimi_k2' to DeepseekV3Config (_KimiK2ConfigAlias, "
                             "utils/hf_transformers/common.py:229-233 in 0.5.23; since 0.5.12), whose default "
                             "max_position_embeddings is 4096 (transformers configuration_deepseek_v3.py)"),
    "deepseek_v3": ConfigDefault(4096, "DeepseekV3Config",
                                 "model_type 'deepseek_v3' is DeepseekV3Config, whose default "
                                 "max_position_embeddings is 4096 (transformers configuration_deepseek_v3.py)"),
    "llama": ConfigDefault(2048, "LlamaConfig",
                           "model_type 'llama' is LlamaConfig, whose default max_position_embeddings is 2048 "
                           "(transformers configuration_llama.py)"),
}


def context_length(cfg: dict[str, Any]) -> int | None:
    """The context length SGLang derives from a config (key priority, then rope_scaling.factor)."""
    value = None
    for key in CONTEXT_KEYS:
        if isinstance(cfg.get(key), int):
            value = cfg[key]
            break
    if value is None:
        return None
    scaling = cfg.get("rope_scaling")
    if isinstance(scaling, dict) and "original_max_position_embeddings" not in scaling:
        kind = scaling.get("rope_type") or scaling.get("type")
        factor = scaling.get("factor")
        if kind != "llama3" and isinstance(factor, (int, float)):
            value = int(value * factor)
    return value


def config_default(cfg: dict[str, Any], sglang: SGLang) -> ConfigDefault | None:
    """The default SGLang's config class puts in for a missing max_position_embeddings; None when the draft sets
    a context key, or when the class is not one this table knows."""
    if any(isinstance(cfg.get(k), int) for k in CONTEXT_KEYS):
        return None
    model_type = str(cfg.get("model_type", ""))
    if model_type == "kimi_k2" and not sglang.at_least(KIMI_K2_CONFIG):
        return None  # no kimi_k2 alias before 0.5.12: what the config loads as is not known here
    return DEFAULTS.get(model_type)


def derived_with_default(cfg: dict[str, Any], default: ConfigDefault) -> int:
    """The context SGLang derives once the default is put in (rope_scaling still applies)."""
    return context_length({**cfg, "max_position_embeddings": default.value}) or default.value
