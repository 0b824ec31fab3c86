"""Safetensors headers read through `safetensors.safe_open`: cut files are refused, offsets stay right."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from eagle_console.drafter.check import check_drafter
from eagle_console.drafter.safetensors_io import (
    SafetensorsError,
    read_array,
    read_float,
    read_header,
    write_file,
)
from eagle_console.sim import drafters as sim


def codes(result: dict[str, Any], severity: str | None = None) -> set[str]:
    return {f["code"] for f in result["findings"] if severity is None or f["severity"] == severity}


def _drafter_with_d2t_last(folder: Path) -> Path:
    tensors = sim.draft_tensors(sim.draft_config(), sim.k25_target_ids())
    d2t = tensors.pop("d2t")
    tensors["d2t"] = d2t  # last in the file, so a cut tail lands inside it
    return sim.write_drafter(folder, sim.draft_config(), tensors)


def test_a_truncated_file_is_refused_as_unreadable_not_as_a_d2t_shape(tmp_path: Path) -> None:
    folder = _drafter_with_d2t_last(tmp_path / "drafter")
    weights = folder / "model.safetensors"
    os.truncate(weights, weights.stat().st_size - 16)  # a partial download
    r = check_drafter(folder)
    errors = [f for f in r["findings"] if f["severity"] == "error"]
    assert "UNREADABLE_FILE" in codes(r, "error"), errors
    assert "D2T_SHAPE" not in codes(r), errors
    unreadable = next(f["message"] for f in errors if f["code"] == "UNREADABLE_FILE")
    assert str(weights) in unreadable and "truncated" in unreadable


def test_read_header_refuses_a_truncated_file(tmp_path: Path) -> None:
    f = tmp_path / "x.safetensors"
    write_file(f, {"a": np.arange(6, dtype=np.int64)})
    os.truncate(f, f.stat().st_size - 8)
    with pytest.raises(SafetensorsError, match="truncated"):
        read_header(f)


def test_garbage_and_missing_files_raise_safetensors_errors(tmp_path: Path) -> None:
    bad = tmp_path / "bad.safetensors"
    bad.write_bytes(b"not a safetensors file at all")
    with pytest.raises(SafetensorsError, match=str(bad)):
        read_header(bad)
    with pytest.raises(SafetensorsError, match="No such file|not found"):
        read_header(tmp_path / "absent.safetensors")


def test_offsets_follow_the_data_order_not_the_name_order(tmp_path: Path) -> None:
    """The library writes tensors by dtype size then name; our offsets must match its layout."""
    from safetensors.numpy import save_file

    f = tmp_path / "lib.safetensors"
    arrays = {"z": np.arange(12, dtype=np.float32).reshape(3, 4), "b": np.arange(5, dtype=np.int64),
              "a": np.array([1, 2, 3], dtype=np.uint16), "m": np.array([True, False])}
    save_file(arrays, str(f), metadata={"format": "pt"})
    tensors, metadata = read_header(f)
    assert metadata == {"format": "pt"}
    for name, want in arrays.items():
        assert np.array_equal(read_array(tensors[name]), want), name


def test_bf16_values_are_read_raw_and_widened_bit_exactly(tmp_path: Path) -> None:
    f = tmp_path / "bf16.safetensors"
    bits = np.array([0x3F80, 0xC000, 0x7F80], dtype=np.uint16)  # 1.0, -2.0, +inf
    write_file(f, {"w": (bits, "BF16"), "i": np.arange(3, dtype=np.int32)})
    tensors, _ = read_header(f)
    assert tensors["w"].dtype == "BF16" and tensors["w"].shape == (3,)
    assert read_float(tensors["w"]).tolist() == [1.0, -2.0, float("inf")]
