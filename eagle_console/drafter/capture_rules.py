"""Which target hidden states SGLang captures for a drafter's aux ids: one rule per target architecture and
SGLang version, read from each model file's `set_eagle3_layers_to_capture` (docs/upstream.md, "Drafter doctor
(SGLang 0.5.23)", has the table with file:line).

Boundary i is the input of target layer i (boundary 0: the embeddings). SGLang captures boundary i while
running layer i, so boundary n (the state after the last block) is reachable only where the model file
captures it after the loop: gpt_oss.py from 0.5.17.
"""

from __future__ import annotations

from dataclasses import dataclass

from eagle_console.drafter.sglang_versions import AUX_FIRST_ID_RULE, GPT_OSS_BOUNDARY_IDS, NEWEST_READ, SGLang

PLUS_ONE = "plus_one"  # [v + 1 for v in ids]: the historic rule, every architecture before 0.5.13
FIRST_ID = "first_id"  # PR #25454: +1 only when ids[0] == 1, otherwise as given
BOUNDARY = "boundary"  # PR #32334: as given when max(ids) == n (boundary n captured), otherwise +1

# target architecture (config.json `architectures[0]`) -> where 0.5.23 applies the rule
FIRST_ID_ARCHS = {
    "DeepseekV2ForCausalLM": "models/deepseek_v2.py:3458-3473",
    "DeepseekV3ForCausalLM": "models/deepseek_v2.py:3458-3473 (subclass at :3518)",
    "DeepseekV32ForCausalLM": "models/deepseek_v2.py:3458-3473 (subclass at :3522)",
    "KimiK25ForConditionalGeneration": "models/kimi_k25.py:928-939, its DeepseekV3ForCausalLM "
                                       "(models/deepseek_v2.py:3458-3473)",
    "GlmMoeDsaForCausalLM": "models/glm4_moe.py:1284 (a DeepseekV2ForCausalLM: models/deepseek_v2.py:3458-3473)",
    "MistralLarge3ForCausalLM": "models/mistral_large_3.py:12 (a DeepseekV3ForCausalLM: "
                                "models/deepseek_v2.py:3458-3473)",
    "Glm4MoeLiteForCausalLM": "models/glm4_moe_lite.py:805-820",
}
BOUNDARY_ARCHS = {
    "GptOssForCausalLM": "models/gpt_oss.py:1337-1352 (boundary n captured after the last block: :708-737)",
}
PLUS_ONE_ARCHS = {
    "LlamaForCausalLM": "models/llama.py:929-941",
    "Qwen2ForCausalLM": "models/qwen2.py:781-794",
    "Qwen3ForCausalLM": "models/qwen3.py:778-791",
    "Qwen3MoeForCausalLM": "models/qwen3_moe.py:1128-1143",
    "Glm4MoeForCausalLM": "models/glm4_moe.py:1269-1281",
}


@dataclass(frozen=True)
class CaptureRule:
    """What one SGLang version does with explicit aux ids on one target architecture."""

    kind: str  # PLUS_ONE, FIRST_ID or BOUNDARY
    arch: str  # the target architecture; "" when no target was given
    where: str  # the upstream lines, or why the rule is assumed
    sglang: SGLang

    def captured(self, ids: list[int], n_layers: int | None) -> list[int]:
        """The boundaries SGLang captures for `ids`."""
        if self.kind == FIRST_ID and ids and ids[0] != 1:
            return list(ids)
        if self.kind == BOUNDARY and ids and n_layers is not None and max(ids) == n_layers:
            return list(ids)
        return [i + 1 for i in ids]

    def last_boundary(self, n_layers: int) -> int:
        """The highest boundary this target captures: n only where the model file captures the final state."""
        return n_layers if self.kind == BOUNDARY else n_layers - 1

    def describe(self) -> str:
        """How the rule reads in a finding: target, version, what it does, where."""
        what = {
            PLUS_ONE: "adds +1 to every id",
            FIRST_ID: "adds +1 only when the first id is 1 (PR #25454), otherwise uses the ids as given",
            BOUNDARY: "keeps the ids when the largest equals the layer count (boundary n = the final state, "
                      "PR #32334), otherwise adds +1 to every id",
        }[self.kind]
        on = f"on a {self.arch} target" if self.arch else "on this target"
        return f"{self.sglang.label()} {on} {what} ({self.where})"


def capture_rule(arch: str | None, sglang: SGLang) -> CaptureRule:
    """The rule `sglang` applies on a target of architecture `arch` (None: no target given)."""
    arch = arch or ""
    if arch in FIRST_ID_ARCHS and sglang.at_least(AUX_FIRST_ID_RULE):
        return CaptureRule(FIRST_ID, arch, FIRST_ID_ARCHS[arch], sglang)
    if arch in BOUNDARY_ARCHS and sglang.at_least(GPT_OSS_BOUNDARY_IDS):
        return CaptureRule(BOUNDARY, arch, BOUNDARY_ARCHS[arch], sglang)
    if arch in FIRST_ID_ARCHS:
        return CaptureRule(PLUS_ONE, arch, f"{FIRST_ID_ARCHS[arch].split(' ')[0]} before 0.5.13: PR #25454 is "
                           "not in the 0.5.12.post1 wheel", sglang)
    if arch in BOUNDARY_ARCHS:
        return CaptureRule(PLUS_ONE, arch, "models/gpt_oss.py before 0.5.17: PR #32334 is not in the 0.5.16 "
                           "wheel, and boundary n is never captured", sglang)
    if arch in PLUS_ONE_ARCHS:
        return CaptureRule(PLUS_ONE, arch, PLUS_ONE_ARCHS[arch], sglang)
    where = (f"this architecture is not in the table read from the {NEWEST_READ} wheel; most model files add +1"
             if arch else "no target given")
    return CaptureRule(PLUS_ONE, arch, where, sglang)


def target_architecture(config: dict) -> str | None:
    """`architectures[0]` of a target's top-level config.json (the wrapper class for multimodal targets)."""
    archs = config.get("architectures")
    return str(archs[0]) if isinstance(archs, list) and archs else None
