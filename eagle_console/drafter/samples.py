"""`extraction.verify`: open a sample of extracted hidden-state files — always including the longest ones —
and check keys, shapes against the target's hidden size and aux layer count, dtypes and finite values.

Two layouts are understood (reference §3): SpecForge offline capture (`input_ids`, `loss_mask`,
`aux_hidden_state [1, seq, layers*T]`, `hidden_state [1, seq, T]`) and speculators
(`token_ids [seq]`, `hidden_states [seq, layers+1, T]`). `.safetensors` files are read with numpy from
their headers; torch `.pt`/`.ckpt` files only when torch is importable.
"""

from __future__ import annotations

import fnmatch
import os
from pathlib import Path
from typing import Any

from eagle_console.drafter.safetensors_io import (
    FLOAT_DTYPES,
    SafetensorsError,
    read_array,
    read_float,
    read_header,
)

INT_DTYPES = ("I64", "I32", "I16", "I8", "U8", "BOOL")
# What an extraction writes: SpecForge `.ckpt` (`.ckpt.gz`), torch `.pt`, speculators `.safetensors`.
SAMPLE_SUFFIXES = (".pt", ".ckpt", ".ckpt.gz", ".safetensors")


def is_sample(name: str, pattern: str | None) -> bool:
    """A sample file of an extraction (the node's watch counts them, `extraction.verify` opens them)."""
    if name.startswith("."):
        return False  # temporary files of atomic writers
    return fnmatch.fnmatch(name, pattern) if pattern else name.endswith(SAMPLE_SUFFIXES)


def pick_sample(files: list[tuple[str, int]], count: int) -> list[str]:
    """Half the sample from the largest files (longest sequences: the ones nobody looked at), the rest
    spread evenly over the listing in name order."""
    if count >= len(files):
        return [f for f, _ in files]
    by_size = sorted(files, key=lambda f: -f[1])
    chosen = [f for f, _ in by_size[: max(1, count // 2)]]
    rest = [f for f, _ in sorted(files) if f not in set(chosen)]
    need = count - len(chosen)
    if need and rest:
        step = len(rest) / need
        chosen += [rest[int(i * step)] for i in range(need)]
    return chosen


class _Tensor:
    """A tensor's dtype/shape and a lazy loader, the same for safetensors and torch files."""

    def __init__(self, dtype: str, shape: tuple[int, ...], load: Any) -> None:
        self.dtype, self.shape, self.load = dtype, shape, load


def _open_safetensors(path: Path) -> dict[str, _Tensor]:
    tensors, _ = read_header(path)
    return {n: _Tensor(i.dtype, i.shape, (lambda i=i: read_float(i) if i.dtype in FLOAT_DTYPES else read_array(i)))
            for n, i in tensors.items()}


def _open_torch(path: Path) -> dict[str, _Tensor]:
    import gzip

    import torch  # only for .pt/.ckpt; callers check importability first

    opener = gzip.open if path.name.endswith(".gz") else open
    with opener(path, "rb") as f:
        obj = torch.load(f, map_location="cpu", weights_only=True)
    if not isinstance(obj, dict):
        raise ValueError(f"holds a {type(obj).__name__}, expected a dict of tensors")
    names = {torch.float32: "F32", torch.float16: "F16", torch.bfloat16: "BF16", torch.float64: "F64",
             torch.int64: "I64", torch.int32: "I32", torch.bool: "BOOL", torch.uint8: "U8"}
    out = {}
    for k, v in obj.items():
        if isinstance(v, torch.Tensor):
            out[k] = _Tensor(names.get(v.dtype, str(v.dtype)), tuple(v.shape),
                             (lambda v=v: v.float().numpy() if v.is_floating_point() else v.numpy()))
    return out


def check_sample(path: Path, hidden_size: int | None, layers: int | None) -> list[str]:
    """Problems of one sample file (empty: good)."""
    import numpy as np

    try:
        t = _open_safetensors(path) if path.name.endswith(".safetensors") else _open_torch(path)
    except (SafetensorsError, OSError, ValueError, RuntimeError, EOFError) as exc:
        return [f"unreadable: {exc}"]
    problems: list[str] = []
    layers = layers or 3
    if "aux_hidden_state" in t or "hidden_state" in t:  # SpecForge layout
        need = ("input_ids", "loss_mask", "aux_hidden_state", "hidden_state")
        ids_key, feats = "input_ids", {"aux_hidden_state": layers, "hidden_state": 1}
    elif "hidden_states" in t:  # speculators layout
        need = ("token_ids", "hidden_states")
        ids_key, feats = "token_ids", {"hidden_states": layers + 1}
    else:
        return [f"no hidden-state keys (found {sorted(t)}); expected aux_hidden_state/hidden_state or hidden_states"]
    missing = [k for k in need if k not in t]
    if missing:
        problems.append(f"missing keys {missing}")
    ids = t.get(ids_key)
    seq = ids.shape[-1] if ids is not None and ids.shape else None
    if ids is not None:
        if len(ids.shape) != 1 or not seq:
            problems.append(f"{ids_key} has shape {list(ids.shape)}, expected [seq] with seq > 0")
        if ids.dtype not in INT_DTYPES:
            problems.append(f"{ids_key} is {ids.dtype}, expected an integer dtype")
    mask = t.get("loss_mask")
    if mask is not None and seq is not None and tuple(mask.shape[-1:]) != (seq,):
        problems.append(f"loss_mask has shape {list(mask.shape)}, {ids_key} has {seq} tokens")
    for key, n_layers in feats.items():
        feat = t.get(key)
        if feat is None:
            continue
        if feat.dtype not in FLOAT_DTYPES:
            problems.append(f"{key} is {feat.dtype}, expected a float dtype")
            continue
        if key == "hidden_states":  # [seq, layers+1, T]
            want = (seq, n_layers, hidden_size)
        else:  # [1, seq, n*T]
            want = (1, seq, n_layers * hidden_size if hidden_size else None)
        if len(feat.shape) != 3 or any(w is not None and w != g for w, g in zip(want, feat.shape, strict=False)):
            shown = [w if w is not None else "?" for w in want]
            problems.append(f"{key} has shape {list(feat.shape)}, expected {shown}")
            continue
        try:
            values = feat.load()
        except (SafetensorsError, OSError, ValueError) as exc:
            problems.append(f"{key}: {exc}")
            continue
        bad = int(values.size - np.count_nonzero(np.isfinite(values)))
        if bad:
            problems.append(f"{key} has {bad} NaN/Inf values")
    return problems


def verify_extraction(path: str | Path, pattern: str | None = None, sample: int = 20,
                      hidden_size: int | None = None, layers: int | None = None) -> dict[str, Any]:
    """`{"ok", "files", "checked", "bad", "max_seq_file", "skipped", "problems": [{"file", "problems"}]}`."""
    root = Path(path)
    if not root.exists():
        raise FileNotFoundError(f"{root}: not found")
    files: list[tuple[str, int]] = []
    for dirpath, _dirs, names in os.walk(root):
        for name in names:
            if is_sample(name, pattern):
                full = os.path.join(dirpath, name)
                try:
                    files.append((full, os.stat(full).st_size))
                except OSError:
                    continue
    try:
        import torch  # noqa: F401
        have_torch = True
    except ImportError:
        have_torch = False
    chosen = pick_sample(files, sample)
    skipped = [f for f in chosen if not f.endswith(".safetensors") and not have_torch]
    report = []
    for f in chosen:
        if f in skipped:
            continue
        probs = check_sample(Path(f), hidden_size, layers)
        if probs:
            report.append({"file": f, "problems": probs})
    checked = len(chosen) - len(skipped)
    return {
        "ok": bool(checked) and not report,
        "files": len(files),
        "checked": checked,
        "bad": len(report),
        "largest_file": max(files, key=lambda f: f[1])[0] if files else None,
        "skipped": len(skipped),
        "skipped_reason": "torch is not installed: .pt/.ckpt files cannot be opened" if skipped else None,
        "problems": report,
    }
