"""The console test harness: open the App over a plan, drive it through App.run_test(), read what it shows."""

from __future__ import annotations

import time


async def until(pilot, predicate, timeout: float = 15.0, what: str = "condition"):
    """Let the app run until `predicate()` is truthy (returned), or fail naming `what`."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        await pilot.pause(0.05)
    raise AssertionError(f"{what} not met within {timeout}s")


def screen_text(app) -> str:
    """The app's current screen (modals over what they cover) as plain text, trailing blanks cut.

    Renders the compositor's full update into a recording Rich console, as Textual's own
    `App.export_screenshot` does, but exports text instead of SVG."""
    import io

    from rich.console import Console

    width, height = app.size
    console = Console(width=width, height=height, file=io.StringIO(), force_terminal=True, color_system=None,
                      record=True, legacy_windows=False, safe_box=False)
    console.print(app.screen._compositor.render_update(full=True, screen_stack=app._background_screens))
    return "\n".join(line.rstrip() for line in console.export_text().splitlines()) + "\n"


def open_app(plan_path, readonly: bool = False, sim_dir=None):
    """The console over `plan_path` as `eagle-console PLAN` builds it, and a journal of the test's own
    (another SQLite connection, as another process would have)."""
    from eagle_console.journal import Journal
    from eagle_console.plan.loader import load_plan
    from eagle_console.tui.app import make_app

    plan = load_plan(plan_path)
    app = make_app(plan, Journal.for_plan(plan), readonly=readonly, sim_dir=sim_dir)
    return app, Journal.for_plan(plan)


def drive(app, scenario, size=(120, 36)) -> None:
    """Run `await scenario(pilot)` in the app at `size` (notifications kept, for `notices`), then close
    the app's journal."""
    import asyncio

    async def main() -> None:
        async with app.run_test(size=size, notifications=True) as pilot:
            await pilot.pause()
            await scenario(pilot)

    try:
        asyncio.run(main())
    finally:
        app.ctx.journal.close()


def label(app, node_id: str) -> str:
    """The Plan pane's line for a phase or step, as plain text."""
    from eagle_console.tui.panes.plan_tree import PlanPane

    return app.query_one(PlanPane)._item_nodes[node_id].label.plain


async def select(pilot, node_id: str) -> None:
    from eagle_console.tui.panes.plan_tree import PlanPane

    pilot.app.query_one(PlanPane).select_id(node_id)
    await until(pilot, lambda: pilot.app.ctx.selected_step_id == node_id, what=f"{node_id} selected")


def notices(app) -> list[str]:
    return [str(n.message) for n in app._notifications]
