"""The kinds of journal events: the one list every writer and reader of the journal names them from.

A `StrEnum`, so a member is the very text stored in the `events.kind` column (journals written before
this module existed read the same) and compares equal to the plain string an `Event` carries.
"""

from __future__ import annotations

import sys
from enum import Enum

if sys.version_info >= (3, 11):
    from enum import StrEnum
else:  # Python 3.10 (our floor) has no StrEnum: the same behaviour, str() and format() give the value
    class StrEnum(str, Enum):
        __str__ = str.__str__
        __format__ = str.__format__


class EventKind(StrEnum):
    STATUS = "status"  # a step's status changed (mark, run, ready, rollback)
    NOTE = "note"
    RESULT = "result"  # a `RESULT name=value` line of a run's output
    RUN_BEGIN = "run_begin"
    RUN_PROC = "run_proc"  # the supervisor's and the action's process ids
    RUN_LOG = "run_log"  # the run's log path, known once the supervisor spec is written
    RUN_READY = "run_ready"  # a service passed its `ready` check
    RUN_EXIT = "run_exit"
    RUN_STOP = "run_stop"  # a rollback asked a service to stop: its exit is not a death
    SERVICE_DIED = "service_died"  # a ready service exited on its own
    ROLLBACK_BEGIN = "rollback_begin"
    ROLLBACK_PROC = "rollback_proc"
    ROLLBACK_END = "rollback_end"
    KILL = "kill"  # GPU processes signalled (the kill report)
    APPROVAL_ASKED = "approval_asked"  # an agent's run, rollback or kill waits for a person (journal/approvals.py)
    APPROVAL_DECIDED = "approval_decided"  # approved or denied (run_id: the request), by whom, with a note
    APPROVAL_DONE = "approval_done"  # what the approval started: a run, a rollback, a kill, or why it could not


# The kinds `Journal.runs()` folds into `Run` records.
RUN_KINDS = (EventKind.RUN_BEGIN, EventKind.RUN_PROC, EventKind.RUN_LOG, EventKind.RUN_READY,
             EventKind.RUN_EXIT)
