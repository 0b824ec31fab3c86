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

from eagle_console.statedir import write_private

SLOT_BYTES = 1024
RETRY_S = 2.0


def exit_slot(state_dir: Path, run_id: int) -> Path:
    return Path(state_dir) / "runs" / f"{run_id}.exit"


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
    try:
        fd = os.open(path, os.O_WRONLY)
    except OSError:
        return False
    try:
        os.pwrite(fd, data.ljust(SLOT_BYTES), 0)
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
