"""The exit slot keeps a run's exit when the journal cannot (issue #18). A long reason is cut so the record
fits the slot; cutting the encoded bytes instead left invalid JSON when the reason was not ASCII (each
character escaped to 6 bytes), and the run read `lost` — what the slot is there to prevent."""

from __future__ import annotations

import pytest

from eagle_console.journal import exitslot


@pytest.mark.parametrize("reason", ["x" * 3000, "é" * 600, "🔥" * 300])
def test_a_long_reason_is_cut_and_the_exit_still_reads(tmp_path, reason):
    slot = tmp_path / "1.exit"
    exitslot.reserve(slot)
    record = {"exit_code": 0, "outcome": "completed", "reason": reason, "step_status": "completed"}
    assert exitslot.keep(slot, record)
    kept = exitslot.read(slot)
    assert kept is not None and slot.stat().st_size == exitslot.SLOT_BYTES
    assert (kept["exit_code"], kept["outcome"], kept["step_status"]) == (0, "completed", "completed")
    assert kept["reason"].endswith("…") and reason.startswith(kept["reason"][:-1])
