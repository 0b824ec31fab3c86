"""A run's spec handed to a Ray job on its node through a private file there, never its command line.

A job's entrypoint is anyone's to read: every local user of the node sees it in `ps`, and Ray writes it
into the job's driver log and keeps it in the GCS's job table (the dashboard's job list). A spec holds the
plan's `[env]` (an HF token) and the built-ins' `with` values (a URL with a password), so it goes to the
node's agent instead (cluster/agent.py, a Ray actor call: its arguments go over Ray's RPC, not into a log),
which writes it into a folder of its own there: `mkdtemp` (0700, a name nobody can guess), the file 0600.
The job runs on the same node (both are pinned by its `eagle-node:NAME` resource) as the same user, and
takes the file: reads it and removes it with its folder, so nothing of it outlives the job's start.
No Ray import here: the job's side (engine/supervise.py, cluster/rank_session.py) runs without Ray.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

SPEC_DIR_PREFIX = "eagle-console-spec-"
SPEC_NAME = "spec.json"


def put_spec(data: dict[str, Any]) -> str:
    """Write `data` to a new private file on this machine; returns its path (what the entrypoint names)."""
    from eagle_console.statedir import write_private

    folder = Path(tempfile.mkdtemp(prefix=SPEC_DIR_PREFIX))  # 0700, ours, an unguessable name
    path = folder / SPEC_NAME
    write_private(path, json.dumps(data))
    return str(path)


def take_spec(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Read the spec at `path` and remove it (and the folder put_spec made for it)."""
    path = Path(path)
    try:
        return json.loads(path.read_text())
    finally:
        drop_spec(path)


def drop_spec(path: str | os.PathLike[str]) -> None:
    """Remove a spec put_spec wrote (a job that was never submitted); a missing one is no error."""
    path = Path(path)
    if path.name != SPEC_NAME or not path.parent.name.startswith(SPEC_DIR_PREFIX):
        return  # only what put_spec made
    path.unlink(missing_ok=True)
    try:
        path.parent.rmdir()
    except OSError:
        pass
