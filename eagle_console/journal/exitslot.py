"""A run's exit kept beside its spec when the journal cannot take it (a full disk), so a run that exited 0
never becomes `lost` (issue #18).

The engine reserves the slot when it writes the run spec — a file of SLOT_BYTES spaces, its blocks allocated
while there is room — and the supervisor overwrites those bytes in place: no new block is needed on a full
disk. The supervisor then retries the journal until space returns; if it dies meanwhile, the readers'
reconcile takes the exit from the slot instead of calling the run `lost`.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from eagle_console.statedir import runs_dir, write_private

SLOT_BYTES = 1024
# How a kept reason begins when the supervisor could not record itself: its action never started.
NOT_STARTED = "not started"
RETRY_S = 2.0


def exit_slot(state_dir: Path, run_id: int) -> Path:
    return runs_dir(state_dir) / f"{run_id}.exit"


def reserve(path: Path) -> None:
    write_private(path, " " * SLOT_BYTES)


def keep(path: Path, record: dict[str, Any]) -> bool:
    """Write `record` (end_run's keywords) over the reserved bytes; False if it could not be kept."""
    data = json.dumps(record).encode()
    reason = record.get("reason") or ""
    while len(data) > SLOT_BYTES and reason:  # a long reason is cut, the exit and outcome kept
        # cut the text, never the JSON: escapes (\u2026 is 6 bytes) make it longer than its characters
        reason = reason[: min(len(reason) - 1, SLOT_BYTES // 2)]
        data = json.dumps({**record, "reason": reason + "…"}).encode()
    if len(data) > SLOT_BYTES:
        return False
    return overwrite_reserved(path, data, SLOT_BYTES, reserved_only=False)


def overwrite_reserved(path: Path, data: bytes, size: int, reserved_only: bool = True) -> bool:
    """`data` padded to `size` written over a slot's reserved bytes, in place and synced (no new block on a
    full disk); False when it could not be (no slot, an I/O error, or — `reserved_only` — a slot shorter
    than `size`: the exit slot still tries then, its last chance; the held slot keeps to memory)."""
    try:
        fd = os.open(path, os.O_WRONLY)
    except OSError:
        return False
    try:
        if reserved_only and os.fstat(fd).st_size < size:
            return False  # not reserved (emptied, or a spec from before slots): writing would need new blocks
        os.pwrite(fd, data.ljust(size), 0)
        os.fsync(fd)
        return True
    except OSError:
        return False
    finally:
        os.close(fd)


def read(path: Path) -> dict[str, Any] | None:
    """The kept exit, or None (no slot, still blank, or unreadable)."""
    from eagle_console.inputfile import STATE_CAP, parse_json, read_text

    try:
        text = read_text(path, STATE_CAP).strip()
        return parse_json(text, path) if text else None
    except ValueError:  # InputFileError: missing, not a regular file, too big, not JSON
        return None
