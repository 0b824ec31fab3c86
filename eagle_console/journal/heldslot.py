"""What a supervisor could not record yet (a full disk, an I/O error on the journal), kept beside the run spec
in `runs/<id>.held` — the exit slot's sibling (journal/exitslot.py) for the events before the exit: `::result`
lines, a service's readiness, the action's process ids, a ready service's death.

The engine reserves the slot with the run spec (HELD_BYTES of spaces: its blocks allocated while there is
room); the supervisor overwrites them in place, so keeping needs no new block on a full disk. Each record
carries its sequence number, and the journal writes a held record once (`held` in its data), so the
supervisor retrying and a reader replaying the slot after the supervisor died never record one twice.
What does not fit is said in the slot (`unkept`: how many, which), never silently dropped.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from eagle_console.journal.exitslot import overwrite_reserved
from eagle_console.statedir import runs_dir, write_private

HELD_BYTES = 32 << 10  # about 400 `::result` lines; the slot is emptied (0 bytes) once the run's exit is in
MAX_NAMES = 20  # what an `unkept` summary names, each cut to NAME_CHARS
NAME_CHARS = 64
SUMMARY_ROOM = 2048  # kept free for the `unkept` summary (MAX_NAMES names of NAME_CHARS, and the count)


def held_slot(state_dir: Path, run_id: int) -> Path:
    return runs_dir(state_dir) / f"{run_id}.held"


def reserve(path: Path) -> bool:
    """False when there is no room for it: the supervisor then holds its records in memory only (`keep`
    refuses a slot shorter than HELD_BYTES, so it never needs a new block)."""
    try:
        write_private(path, " " * HELD_BYTES)
        return True
    except OSError:
        return False


def describe(record: dict[str, Any]) -> str:
    """`result tok_s`, `ready`, `proc`: what a record is, for a run's reason."""
    name = f"result {record['name']}" if record.get("kind") == "result" else str(record.get("kind"))
    return name if len(name) <= NAME_CHARS else name[: NAME_CHARS - 1] + "…"


def unkept_text(records: list[dict[str, Any]], count: int | None = None) -> str:
    """`3 records (result a, result b, ready)`."""
    count = len(records) if count is None else count
    names = ", ".join(describe(r) for r in records[:MAX_NAMES]) + (", …" if count > MAX_NAMES else "")
    return f"{count} record{'s' if count != 1 else ''} ({names})"


def keep(path: Path, records: list[dict[str, Any]], lost: list[dict[str, Any]] | None = None) -> bool:
    """Write `records` over the reserved bytes — those that fit, in order; the rest (and `lost`, records the
    supervisor could not even hold) summed up in `unkept`. False if the slot could not be written at all."""
    parts: list[str] = []
    size = 0
    for record in records:  # in order, up to the room left for the summary (each encoded once per call)
        enc = json.dumps(record)
        if size + len(enc.encode()) + 2 > HELD_BYTES - SUMMARY_ROOM:
            break
        parts.append(enc)
        size += len(enc.encode()) + 2
    rest = records[len(parts):] + (lost or [])
    summary = f', "unkept": {json.dumps({"count": len(rest), "text": unkept_text(rest)})}' if rest else ""
    data = ('{"held": [' + ", ".join(parts) + "]" + summary + "}").encode()
    return overwrite_reserved(path, data, HELD_BYTES)


def read(path: Path) -> dict[str, Any] | None:
    """The slot's records (`held`, and `unkept` when some did not fit), or None (none, blank, unreadable)."""
    from eagle_console.inputfile import STATE_CAP, parse_json, read_text

    try:
        text = read_text(path, STATE_CAP).strip()
        doc = parse_json(text, path) if text else None
    except ValueError:  # InputFileError: missing, not a regular file, too big, not JSON
        return None
    return doc if isinstance(doc, dict) and (doc.get("held") or doc.get("unkept")) else None


def release(path: Path) -> None:
    """The run's exit is in the journal: the slot's blocks go back to the disk."""
    try:
        os.truncate(path, 0)
    except OSError:
        pass
