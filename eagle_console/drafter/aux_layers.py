"""`AUX_LAYERS`: which target hidden states a drafter reads, in which numbering, as a given SGLang captures them
on a given target architecture (capture_rules.py).

Conventions (reference/eagle3-drafters.md §2, §4.1; SGLang PR #25454): first id 1 = 'output of block i'
(SpecForge/EAGLE), first id 2 = 'input to layer i' (SGLang's own default, vLLM), largest id = the target's layer
count = hidden-state boundary numbering (nvidia gpt-oss drafters; boundary n is the final state). SGLang
captures boundary i (the input of layer i); whether it adds +1 first depends on the target's model file.
"""

from __future__ import annotations

from typing import Any

from eagle_console.drafter.capture_rules import BOUNDARY, BOUNDARY_ARCHS, FIRST_ID_ARCHS, CaptureRule
from eagle_console.drafter.sglang_versions import (
    AUX_FIRST_ID_RULE,
    GPT_OSS_BOUNDARY_IDS,
    intended_inputs,
)
from eagle_console.findings import Finding

PR_25454_LOSS = "about 0.10 accept length on Kimi-K2.5, PR #25454"


def aux_layer_ids(cfg: dict[str, Any]) -> list[int] | None:
    eagle = cfg.get("eagle_config")
    ids = eagle.get("eagle_aux_hidden_state_layer_ids") if isinstance(eagle, dict) else None
    if ids is None:
        ids = cfg.get("eagle_aux_hidden_state_layer_ids")
    if ids is None:
        return None
    try:
        return [int(i) for i in ids]
    except (TypeError, ValueError):
        return None


def describe_convention(ids: list[int], n_layers: int) -> tuple[str, bool]:
    """Which numbering convention `ids` look like for an N-layer target, and whether they are exactly that
    convention's default (or unambiguous boundary numbering)."""
    output_of_block = [1, n_layers // 2 - 1, n_layers - 4]
    input_to_layer = [2, n_layers // 2, n_layers - 3]
    if ids and max(ids) == n_layers:
        return (f"the hidden-state boundary convention (boundary i = the input of layer i, {n_layers} = the final "
                f"state after the last of {n_layers} blocks)", True)
    if ids == output_of_block:
        return (f"the SpecForge/EAGLE 'output of block i' convention (default {output_of_block} for {n_layers} "
                "layers)", True)
    if ids == input_to_layer:
        return (f"the 'input to layer i' convention (SGLang/vLLM default {input_to_layer} for {n_layers} layers)",
                True)
    if ids and ids[0] == 1:
        return (f"the 'output of block i' (SpecForge) convention, with the last id of a {ids[-1] + 4}-layer "
                "target", False)
    if ids and ids[0] == 2:
        return (f"the 'input to layer i' (SGLang/vLLM) convention, with the last id of a {ids[-1] + 3}-layer "
                "target", False)
    return ("neither convention (first id 1: 'output of block i', first id 2: 'input to layer i')", False)


def _late_fix(ids: list[int], rule: CaptureRule) -> str:
    if rule.arch in FIRST_ID_ARCHS and not rule.sglang.at_least(AUX_FIRST_ID_RULE):
        return f"Use SGLang >= 0.5.13 (PR #25454), or write the same states as {[i - 1 for i in ids]} (first id 1)"
    return f"Write the same states as {[i - 1 for i in ids]} (first id 1) into eagle_config"


def late_finding(ids: list[int], got: list[int], want: list[int], rule: CaptureRule) -> Finding:
    return Finding("warning", "AUX_LAYERS", (
        f"aux layer ids {ids} are in the 'input to layer i' convention (first id 2), but {rule.describe()}: it "
        f"feeds the drafter the inputs of layers {got} instead of {want}, one layer late, and acceptance drops "
        f"({PR_25454_LOSS}). {_late_fix(ids, rule)}"))


def capture_findings(ids: list[int], rule: CaptureRule) -> list[Finding]:
    """Without the target's depth: whether the rule captures the states the drafter was trained on. With no
    target at all (rule.arch empty) a first id of 2 depends on the target's architecture: said as information,
    or as a warning where every architecture adds +1 (SGLang before 0.5.13)."""
    want, got = intended_inputs(ids), rule.captured(ids, None)
    if want is None or want == got:
        return []
    if rule.arch or not rule.sglang.at_least(AUX_FIRST_ID_RULE):
        return [late_finding(ids, got, want, rule)]
    families = ", ".join(sorted(FIRST_ID_ARCHS))
    return [Finding("info", "AUX_LAYERS", (
        f"aux layer ids {ids} are in the 'input to layer i' convention (first id 2): {rule.sglang.label()} uses "
        f"them as given only on {families} targets (PR #25454); on other targets (Llama, Qwen2/3, Qwen3-MoE, "
        f"GLM-4.5 ...) it adds +1 and reads layers {got}, one late. Give the target model to check"))]


def _out_of_range_fix(rule: CaptureRule) -> str:
    if rule.arch in BOUNDARY_ARCHS and not rule.sglang.at_least(GPT_OSS_BOUNDARY_IDS):
        return ("gpt-oss keeps boundary ids and captures the final state from SGLang 0.5.17 (PR #32334); use "
                "SGLang >= 0.5.17")
    return "use the ids the drafter was trained with, in the numbering this engine version expects"


def target_findings(ids: list[int] | None, n_layers: Any, rule: CaptureRule, n_aux_max: int | None) -> list[Finding]:
    """AUX_LAYERS against the target's depth, judged by what `rule` (target architecture, version) captures."""
    if ids is None:
        default = f"[2, {n_layers // 2}, {n_layers - 3}]" if isinstance(n_layers, int) else "a default"
        return [Finding("warning", "AUX_LAYERS", f"no eagle_aux_hidden_state_layer_ids in config.json: SGLang "
                        f"uses {default}; write the ids the drafter was trained with into eagle_config")]
    if not isinstance(n_layers, int):
        return capture_findings(ids, rule)
    convention, exact = describe_convention(ids, n_layers)
    got = rule.captured(ids, n_layers)
    top = rule.last_boundary(n_layers)
    bad = [i for i, g in zip(ids, got, strict=True) if g < 0 or g > top]
    if bad:
        return [Finding("error", "AUX_LAYERS", f"aux layer ids {ids} include {bad}, outside the target's "
                        f"{n_layers} layers as captured: {rule.describe()}, so it would capture boundaries {got} "
                        f"and the last it can capture is {top}. They look like {convention}: "
                        f"{_out_of_range_fix(rule)}")]
    want = intended_inputs(ids, n_layers)
    found = [late_finding(ids, got, want, rule)] if want is not None and want != got else []
    if n_aux_max is not None and len(ids) != n_aux_max:
        found.append(Finding("warning", "AUX_LAYERS", f"{len(ids)} aux layer ids {ids}; fc in "
                             f"{rule.sglang.label()} reads {n_aux_max} hidden states"))
    elif not exact:
        found.append(Finding("warning", "AUX_LAYERS", f"aux layer ids {ids} are {convention} ({n_layers} layers): "
                             "was the drafter trained on a target with a different depth?"))
    elif not found:
        final = " (the last is the final state)" if rule.kind == BOUNDARY and max(got) == n_layers else ""
        found.append(Finding("info", "AUX_LAYERS", f"aux layer ids {ids}: {convention}; {rule.describe()}: it "
                             f"captures the inputs of layers {got}{final}"))
    return found
