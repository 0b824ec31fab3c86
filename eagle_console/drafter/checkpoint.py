"""A drafter (or model) folder: config.json plus the tensor index of its safetensors files, sharded or not."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from eagle_console.drafter.safetensors_io import SafetensorsError, TensorInfo, read_header

INDEX_NAME = "model.safetensors.index.json"


class CheckpointError(Exception):
    """A file the checkpoint needs is missing or unreadable. `code` is the finding code it maps to."""

    def __init__(self, message: str, code: str = "MISSING_FILE") -> None:
        super().__init__(message)
        self.code = code


@dataclass
class Checkpoint:
    path: Path
    config: dict[str, Any]
    tensors: dict[str, TensorInfo] = field(default_factory=dict)
    files: list[Path] = field(default_factory=list)
    problems: list[CheckpointError] = field(default_factory=list)  # e.g. one shard missing; the rest loads


def read_json(path: Path) -> dict[str, Any]:
    """A JSON object from `path`, or CheckpointError with file:line:column of a syntax error."""
    from eagle_console.inputfile import CONFIG_CAP, NOT_FOUND, InputFileError, load_json

    try:  # a model folder may be shared: a FIFO, a device or a 1 GB file in its place is refused, not read
        data = load_json(path, CONFIG_CAP)
    except InputFileError as exc:
        if exc.why == NOT_FOUND:
            raise CheckpointError(f"{path}: not found") from None
        if exc.why.startswith("cannot be read"):  # permissions: as a missing file, as before
            raise CheckpointError(str(exc)) from None
        raise CheckpointError(str(exc), "CONFIG_INVALID") from None
    if not isinstance(data, dict):
        raise CheckpointError(f"{path}: expected a JSON object", "CONFIG_INVALID")
    return data


def text_config(config: dict[str, Any]) -> dict[str, Any]:
    """The language model part of a model config: multimodal wrappers (Kimi-K2.5) nest it in `text_config`."""
    inner = config.get("text_config")
    return inner if isinstance(inner, dict) else config


def flat_draft_config(config: dict[str, Any]) -> dict[str, Any]:
    """Draft config fields in one dict: the speculators format keeps the Llama fields in
    `transformer_layer_config` and the EAGLE-3 ones at the top; SpecForge keeps them all at the top."""
    inner = config.get("transformer_layer_config")
    if isinstance(inner, dict):
        return {**inner, **{k: v for k, v in config.items() if k != "transformer_layer_config"}}
    return config


def safetensors_files(folder: Path) -> tuple[list[Path], list[CheckpointError]]:
    """Shards listed by the index when there is one, else every *.safetensors file in the folder."""
    index = folder / INDEX_NAME
    if index.exists():
        data = read_json(index)
        weight_map = data.get("weight_map")
        if not isinstance(weight_map, dict):
            raise CheckpointError(f"{index}: no weight_map object", "CONFIG_INVALID")
        names = sorted(set(map(str, weight_map.values())))
        present = [folder / n for n in names if (folder / n).exists()]
        missing = [CheckpointError(f"{folder / n}: shard listed in {INDEX_NAME} is missing")
                   for n in names if not (folder / n).exists()]
        return present, missing
    return sorted(folder.glob("*.safetensors")), []


def load_checkpoint(folder: Path) -> Checkpoint:
    """Config and tensor headers of `folder`; raises CheckpointError only when nothing useful can load."""
    folder = Path(folder)
    if not folder.is_dir():
        raise CheckpointError(f"{folder}: not a directory")
    config = read_json(folder / "config.json")
    files, problems = safetensors_files(folder)
    if not files and not problems:
        problems.append(CheckpointError(f"{folder}: no *.safetensors weights found"))
    ckpt = Checkpoint(path=folder, config=config, files=files, problems=problems)
    for f in files:
        try:
            tensors, _ = read_header(f)
        except SafetensorsError as exc:
            ckpt.problems.append(CheckpointError(str(exc), "UNREADABLE_FILE"))
            continue
        ckpt.tensors.update(tensors)
    return ckpt
