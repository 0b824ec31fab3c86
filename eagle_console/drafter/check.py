"""`drafter check`: what would make an EAGLE-3 drafter fail to load, load wrong, or accept badly with a target.

Findings follow cli.md ("Drafter finding codes"); the facts behind each one are in
reference/eagle3-drafters.md (key names and shapes, d2t/t2d, aux-layer conventions, norm placement).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, TypedDict

from eagle_console.drafter import layouts, sglang_versions
from eagle_console.drafter.aux_layers import (
    aux_layer_ids,
    capture_findings,
    describe_convention,
    target_findings,
)
from eagle_console.drafter.capture_rules import capture_rule, target_architecture
from eagle_console.drafter.checkpoint import (
    Checkpoint,
    CheckpointError,
    flat_draft_config,
    load_checkpoint,
    read_json,
    text_config,
)
from eagle_console.drafter.context import config_default, context_length, derived_with_default
from eagle_console.drafter.safetensors_io import FLOAT_DTYPES, SafetensorsError, count_nonfinite, read_array
from eagle_console.drafter.sglang_versions import SGLang
from eagle_console.findings import Finding, FindingJson, Severity, by_severity

__all__ = ["aux_layer_ids", "check_drafter", "context_length", "describe_convention", "is_eagle3"]

# max_position_embeddings is not here: the config class gives a default (context.py), judged against the target
REQUIRED_FIELDS = ("hidden_size", "num_attention_heads", "num_key_value_heads", "intermediate_size",
                   "vocab_size")
# The first decoder layer is `midlayer.*` in SpecForge/SGLang exports and `layers.0.*` after a
# speculators / multi-layer rename; both load (the rename since 0.5.12).
LAYER_PREFIXES = ("midlayer.", "layers.0.")


class DrafterReport(TypedDict):
    """The `drafter check --json` document (cli.md)."""

    ok: bool  # no error finding
    findings: list[FindingJson]  # errors first, then warnings, then information
    config: dict[str, Any]  # the drafter's config.json as read
    tensors: int


def is_eagle3(config: dict[str, Any]) -> bool:
    """Whether a draft config describes an EAGLE-3 drafter (so it needs `--speculative-algorithm EAGLE3`)."""
    cfg = flat_draft_config(config)
    archs = " ".join(map(str, cfg.get("architectures") or []))
    if "eagle3" in archs.lower():
        return True
    if str(cfg.get("speculators_model_type", "")).lower() == "eagle3":
        return True
    eagle = cfg.get("eagle_config")
    if isinstance(eagle, dict) and ("eagle_aux_hidden_state_layer_ids" in eagle or eagle.get("use_aux_hidden_state")):
        return True
    return "eagle_aux_hidden_state_layer_ids" in cfg or "draft_vocab_size" in cfg


class DrafterCheck:
    """Collects findings for one drafter folder (and optionally its target model folder), judged against the
    SGLang version that will load it."""

    def __init__(self, path: Path, target: Path | None = None, values: bool = False,
                 sglang: SGLang | None = None) -> None:
        self.path = Path(path)
        self.target = Path(target) if target else None
        self.values = values
        self.sglang = sglang if sglang is not None else sglang_versions.resolve()
        self.findings: list[Finding] = []
        self.ckpt: Checkpoint | None = None

    def add(self, severity: Severity, code: str, message: str) -> None:
        self.findings.append(Finding(severity, code, message))

    def run(self) -> DrafterReport:
        try:
            self.ckpt = load_checkpoint(self.path)
        except CheckpointError as exc:
            self.add("error", exc.code, f"{exc}; a drafter folder needs config.json and *.safetensors weights")
            return self.result()
        for problem in self.ckpt.problems:
            self.add("error", problem.code, f"{problem}; re-download or re-export the drafter")
        cfg = flat_draft_config(self.ckpt.config)
        dims = self.check_config(cfg)
        self.check_tensors(cfg, dims)
        self.check_vocab_mapping(dims)
        if self.target is not None:
            self.check_target(cfg, dims)
        elif aux_layer_ids(cfg) is None:
            self.add("warning", "AUX_LAYERS", "no eagle_aux_hidden_state_layer_ids in config.json: engines fall back "
                     "to a default guess; write the ids the drafter was trained with into eagle_config")
        else:
            self.findings.extend(capture_findings(aux_layer_ids(cfg) or [], capture_rule(None, self.sglang)))
            self.check_context_default(cfg, None)
        self.check_norm(cfg)
        if self.values:
            self.check_values()
        return self.result()

    def result(self) -> DrafterReport:
        findings = by_severity(self.findings)
        return DrafterReport(
            ok=not any(f.severity == "error" for f in findings),
            findings=[f.to_json() for f in findings],
            config=self.ckpt.config if self.ckpt else {},
            tensors=len(self.ckpt.tensors) if self.ckpt else 0,
        )

    # -- config ------------------------------------------------------------------------------------------

    def check_config(self, cfg: dict[str, Any]) -> dict[str, int | None]:
        mla = layouts.is_mla(cfg)
        required = [k for k in REQUIRED_FIELDS if not (mla and k == "num_key_value_heads")]
        for key in required + (list(layouts.MLA_FIELDS) if mla else []):
            if not isinstance(cfg.get(key), int):
                self.add("error", "CONFIG_MISSING_FIELD",
                         f"config.json has no integer {key!r}; SGLang cannot build the draft model without it")
        self.check_layer_count(cfg, mla)
        if mla and not self.sglang.at_least(sglang_versions.MLA_DRAFTER):
            self.add("error", "CONFIG_INVALID", f"{cfg['architectures'][0]} (the MLA drafter layout) is not in "
                     f"{self.sglang.label()}: models/kimi_k25_eagle3.py arrived in 0.5.12; use SGLang >= 0.5.12")
        if cfg.get("draft_vocab_size") is None:
            self.add("info", "CONFIG_MISSING_FIELD", "config.json has no draft_vocab_size: SGLang uses the full "
                     "target vocabulary (draft_vocab_size = vocab_size; lm_head from the target when the "
                     "checkpoint has none)")

        def num(key: str) -> int | None:
            v = cfg.get(key)
            return v if isinstance(v, int) else None

        hidden, heads = num("hidden_size"), num("num_attention_heads")
        head_dim = num("head_dim") or (hidden // heads if hidden and heads else None)
        dims = {
            "H": hidden, "T": num("target_hidden_size") or hidden, "I": num("intermediate_size"),
            "nh": heads, "nkv": num("num_key_value_heads"), "hd": head_dim,
            "V": num("vocab_size"), "Vd": num("draft_vocab_size"),
        }
        dims.update({k: num(k) for k in layouts.MLA_FIELDS})
        return dims

    def check_layer_count(self, cfg: dict[str, Any], mla: bool) -> None:
        """kimi_k25_eagle3.py refuses N != 1 in every release that has it; llama_eagle3.py builds N layers since
        0.5.12 (PR #24663) and refused them before."""
        layers = cfg.get("num_hidden_layers", 1)
        if layers == 1:
            return
        if not isinstance(layers, int) or layers < 1:
            self.add("error", "CONFIG_INVALID", f"num_hidden_layers is {layers!r}: it must be a positive integer")
        elif mla:
            self.add("error", "CONFIG_INVALID", f"num_hidden_layers is {layers}: {self.sglang.label()} refuses it "
                     "for the MLA layout with 'EAGLE3 currently only supports 1 layer' (models/kimi_k25_eagle3.py:"
                     "243-244 in 0.5.23, every release since 0.5.12). Set num_hidden_layers = 1, or was the "
                     "target's config.json copied?")
        elif not self.sglang.at_least(sglang_versions.LLAMA_MULTI_LAYER):
            self.add("error", "CONFIG_INVALID", f"num_hidden_layers is {layers}: {self.sglang.label()} refuses it "
                     "with 'EAGLE3 currently only supports 1 layer' (models/llama_eagle3.py up to 0.5.11); "
                     f"0.5.12 and later build {layers} decoder layers (PR #24663). Use SGLang >= 0.5.12, or set "
                     "num_hidden_layers = 1 if the target's config.json was copied")
        elif layers > 8:
            self.add("warning", "CONFIG_INVALID", f"num_hidden_layers is {layers}: {self.sglang.label()} builds "
                     f"{layers} draft layers (models/llama_eagle3.py:198-204 in 0.5.23), but an EAGLE-3 drafter "
                     "has one or a few: was the target's config.json copied?")

    def check_context_default(self, cfg: dict[str, Any], target_ctx: int | None) -> None:
        """No max_position_embeddings: SGLang does not refuse the draft, it takes the config class's default,
        and the server then refuses to start if that is below the target's context."""
        default = config_default(cfg, self.sglang)
        if default is None:
            if not any(isinstance(cfg.get(k), int) for k in ("max_position_embeddings", "max_sequence_length",
                                                             "seq_length", "max_seq_len", "model_max_length")):
                self.add("warning", "CONFIG_MISSING_FIELD", "config.json has no max_position_embeddings and the "
                         f"default of its model_type {cfg.get('model_type')!r} is not known here: set it to the "
                         "target's context length")
            return
        derived = derived_with_default(cfg, default)
        where = (f"{self.sglang.label()} takes the default: {default.why}, so the draft's context is {derived}")
        if target_ctx is not None and derived < target_ctx:
            self.add("error", "CONTEXT_LENGTH", f"config.json has no max_position_embeddings: {where}; against the "
                     f"target's {target_ctx} the server refuses to start (configs/model_config.py:1291-1316 "
                     f"in 0.5.23: \"Target model's context_length ({target_ctx}) is greater than the derived "
                     f"context_length ({derived})\"). Set max_position_embeddings = {target_ctx} in the "
                     "drafter's config.json (json.set), or export SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1")
        elif target_ctx is None:
            self.add("warning", "CONFIG_MISSING_FIELD", f"config.json has no max_position_embeddings: {where}; a "
                     f"target with a longer context makes the server refuse to start. Set it to the target's "
                     "context length (give the target to check)")

    # -- tensors -----------------------------------------------------------------------------------------

    def layer_prefix(self) -> str:
        tensors = self.ckpt.tensors if self.ckpt else {}
        for prefix in LAYER_PREFIXES:
            if any(name.startswith(prefix) for name in tensors):
                return prefix
        return LAYER_PREFIXES[0]

    def n_aux(self, cfg: dict[str, Any]) -> int:
        """How many target hidden states fc reads: the number of aux ids since 0.5.12, 3 before."""
        ids = aux_layer_ids(cfg)
        if ids and (layouts.is_mla(cfg) or self.sglang.at_least(sglang_versions.AUX_COUNT_FC)):
            return len(ids)
        return 3

    def check_tensors(self, cfg: dict[str, Any], d: dict[str, int | None]) -> None:
        tensors = self.ckpt.tensors if self.ckpt else {}
        if not tensors:
            return
        tied = bool(cfg.get("tie_word_embeddings"))
        prefix = self.layer_prefix()
        if prefix == "layers.0." and not layouts.is_mla(cfg) and not self.sglang.at_least(
                sglang_versions.LAYERS0_NAMES):
            self.add("error", "MISSING_TENSOR", f"the decoder layer is stored as layers.0.*: {self.sglang.label()} "
                     "loads only midlayer.* and skips layers.0.* without a word, leaving the layer uninitialised "
                     "(the midlayer -> layers.0 map of llama_eagle3.py load_weights is in 0.5.12 and later, PR "
                     "#24663). Rename the tensors to midlayer.* or use SGLang >= 0.5.12")
        n_aux = self.n_aux(cfg)
        layers = cfg.get("num_hidden_layers", 1)
        n_layers = layers if isinstance(layers, int) and layers > 1 and self.sglang.at_least(
            sglang_versions.LLAMA_MULTI_LAYER) else 1
        input_norm = self.check_norm_before_fc(cfg)
        later_missing: list[str] = []  # layers 1..N-1 of a multi-layer drafter: said once, not per tensor
        for name, want in layouts.expected_shapes(cfg, d, prefix, n_aux, n_layers, input_norm).items():
            info = tensors.get(name)
            if info is None and name.startswith("layers.") and not name.startswith("layers.0."):
                later_missing.append(name)
                continue
            if info is None:
                if name == "lm_head.weight" and (tied or d["Vd"] is None):
                    continue  # taken from embed_tokens or from the target
                why = (" (norm_before_fc is set: SGLang builds input_norm and leaves it at its initial value)"
                       if name == "input_norm.weight" else " (was the drafter exported with SpecForge's to_sglang?)")
                self.add("error", "MISSING_TENSOR", f"tensor {name!r} is missing; SGLang's EAGLE-3 loader needs it"
                         + why)
                continue
            if len(info.shape) != len(want) or any(w is not None and w != got for w, got in zip(want, info.shape, strict=False)):
                shown = [w if w is not None else "?" for w in want]
                why = (f" ({n_aux} aux hidden states x target_hidden_size, as {self.sglang.label()} builds fc)"
                       if name == "fc.weight" else "")
                self.add("error", "TENSOR_SHAPE", f"{name} is {list(info.shape)}, config.json implies {shown}{why}; "
                         "the config does not describe these weights")
        if later_missing:
            which = "decoder layer 1" if n_layers == 2 else f"decoder layers 1-{n_layers - 1}"
            self.add("error", "MISSING_TENSOR", f"{len(later_missing)} tensors of {which} "
                     f"are missing (first: {', '.join(later_missing[:3])}): {self.sglang.label()} builds "
                     f"num_hidden_layers = {n_layers} layers and leaves these unloaded. Export every layer, or set "
                     "num_hidden_layers to the number of layers the checkpoint has")
        embed = tensors.get("embed_tokens.weight")
        if embed is not None and d["V"] and d["H"] and embed.shape != (d["V"], d["H"]):
            self.add("error", "TENSOR_SHAPE", f"embed_tokens.weight is {list(embed.shape)}, expected "
                     f"[{d['V']}, {d['H']}] (vocab_size x hidden_size)")
        self.check_fc_norm(cfg, d, n_aux)

    def check_norm_before_fc(self, cfg: dict[str, Any]) -> bool:
        """`norm_before_fc` (llama_eagle3.py, 0.5.17+, PR #32334): one RMSNorm `input_norm` over the concatenated
        aux states. Returns whether SGLang builds it, so that input_norm.weight is expected."""
        tensors = self.ckpt.tensors if self.ckpt else {}
        has_weight = "input_norm.weight" in tensors
        if not layouts.norm_before_fc(cfg):
            if has_weight:
                self.add("warning", "CONFIG_MISSING_FIELD", "the checkpoint has input_norm.weight but config.json "
                         "does not set norm_before_fc: SGLang skips the norm and the drafter accepts badly; set "
                         "\"norm_before_fc\": true in eagle_config")
            return False
        if layouts.is_mla(cfg):
            self.add("error", "CONFIG_INVALID", f"config.json sets norm_before_fc, which the MLA layout "
                     f"(models/kimi_k25_eagle3.py) does not read in {self.sglang.label()}: input_norm is skipped "
                     "and the drafter runs without the norm it was trained with")
            return False
        if not self.sglang.at_least(sglang_versions.NORM_BEFORE_FC):
            self.add("error", "CONFIG_INVALID", f"config.json sets norm_before_fc, which {self.sglang.label()} "
                     "ignores: input_norm.weight is skipped without a word and acceptance stays low (read from "
                     "0.5.17 on, PR #32334; models/llama_eagle3.py:169-182 in 0.5.23). Use SGLang >= 0.5.17")
            return False
        return True

    def check_fc_norm(self, cfg: dict[str, Any], d: dict[str, int | None], n_aux: int) -> None:
        """EAGLE-3.1 `fc_norm`: SGLang builds one RMSNorm per aux chunk when the flag is set; without the
        tensors they keep their initial values and the drafter reads unscaled states. The Llama layout also
        loads the legacy aux_norm_{low,mid,high} names as fc_norm.0/1/2."""
        tensors = dict(self.ckpt.tensors) if self.ckpt else {}
        mla = layouts.is_mla(cfg)
        if not mla:
            tensors.update({new: tensors[old] for old, new in layouts.LEGACY_FC_NORM.items() if old in tensors})
        present = sorted(n for n in tensors if n.startswith("fc_norm."))
        since = sglang_versions.MLA_FC_NORM if mla else sglang_versions.LLAMA_FC_NORM
        if (layouts.fc_norm_enabled(cfg) or present) and not self.sglang.at_least(since):
            self.add("error", "CONFIG_INVALID", f"the drafter has fc_norm (EAGLE-3.1 per-chunk norms), which "
                     f"{self.sglang.label()} does not build for the {'MLA' if mla else 'Llama'} layout: the "
                     "flag and the fc_norm weights are ignored and the drafter reads unnormalised hidden states "
                     f"(models/{'kimi_k25_eagle3' if mla else 'llama_eagle3'}.py has fc_norm from "
                     f"{'.'.join(map(str, since))} on). Use SGLang >= {'.'.join(map(str, since))}")
            return
        if layouts.fc_norm_enabled(cfg):
            missing = [f"fc_norm.{i}.weight" for i in range(n_aux) if f"fc_norm.{i}.weight" not in tensors]
            if missing:
                self.add("error", "MISSING_TENSOR", f"config.json sets fc_norm (EAGLE-3.1) but {', '.join(missing)} "
                         "are not in the checkpoint: SGLang builds the norms and leaves them unloaded. Export the "
                         "fc_norm weights, or drop the flag if the drafter was trained without them")
        elif present:
            self.add("warning", "CONFIG_MISSING_FIELD", f"the checkpoint has {', '.join(present)} but config.json "
                     "does not set fc_norm: SGLang ignores these norms and the drafter accepts badly; set "
                     "\"fc_norm\": true")
        for i in range(n_aux):
            fcn = tensors.get(f"fc_norm.{i}.weight")
            if fcn is not None and d["T"] and fcn.shape != (d["T"],):
                self.add("error", "TENSOR_SHAPE", f"fc_norm.{i}.weight is {list(fcn.shape)}, expected [{d['T']}]")

    # -- vocabulary mapping ------------------------------------------------------------------------------

    def check_vocab_mapping(self, d: dict[str, int | None]) -> None:
        import numpy as np

        tensors = self.ckpt.tensors if self.ckpt else {}
        if not tensors:
            return
        V, Vd = d["V"], d["Vd"]
        d2t_info, t2d_info = tensors.get("d2t"), tensors.get("t2d")
        if d2t_info is None and t2d_info is None and (Vd is None or Vd == V):
            self.add("info", "D2T_SHAPE", f"full-vocabulary drafter (draft vocab = target vocab {V}), no d2t/t2d: "
                     "SGLang loads it with draft ids taken as target ids, which is right here")
            return
        if d2t_info is None:
            self.add("error", "MISSING_TENSOR", "tensor 'd2t' is missing: without the vocabulary mapping draft ids "
                     "are taken as target ids 0..Vd-1 and acceptance collapses; copy the vocab_mapping the drafter "
                     "was trained with")
        if t2d_info is None:
            # SGLang never reads t2d: llama_eagle3.py:355-356 and kimi_k25_eagle3.py:442-443 skip it (0.5.23;
            # skipped in every wheel read since 0.5.9); the K2.x MLA drafters ship d2t alone
            self.add("info", "T2D_SHAPE", "no t2d tensor: SGLang reads only d2t (hot_token_id = d2t + arange) and "
                     "skips t2d, so this loads as it should; the d2t/t2d consistency check is skipped")
        d2t_ok = t2d_ok = False
        if d2t_info is not None:
            if d2t_info.dtype != "I64" or len(d2t_info.shape) != 1 or (Vd is not None and d2t_info.shape[0] != Vd):
                self.add("error", "D2T_SHAPE", f"d2t is {d2t_info.dtype}{list(d2t_info.shape)}, expected "
                         f"I64[{Vd if Vd is not None else 'draft_vocab_size'}]")
            else:
                d2t_ok = True
        if t2d_info is not None:
            if t2d_info.dtype != "BOOL" or len(t2d_info.shape) != 1 or (V is not None and t2d_info.shape[0] != V):
                self.add("error", "T2D_SHAPE", f"t2d is {t2d_info.dtype}{list(t2d_info.shape)}, expected "
                         f"BOOL[{V if V is not None else 'vocab_size'}] (the target vocabulary)")
            else:
                t2d_ok = True
        if not d2t_ok:
            return
        try:
            d2t = read_array(d2t_info).astype(np.int64)
        except SafetensorsError as exc:
            self.add("error", "D2T_SHAPE", str(exc))
            return
        targets = d2t + np.arange(d2t.shape[0], dtype=np.int64)
        limit = V if V is not None else (t2d_info.shape[0] if t2d_ok else None)
        if limit is not None:
            bad = np.flatnonzero((targets < 0) | (targets >= limit))
            if bad.size:
                self.add("error", "D2T_OUT_OF_RANGE", f"{bad.size} d2t entries map outside the target vocabulary "
                         f"[0, {limit}) (first at draft id {int(bad[0])} -> {int(targets[bad[0]])}); the mapping "
                         "belongs to another tokenizer")
                return
        if not t2d_ok:
            return
        try:
            t2d = read_array(t2d_info)
        except SafetensorsError as exc:
            self.add("error", "T2D_SHAPE", str(exc))
            return
        in_draft = np.flatnonzero(t2d)
        if in_draft.shape != targets.shape or not np.array_equal(in_draft, targets):
            n_t2d = int(in_draft.size)
            mism = int(np.count_nonzero(t2d[targets] == 0)) if limit else 0
            self.add("error", "VOCAB_MAPPING_INCONSISTENT", f"nonzero(t2d) != d2t + arange: t2d marks {n_t2d} "
                     f"tokens, d2t maps {targets.size}, {mism} d2t targets are not marked in t2d; d2t and t2d "
                     "come from different vocab mappings (SGLang uses only d2t, training used t2d)")

    # -- target ------------------------------------------------------------------------------------------

    def check_target(self, cfg: dict[str, Any], d: dict[str, int | None]) -> None:
        try:
            raw = read_json(self.target / "config.json")  # type: ignore[operator]
        except CheckpointError as exc:
            self.add("error", "MISSING_FILE" if exc.code == "MISSING_FILE" else exc.code,
                     f"target model: {exc}")
            return
        target = text_config(raw)
        self.check_target_version(raw)
        tv, th = target.get("vocab_size"), target.get("hidden_size")
        if isinstance(tv, int) and d["V"] is not None and tv != d["V"]:
            self.add("error", "TARGET_VOCAB", f"drafter vocab_size {d['V']} != target vocab_size {tv}: t2d and "
                     "embed sharing assume the target's vocabulary; the drafter was trained for another tokenizer")
        if isinstance(th, int) and d["T"] is not None and th != d["T"]:
            self.add("error", "TARGET_HIDDEN_SIZE", f"drafter expects target hidden size {d['T']} "
                     f"(target_hidden_size or hidden_size), target has {th}: fc cannot take its hidden states")
        draft_ctx, target_ctx = context_length(cfg), context_length(target)
        if draft_ctx is not None and target_ctx is not None and draft_ctx < target_ctx:
            self.add("error", "CONTEXT_LENGTH", f"draft context length {draft_ctx} < target's {target_ctx}: SGLang "
                     f"refuses to start; set max_position_embeddings = {target_ctx} in the drafter's config.json "
                     "(json.set) or export SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1; acceptance past the "
                     f"drafter's training length ({draft_ctx}) may drop")
        elif draft_ctx is None:
            self.check_context_default(cfg, target_ctx)
        fixed_fc = None if layouts.is_mla(cfg) or self.sglang.at_least(sglang_versions.AUX_COUNT_FC) else 3
        rule = capture_rule(target_architecture(raw), self.sglang)
        self.findings.extend(target_findings(aux_layer_ids(cfg), target.get("num_hidden_layers"), rule, fixed_fc))

    def check_target_version(self, raw: dict[str, Any]) -> None:
        """A Kimi-K2.5 target serves EAGLE-3 drafts only from SGLang 0.5.10 (PR #19689)."""
        archs = " ".join(map(str, raw.get("architectures") or []))
        if raw.get("model_type") != "kimi_k25" and "KimiK25" not in archs:
            return
        if self.sglang.version is None:
            self.add("info", "ALGORITHM", "Kimi-K2.5 target: EAGLE-3 needs SGLang >= 0.5.10 (PR #19689); the "
                     "SGLang version is unknown, check the one the plan launches")
        elif not self.sglang.at_least(sglang_versions.K25_EAGLE3):
            self.add("error", "ALGORITHM", f"Kimi-K2.5 target with {self.sglang.label()}: EAGLE-3 for K2.5 "
                     "arrived in SGLang 0.5.10 (PR #19689); upgrade SGLang")

    # -- norm placement and values ---------------------------------------------------------------------

    def check_norm(self, cfg: dict[str, Any]) -> None:
        if "norm_before_residual" not in cfg:
            self.add("info", "NORM_BEFORE_RESIDUAL_UNSET", "config.json does not set norm_before_residual: no "
                     f"SGLang version reads the key ({self.sglang.label()}), so nothing changes here. vLLM reads "
                     "it (its speculators loader defaults it to true, HF configs to false; SpecForge's own "
                     "configs leave it out): set it to false before serving a SpecForge-trained drafter with vLLM")

    def check_values(self) -> None:
        tensors = self.ckpt.tensors if self.ckpt else {}
        bad: list[str] = []
        for name, info in sorted(tensors.items()):
            if info.dtype not in FLOAT_DTYPES:
                continue
            n = count_nonfinite(info)
            if n:
                bad.append(f"{name} ({n})")
        if bad:
            self.add("error", "NONFINITE_WEIGHTS", f"NaN/Inf values in {', '.join(bad)}: the checkpoint is corrupt "
                     "or was saved from a diverged run; use another checkpoint")


def check_drafter(path: str | Path, target: str | Path | None = None, values: bool = False,
                  sglang_version: str | None = None, python: str | None = None) -> DrafterReport:
    """The `drafter check --json` document for drafter folder `path` (and target model folder `target`), judged
    against `sglang_version`, else the SGLang installed for interpreter `python` (else for this one)."""
    sglang = sglang_versions.resolve(sglang_version, python)
    return DrafterCheck(Path(path), Path(target) if target else None, values, sglang).run()
