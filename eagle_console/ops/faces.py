"""Who acted, in the status document: each step's last change and latest run say who and through which face
(`console`, `cli`, `agent:<client>`), and the requests that wait for a person are listed (ops/approvals.py).
`status --json` and the agent's `plan_status` add these to the same document."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from eagle_console.journal import StepState
    from eagle_console.journal.approvals import Approval


def add_face_keys(doc: dict[str, Any], states: Mapping[str, StepState]) -> dict[str, Any]:
    """Each step gains `changed`: {"who", "face", "at"} of its last status change, or null (never changed)."""
    for phase in doc["phases"]:
        for step in phase["steps"]:
            st = states.get(step["id"])
            step["changed"] = None if st is None else {"who": st.who, "face": st.face, "at": st.at}
    return doc


def add_approval_keys(doc: dict[str, Any], approvals: Sequence[Approval]) -> dict[str, Any]:
    """`approvals`: every request still awaiting approval; a step with one gains `approval` (its id, status
    `awaiting_approval`, what it asks), null otherwise."""
    waiting = [a for a in approvals if a.open]
    by_target = {a.target: a for a in waiting if a.target}
    doc["approvals"] = [a.to_json() for a in waiting]
    for phase in doc["phases"]:
        for step in phase["steps"]:
            a = by_target.get(step["id"])
            step["approval"] = None if a is None else {"id": a.id, "action": a.action, "status": a.status,
                                                       "asked": {"who": a.asked_by, "face": a.asked_face,
                                                                 "at": a.asked_at}}
    return doc
