"""`AUX_LAYERS`: which target hidden states a drafter reads, in which numbering, as a given SGLang captures them.

Conventions (reference/eagle3-drafters.md §2, §4.1; SGLang PR #25454): first id 1 = 'output of block i'
(SpecForge/EAGLE), first id 2 = 'input to layer i' (SGLang's own default, vLLM). SGLang captures the input of
layer i; before 0.5.14 it added +1 to every explicit id, since PR #25454 only when the first id is 1.
"""

from __future__ import annotations

from typing import Any

from eagle_console.drafter.sglang_versions import SGLang, intended_inputs
from eagle_console.findings import Finding


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
    convention's default."""
    output_of_block = [1, n_layers // 2 - 1, n_layers - 4]
    input_to_layer = [2, n_layers // 2, n_layers - 3]
    if ids == output_of_block:
        return (f"the SpecForge/EAGLE 'output of block i' convention (default {output_of_block} for {n_layers} "
                "layers); SGLang adds +1 when the first id is 1", True)
    if ids == input_to_layer:
        return (f"the 'input to layer i' convention (SGLang/vLLM default {input_to_layer} for {n_layers} layers); "
                "SGLang >= 0.5.14 (PR #25454) uses them as-is, older SGLang added +1 (off by one)", True)
    if ids and ids[0] == 1:
        return (f"the 'output of block i' (SpecForge) convention, with the last id of a {ids[-1] + 4}-layer "
                "target", False)
    if ids and ids[0] == 2:
        return (f"the 'input to layer i' (SGLang/vLLM) convention, with the last id of a {ids[-1] + 3}-layer "
                "target", False)
    return ("neither convention (first id 1: 'output of block i', first id 2: 'input to layer i')", False)


def capture_findings(ids: list[int], sglang: SGLang) -> list[Finding]:
    """Whether `sglang` captures the hidden states the drafter was trained on (no target needed)."""
    want, got = intended_inputs(ids), sglang.captured_layers(ids)
    if want is None or want == got:
        return []
    return [Finding("warning", "AUX_LAYERS", (
        f"aux layer ids {ids} are in the 'input to layer i' convention (first id 2), but {sglang.label()} adds "
        f"+1 to every explicit id: it feeds the drafter the inputs of layers {got} instead of {want}, one layer "
        "late, and acceptance drops (about 0.10 accept length on Kimi-K2.5, PR #25454). Use SGLang >= 0.5.14, "
        f"or write the same states as {[i - 1 for i in ids]} (first id 1) into eagle_config"))]


def target_findings(ids: list[int] | None, n_layers: Any, sglang: SGLang, n_aux_max: int | None) -> list[Finding]:
    """AUX_LAYERS against the target's depth, judged by what `sglang` captures."""
    if ids is None:
        default = f"[2, {n_layers // 2}, {n_layers - 3}]" if isinstance(n_layers, int) else "a default"
        return [Finding("warning", "AUX_LAYERS", f"no eagle_aux_hidden_state_layer_ids in config.json: SGLang "
                        f"uses {default}; write the ids the drafter was trained with into eagle_config")]
    if not isinstance(n_layers, int):
        return capture_findings(ids, sglang)
    convention, exact = describe_convention(ids, n_layers)
    got = sglang.captured_layers(ids)
    out = [i for i in ids if i < 0 or i >= n_layers]
    late = [g for g in got if g >= n_layers]
    if out or late:
        shown = out or [ids[got.index(g)] for g in late]
        return [Finding("error", "AUX_LAYERS", f"aux layer ids {ids} include {shown}, outside the target's "
                        f"{n_layers} layers as {sglang.label()} captures them (inputs of layers {got}); they look "
                        f"like {convention}: use the ids the drafter was trained with, in the numbering this "
                        "engine version expects")]
    found = capture_findings(ids, sglang)
    if n_aux_max is not None and len(ids) != n_aux_max:
        found.append(Finding("warning", "AUX_LAYERS", f"{len(ids)} aux layer ids {ids}; fc in {sglang.label()} "
                             f"reads {n_aux_max} hidden states"))
    elif not exact:
        found.append(Finding("warning", "AUX_LAYERS", f"aux layer ids {ids} are {convention} ({n_layers} layers): "
                             "was the drafter trained on a target with a different depth?"))
    elif not found:
        found.append(Finding("info", "AUX_LAYERS", f"aux layer ids {ids}: {convention}; {sglang.label()} "
                             f"captures the inputs of layers {got}"))
    return found
