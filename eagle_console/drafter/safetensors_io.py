"""Safetensors files: headers through the `safetensors` library, single tensors' raw bytes by hand.

Inspecting a checkpoint must not read gigabytes of weights, so names, shapes and dtypes come from the
header alone; only the small tensors we need as values (d2t, t2d, sample features) are read, at their
offsets, with numpy. Values stay our own read because numpy has no bfloat16 (the library's numpy
loader refuses BF16 tensors), and drafters are BF16.
"""

from __future__ import annotations

import json
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# safetensors dtype -> (numpy dtype string, bytes per element)
DTYPES: dict[str, tuple[str, int]] = {
    "F64": ("<f8", 8), "F32": ("<f4", 4), "F16": ("<f2", 2), "BF16": ("<u2", 2),
    "I64": ("<i8", 8), "I32": ("<i4", 4), "I16": ("<i2", 2), "I8": ("i1", 1),
    "U64": ("<u8", 8), "U32": ("<u4", 4), "U16": ("<u2", 2), "U8": ("u1", 1),
    "BOOL": ("?", 1), "F8_E4M3": ("u1", 1), "F8_E5M2": ("u1", 1),
}
FLOAT_DTYPES = ("F64", "F32", "F16", "BF16")
# Every dtype the safetensors format defines -> bits per element (spans in the file follow from these).
DTYPE_BITS: dict[str, int] = {
    **{name: width * 8 for name, (_, width) in DTYPES.items()},
    "F8_E8M0": 8, "C64": 64, "F4": 4, "F6_E2M3": 6, "F6_E3M2": 6,
}


class SafetensorsError(Exception):
    """The file is not a readable safetensors file; the message names the file."""


@dataclass(frozen=True)
class TensorInfo:
    name: str
    dtype: str  # safetensors spelling: "BF16", "I64", "BOOL" ...
    shape: tuple[int, ...]
    file: Path
    start: int  # absolute byte offset of the data in `file`
    end: int

    @property
    def numel(self) -> int:
        n = 1
        for d in self.shape:
            n *= d
        return n

    @property
    def nbytes(self) -> int:
        return self.end - self.start


def read_header(path: Path) -> tuple[dict[str, TensorInfo], dict[str, Any]]:
    """Tensors of one file (by name) and its `__metadata__`, from the header only.

    `safetensors.safe_open` parses and validates the header (faster than json here, and it refuses a file
    whose size does not match its header, e.g. a partial download, which a JSON read alone accepts). The
    library does not give byte offsets, but it guarantees the data are packed with no gaps in
    `offset_keys()` order, so each tensor's span follows from the dtype widths.
    """
    from safetensors import SafetensorError, safe_open

    try:
        with open(path, "rb") as f:
            raw_len = f.read(8)
        with safe_open(str(path), framework="numpy") as handle:
            entries = [(name, handle.get_slice(name)) for name in handle.offset_keys()]
            layout = [(name, str(s.get_dtype()), tuple(int(d) for d in s.get_shape())) for name, s in entries]
            metadata = dict(handle.metadata() or {})
    except OSError as exc:
        raise SafetensorsError(f"{path}: {exc.strerror or exc}") from None
    except SafetensorError as exc:
        raise SafetensorsError(f"{path}: {_explain(str(exc))}") from None
    (n,) = struct.unpack("<Q", raw_len)  # safe_open has checked the file holds the 8 bytes and the header
    offset = 8 + n
    tensors: dict[str, TensorInfo] = {}
    for name, dtype, shape in layout:
        if dtype not in DTYPE_BITS:
            raise SafetensorsError(f"{path}: tensor {name!r} has dtype {dtype}, unknown to eagle-console")
        numel = 1
        for d in shape:
            numel *= d
        size = (numel * DTYPE_BITS[dtype] + 7) // 8
        tensors[name] = TensorInfo(name=name, dtype=dtype, shape=shape, file=path, start=offset, end=offset + size)
        offset += size
    return tensors, metadata


def _explain(message: str) -> str:
    """The library's reason, with what it means for a checkpoint where that is not obvious."""
    if "not fully covered" in message or "incomplete" in message.lower():
        return f"file size does not match its header: truncated (a partial download?) or padded ({message})"
    return f"not a readable safetensors file ({message})"


def read_array(info: TensorInfo) -> Any:
    """The tensor as a numpy array (BF16 comes back as its raw uint16 bits; see `float_bits_nonfinite`)."""
    import numpy as np

    if info.dtype not in DTYPES:
        raise SafetensorsError(f"{info.file}: tensor {info.name!r} has dtype {info.dtype} that numpy cannot read")
    np_dtype, width = DTYPES[info.dtype]
    if info.nbytes != info.numel * width:
        raise SafetensorsError(
            f"{info.file}: tensor {info.name!r} spans {info.nbytes} bytes, expected {info.numel * width} "
            f"for {info.dtype}{list(info.shape)}"
        )
    with open(info.file, "rb") as f:
        f.seek(info.start)
        raw = f.read(info.nbytes)
    if len(raw) != info.nbytes:
        raise SafetensorsError(f"{info.file}: file ends inside tensor {info.name!r}")
    return np.frombuffer(raw, dtype=np_dtype).reshape(info.shape)


def read_float(info: TensorInfo) -> Any:
    """A float tensor as float32 numpy (BF16 widened bit-exactly)."""
    import numpy as np

    arr = read_array(info)
    if info.dtype == "BF16":
        return (arr.astype(np.uint32) << 16).view(np.float32)
    return arr.astype(np.float32, copy=False)


def count_nonfinite(info: TensorInfo, chunk_bytes: int = 64 * 1024 * 1024) -> int:
    """NaN/Inf count of a float tensor, read in chunks through a memmap (all-ones exponent bits)."""
    import numpy as np

    masks = {"F16": ("<u2", 0x7C00), "BF16": ("<u2", 0x7F80), "F32": ("<u4", 0x7F800000),
             "F64": ("<u8", 0x7FF0000000000000)}
    if info.dtype not in masks or info.numel == 0:
        return 0
    int_dtype, mask = masks[info.dtype]
    mm = np.memmap(info.file, dtype=int_dtype, mode="r", offset=info.start, shape=(info.numel,))
    step = max(1, chunk_bytes // mm.itemsize)
    bad = 0
    m = np.array(mask, dtype=int_dtype)
    for i in range(0, info.numel, step):
        part = mm[i:i + step]
        bad += int(np.count_nonzero((part & m) == m))
    del mm
    return bad


def write_file(path: Path, tensors: dict[str, Any], metadata: dict[str, str] | None = None,
               sparse_tail: dict[str, int] | None = None) -> None:
    """Write numpy arrays as safetensors (used by the simulator and tests, so the reader is tested
    against files it did not write itself too: tests also use `safetensors.numpy.save_file`).

    `sparse_tail`: name -> byte count of an extra U8 tensor of zeros left as a hole in the file, so a
    sample can declare a large logical size without using disk.
    """
    import numpy as np

    names = {"float64": "F64", "float32": "F32", "float16": "F16", "int64": "I64", "int32": "I32",
             "int16": "I16", "int8": "I8", "uint64": "U64", "uint32": "U32", "uint16": "U16", "uint8": "U8",
             "bool": "BOOL"}
    header: dict[str, Any] = {}
    if metadata:
        header["__metadata__"] = metadata
    blobs: list[bytes] = []
    offset = 0
    for name, value in tensors.items():
        # (uint16 array, "BF16") writes raw bfloat16 bits; numpy has no bfloat16 of its own
        arr, dtype = value if isinstance(value, tuple) else (value, None)
        arr = np.ascontiguousarray(arr)
        dtype = dtype or names.get(arr.dtype.name)
        if dtype is None:
            raise ValueError(f"cannot write dtype {arr.dtype}")
        data = arr.astype(arr.dtype.newbyteorder("<")).tobytes()
        header[name] = {"dtype": dtype, "shape": list(arr.shape), "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    for name, size in (sparse_tail or {}).items():
        header[name] = {"dtype": "U8", "shape": [size], "data_offsets": [offset, offset + size]}
        offset += size
    raw = json.dumps(header, separators=(",", ":")).encode()
    raw += b" " * (-len(raw) % 8)  # keep data 8-byte aligned as the reference writer does
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(raw)))
        f.write(raw)
        for b in blobs:
            f.write(b)
        f.truncate(8 + len(raw) + offset)  # the sparse tail: a hole, no blocks written
