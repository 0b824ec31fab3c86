"""`drafter check`: what would make an EAGLE-3 drafter fail to load, load wrong, or accept badly with a target.

Findings follow cli.md ("Drafter finding codes"); the facts behind each one are in
reference/eagle3-drafters.md (key names and shapes, d2t/t2d, aux-layer conventions, norm placement).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, TypedDict

from eagle_console.drafter.checkpoint import (
    Checkpoint,
    CheckpointError,
    flat_draft_config,
    load_checkpoint,
    read_json,
    text_config,
)
from eagle_console.drafter.safetensors_io import FLOAT_DTYPES, SafetensorsError, count_nonfinite, read_array
from eagle_console.findings import Finding, FindingJson, Severity, by_severity

REQUIRED_FIELDS = ("hidden_size", "num_attention_heads", "num_key_value_heads", "intermediate_size",
                   "vocab_size", "max_position_embeddings")
# The single decoder layer is `midlayer.*` in SpecForge/SGLang exports and `layers.0.*` after a
# speculators / multi-layer rename; both load.
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


def context_length(cfg: dict[str, Any]) -> int | None:
    """The context length SGLang derives from a config (key priority, then rope_scaling.factor)."""
    value = None
    for key in ("max_sequence_length", "seq_length", "max_seq_len", "model_max_length", "max_position_embeddings"):
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


def describe_convention(ids: list[int], n_layers: int) -> tuple[str, bool]:
    """Which aux-layer numbering convention `ids` look like for an N-layer target (reference §2, §4.1), and
    whether they are exactly that convention's default."""
    output_of_block = [1, n_layers // 2 - 1, n_layers - 4]
    input_to_layer = [2, n_layers // 2, n_layers - 3]
    if ids == output_of_block:
        return (f"the SpecForge/EAGLE 'output of block i' convention (default {output_of_block} for {n_layers} "
                "layers); SGLang adds +1 when the first id is 1", True)
    if ids == input_to_layer:
        return (f"the 'input to layer i' convention (SGLang/vLLM default {input_to_layer} for {n_layers} layers); "
                "SGLang >= PR #25454 uses them as-is, older SGLang added +1 (off by one)", True)
    if ids and ids[0] == 1:
        return (f"the 'output of block i' (SpecForge) convention, with the last id of a {ids[-1] + 4}-layer "
                "target", False)
    if ids and ids[0] == 2:
        return (f"the 'input to layer i' (SGLang/vLLM) convention, with the last id of a {ids[-1] + 3}-layer "
                "target", False)
    return ("neither convention (first id 1: 'output of block i', first id 2: 'input to layer i')", False)


class DrafterCheck:
    """Collects findings for one drafter folder (and optionally its target model folder)."""

    def __init__(self, path: Path, target: Path | None = None, values: bool = False) -> None:
        self.path = Path(path)
        self.target = Path(target) if target else None
        self.values = values
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
        for key in REQUIRED_FIELDS:
            if not isinstance(cfg.get(key), int):
                self.add("error", "CONFIG_MISSING_FIELD",
                         f"config.json has no integer {key!r}; SGLang cannot build the draft model without it")
        if cfg.get("draft_vocab_size") is None:
            self.add("warning", "CONFIG_MISSING_FIELD",
                     "config.json has no draft_vocab_size: SGLang then loads lm_head from the target (full "
                     "vocabulary); set it to lm_head's row count if the drafter has a reduced vocabulary")

        def num(key: str) -> int | None:
            v = cfg.get(key)
            return v if isinstance(v, int) else None

        hidden, heads = num("hidden_size"), num("num_attention_heads")
        head_dim = num("head_dim") or (hidden // heads if hidden and heads else None)
        return {
            "H": hidden, "T": num("target_hidden_size") or hidden, "I": num("intermediate_size"),
            "nh": heads, "nkv": num("num_key_value_heads"), "hd": head_dim,
            "V": num("vocab_size"), "Vd": num("draft_vocab_size"),
        }

    # -- tensors -----------------------------------------------------------------------------------------

    def layer_prefix(self) -> str:
        tensors = self.ckpt.tensors if self.ckpt else {}
        for prefix in LAYER_PREFIXES:
            if any(name.startswith(prefix) for name in tensors):
                return prefix
        return LAYER_PREFIXES[0]

    def expected_shapes(self, cfg: dict[str, Any], d: dict[str, int | None]) -> dict[str, tuple[Any, ...]]:
        H, T, inter, nh, nkv, hd, Vd = d["H"], d["T"], d["I"], d["nh"], d["nkv"], d["hd"], d["Vd"]
        q = nh * hd if nh and hd else None
        kv = nkv * hd if nkv and hd else None
        two_h = 2 * H if H else None
        p = self.layer_prefix()
        shapes: dict[str, tuple[Any, ...]] = {
            f"{p}self_attn.q_proj.weight": (q, two_h),
            f"{p}self_attn.k_proj.weight": (kv, two_h),
            f"{p}self_attn.v_proj.weight": (kv, two_h),
            f"{p}self_attn.o_proj.weight": (H, q),
            f"{p}mlp.gate_proj.weight": (inter, H),
            f"{p}mlp.up_proj.weight": (inter, H),
            f"{p}mlp.down_proj.weight": (H, inter),
            f"{p}hidden_norm.weight": (H,),
            f"{p}input_layernorm.weight": (H,),
            f"{p}post_attention_layernorm.weight": (H,),
            "norm.weight": (H,),
            "lm_head.weight": (Vd or d["V"], H),
        }
        eagle = cfg.get("eagle_config") if isinstance(cfg.get("eagle_config"), dict) else {}
        if eagle.get("use_aux_hidden_state", True) is not False:
            shapes["fc.weight"] = (H, 3 * T if T else None)
        return shapes

    def check_tensors(self, cfg: dict[str, Any], d: dict[str, int | None]) -> None:
        tensors = self.ckpt.tensors if self.ckpt else {}
        if not tensors:
            return
        tied = bool(cfg.get("tie_word_embeddings"))
        for name, want in self.expected_shapes(cfg, d).items():
            info = tensors.get(name)
            if info is None:
                if name == "lm_head.weight" and (tied or d["Vd"] is None):
                    continue  # taken from embed_tokens or from the target
                self.add("error", "MISSING_TENSOR", f"tensor {name!r} is missing; SGLang's EAGLE-3 loader needs it "
                         "(was the drafter exported with SpecForge's to_sglang?)")
                continue
            if len(info.shape) != len(want) or any(w is not None and w != got for w, got in zip(want, info.shape, strict=False)):
                shown = [w if w is not None else "?" for w in want]
                self.add("error", "TENSOR_SHAPE", f"{name} is {list(info.shape)}, config.json implies {shown}; "
                         "the config does not describe these weights")
        embed = tensors.get("embed_tokens.weight")
        if embed is not None and d["V"] and d["H"] and embed.shape != (d["V"], d["H"]):
            self.add("error", "TENSOR_SHAPE", f"embed_tokens.weight is {list(embed.shape)}, expected "
                     f"[{d['V']}, {d['H']}] (vocab_size x hidden_size)")
        for i in range(3):
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
        for name, info in (("d2t", d2t_info), ("t2d", t2d_info)):
            if info is None:
                self.add("error", "MISSING_TENSOR", f"tensor {name!r} is missing: without the vocabulary mapping "
                         "draft ids are taken as target ids 0..Vd-1 and acceptance collapses; copy the "
                         "vocab_mapping the drafter was trained with")
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
            target = text_config(read_json(self.target / "config.json"))  # type: ignore[operator]
        except CheckpointError as exc:
            self.add("error", "MISSING_FILE" if exc.code == "MISSING_FILE" else exc.code,
                     f"target model: {exc}")
            return
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
        n_layers = target.get("num_hidden_layers")
        ids = aux_layer_ids(cfg)
        if ids is None:
            default = f"[2, {n_layers // 2}, {n_layers - 3}]" if isinstance(n_layers, int) else "a default"
            self.add("warning", "AUX_LAYERS", f"no eagle_aux_hidden_state_layer_ids in config.json: engines use "
                     f"{default}; write the ids the drafter was trained with into eagle_config")
            return
        if not isinstance(n_layers, int):
            return
        convention, exact = describe_convention(ids, n_layers)
        out = [i for i in ids if i < 0 or i >= n_layers]
        if out:
            self.add("error", "AUX_LAYERS", f"aux layer ids {ids} include {out}, outside 0..{n_layers - 1} of the "
                     f"target's {n_layers} layers; they look like {convention}: use the ids the drafter was trained "
                     "with, in the numbering this engine version expects")
        elif len(ids) != 3:
            self.add("warning", "AUX_LAYERS", f"{len(ids)} aux layer ids {ids}; EAGLE-3 fc expects 3")
        elif not exact:
            self.add("warning", "AUX_LAYERS", f"aux layer ids {ids} are {convention} ({n_layers} layers): was the "
                     "drafter trained on a target with a different depth?")
        else:
            self.add("info", "AUX_LAYERS", f"aux layer ids {ids}: {convention}")

    # -- norm placement and values ---------------------------------------------------------------------

    def check_norm(self, cfg: dict[str, Any]) -> None:
        if "norm_before_residual" not in cfg:
            self.add("warning", "NORM_BEFORE_RESIDUAL_UNSET", "config.json does not set norm_before_residual: "
                     "vLLM's speculators loader defaults it to true, SpecForge/HF configs to false; a wrong "
                     "placement still runs but accepts badly. Set it explicitly (false for SpecForge-trained "
                     "drafters)")

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


def check_drafter(path: str | Path, target: str | Path | None = None, values: bool = False) -> DrafterReport:
    """The `drafter check --json` document for drafter folder `path` (and target model folder `target`)."""
    return DrafterCheck(Path(path), Path(target) if target else None, values).run()
