"""`drafter compare-vocab`: how two drafters' draft→target vocabulary mappings (d2t) differ."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from eagle_console.drafter.checkpoint import CheckpointError, safetensors_files
from eagle_console.drafter.safetensors_io import SafetensorsError, read_array, read_header


def load_d2t(path: Path) -> Any:
    """d2t (int64) of a drafter folder or of a single .safetensors file holding it."""
    path = Path(path)
    if path.is_dir():
        files, missing = safetensors_files(path)
        if missing:
            raise CheckpointError(str(missing[0]))
    elif path.exists():
        files = [path]
    else:
        raise CheckpointError(f"{path}: not found")
    for f in files:
        try:
            tensors, _ = read_header(f)
        except SafetensorsError as exc:
            raise CheckpointError(str(exc), "UNREADABLE_FILE") from None
        if "d2t" in tensors:
            if len(tensors["d2t"].shape) != 1:
                raise CheckpointError(f"{f}: d2t has shape {list(tensors['d2t'].shape)}, expected one dimension",
                                      "D2T_SHAPE")
            try:
                return read_array(tensors["d2t"]).astype("int64")
            except SafetensorsError as exc:
                raise CheckpointError(str(exc), "UNREADABLE_FILE") from None
    raise CheckpointError(f"{path}: no d2t tensor (not an EAGLE-3 drafter with a reduced vocabulary?)", "MISSING_TENSOR")


def compare_vocab(a: str | Path, b: str | Path) -> dict[str, Any]:
    """Positions whose mapped target id differs, and overlap of the two drafters' target-token sets."""
    import numpy as np

    d2t_a, d2t_b = load_d2t(Path(a)), load_d2t(Path(b))
    tgt_a = d2t_a + np.arange(d2t_a.shape[0], dtype=np.int64)
    tgt_b = d2t_b + np.arange(d2t_b.shape[0], dtype=np.int64)
    n = min(tgt_a.size, tgt_b.size)
    differ = int(np.count_nonzero(tgt_a[:n] != tgt_b[:n])) + abs(tgt_a.size - tgt_b.size)
    set_a, set_b = np.unique(tgt_a), np.unique(tgt_b)
    overlap = int(np.intersect1d(set_a, set_b, assume_unique=True).size)
    out = {
        "size_a": int(tgt_a.size),
        "size_b": int(tgt_b.size),
        "positions_differ": differ,
        "target_overlap": overlap,
        "only_in_a": int(set_a.size - overlap),
        "only_in_b": int(set_b.size - overlap),
    }
    out["meaning"] = meaning(out)
    return out


def meaning(r: dict[str, Any]) -> str:
    """One sentence on what the difference means for mixing one drafter's lm_head with the other's mapping."""
    if r["positions_differ"] == 0:
        return "The mappings are identical: either drafter's d2t/t2d can be used with the other's lm_head."
    return (
        f"{r['positions_differ']} of {max(r['size_a'], r['size_b'])} draft ids map to different target tokens "
        f"(the token sets share {r['target_overlap']}): each lm_head row was trained for its own d2t, so keep "
        "every drafter's own d2t/t2d; putting one drafter's mapping beside the other's lm_head would propose "
        "the wrong tokens."
    )


def verdict(r: dict[str, Any]) -> str:
    """`meaning` in two lines at 80 columns, for the console's Detail line (the whole sentence, with its
    why, is in the step's log and `drafter compare-vocab`): the count, then what to do."""
    if r["positions_differ"] == 0:
        return "the mappings are identical: either drafter's d2t/t2d works with the other's lm_head."
    return (f"{r['positions_differ']} of {max(r['size_a'], r['size_b'])} draft ids map to other target tokens "
            f"(the sets share {r['target_overlap']}): keep each drafter's own d2t/t2d with its own lm_head.")

