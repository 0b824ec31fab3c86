"""A kill on a cluster node that leaves another user's orphan there: the node's agent refuses it (its
record's `refused`), and the kill failed there as it fails on this machine (test_kill_other_user.py): its
memory stays held. Before, `orphans --kill` exited 0 and `K` showed the node's line as a success, naming
only what was killed. The node's record is built as `ops.nodes.kill_on_nodes` builds it from an agent's
answer (a KillRecord and the holders its scan saw); the agent's own refusal is node/holders.py's, tested
on this machine."""

from __future__ import annotations

import argparse

from eagle_console.journal.kills import KillRecord


def _node_entry(refused: list[dict], holders: list[dict]) -> dict:
    record = KillRecord(who="root", scope="orphans", face="cli", step_id=None, run_id=None, killed=[4101],
                        survivors=[], gone=[], refused=refused, freed_mib={"2": 4000.0})
    return {**record._asdict(), "holders": holders, "error": None, "this_machine": False}


THEIRS = {"pid": 4102, "class": "orphan", "user": "op2"}
CONSOLE = {"pid": 4103, "class": "other", "user": "root"}
REFUSED = [{"pid": 4102, "reason": "belongs to op2 (root kills it only when picked)"},
           {"pid": 4103, "reason": "eagle-console"}]


def test_orphans_kill_fails_when_a_node_left_another_users_orphan(capsys):
    from eagle_console.cli.gpu_cmds import _finish

    def finish(entry: dict) -> int:
        doc = {"holders": [], "gpus": [], "killed": [], "survivors": [], "freed_mib": {}, "error": None,
               "nodes": {"b": entry}}
        return _finish(argparse.Namespace(kill=True, json=True), doc, False, [])

    assert finish(_node_entry(REFUSED, [{"pid": 4101, "class": "orphan"}, THEIRS, CONSOLE])) == 1
    # a console or live job the scope spares by design fails nothing
    assert finish(_node_entry(REFUSED[1:], [{"pid": 4101, "class": "orphan"}, CONSOLE])) == 0
    capsys.readouterr()


def test_k_says_the_nodes_orphan_was_not_signalled():
    from eagle_console.tui.screens.kill_text import remote_text

    text = remote_text({"b": _node_entry(REFUSED, [{"pid": 4101, "class": "orphan"}, THEIRS, CONSOLE])})
    assert text.plain == ("node b: killed 1: 4101 · freed 4000 MiB · not signalled: 4102 "
                          "(their GPU memory stays in use)"), text.plain
    from eagle_console.tui.theme import tstyle

    assert [span.style for span in text.spans] == [tstyle("ec.error.bold")], text.spans  # a failure's colour
