"""The GPU reading for the faces (the GPUs pane, `gpus`, `orphans`): node/reading.py's one reading, with
this machine's tracked runs taken from the journal (node/tracked.py: the journal's runs, a multi-node
server's rank sessions here), so every face classifies a holder the same way. A cluster node's agent reads
with node/reading.py itself (it has no journal: the console sends it the runs on its node).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from eagle_console.node.reading import GpuReader as GpuReader
from eagle_console.node.reading import GpuReading as GpuReading
from eagle_console.node.reading import sample_once as sample_once
from eagle_console.node.tracked import tracked_here

if TYPE_CHECKING:
    from eagle_console.journal import Journal


def read_gpus(reader: GpuReader, journal: Journal | None = None, here: str | None = None) -> GpuReading:
    """One reading of `reader`'s GPUs, holders classified against the journal's runs on this machine (`here`:
    the cluster node that is this machine, when known). Without a journal no run is tracked. A reader with a
    kept scan (the GPUs pane's) reads the runs only when the journal's last event id moved."""
    if reader.reuse is None or journal is None:
        return reader.read(tracked_here(journal, here))
    return reader.read(lambda: tracked_here(journal, here), runs_at=(journal.last_event_id(), here))


def read_gpus_once(sim_dir: Path | None, journal: Journal | None = None) -> GpuReading:
    with GpuReader(sim_dir) as reader:
        return read_gpus(reader, journal)
