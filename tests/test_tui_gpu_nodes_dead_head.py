"""The GPU pane's cluster section while the head is unreachable: the nodes' last readings, each with the age
it has now. Seen by hand in the two-node demo after the head's processes were killed: node b said "last
reading 0s old" — the age its reading had when it was taken, frozen — for as long as the head stayed dead."""

from __future__ import annotations

import asyncio
import time

from eagle_console.tui.panes.gpu_nodes import sections_text, unreachable_entries

GPU = {"index": 0, "name": "RTX PRO 6000", "memory_total_mib": 97887.0, "memory_used_mib": 80697.0,
       "utilization_pct": 0, "temperature_c": 31, "power_w": 72, "power_limit_w": 600, "pcie_gen": 5,
       "pcie_width": 16, "processes": [], "unattributed_mib": 0.0}


def _entry(name: str, age: float | None) -> dict:
    return {"name": name, "address": "192.0.2.2", "node_id": "n" + name, "reachable": True, "error": None,
            "reading_age_s": age, "gpus": None if age is None else [GPU],
            "holders": None if age is None else [], "refused": {}}


def test_a_dead_heads_nodes_say_how_old_their_last_reading_is_now():
    read_at = 1_000_000.0
    entries = [_entry("a", 0.4), _entry("b", 0.6), _entry("c", None)]
    kept = unreachable_entries(entries, read_at, read_at + 125.0)
    assert [e["reachable"] for e in kept] == [False, False, False]
    assert [e["reading_age_s"] for e in kept] == [125.4, 125.6, None]  # c was never read: still never
    text = sections_text(kept, 200, here="a").plain
    assert "node b · 192.0.2.2 · UNREACHABLE · last reading 126s old · its head is unreachable" in text, text
    assert "node c · 192.0.2.2 · UNREACHABLE · no reading yet" in text, text
    assert entries[1]["reading_age_s"] == 0.6  # the poll's own entries are left as they were read
    later = unreachable_entries(entries, read_at, read_at + 600.0)
    assert "last reading 601s old" in sections_text(later, 200, here="a").plain


def test_the_pane_ages_the_kept_readings_once_the_head_is_gone():
    """The widget itself, in a running App: a read (b live), then, 125 s later, the head unreachable."""
    from types import SimpleNamespace

    from textual.app import App

    from eagle_console.tui.panes.gpu_nodes import NodeSections

    # no [cluster]: the pane's own poll reads nothing, so only the readings handed to it here are shown
    ctx = SimpleNamespace(plan=SimpleNamespace(cluster=None), journal=None, this_node=lambda entries: "a")
    pane = NodeSections(ctx, refresh_s=3600)

    class Host(App):
        def compose(self):
            yield pane

    async def main() -> str:
        async with Host().run_test(size=(160, 20)) as pilot:
            await pilot.pause()
            pane._show([_entry("a", 0.3), _entry("b", 0.5)])  # as the poller hands a good read over
            pane.read_at = getattr(pane, "read_at", time.time()) - 125.0  # that read was 125 s ago ...
            pane._failed(RuntimeError("head unreachable since 12:00:00: nothing listens at 127.0.0.1:6379"))
            return pane._shown[0]  # ... and the head has been unreachable since

    shown = asyncio.run(main())
    assert shown.startswith("cluster: head unreachable since 12:00:00"), shown
    assert "node b · 192.0.2.2 · UNREACHABLE · last reading 126s old" in shown, shown
