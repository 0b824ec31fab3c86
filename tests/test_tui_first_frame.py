"""The console's first frame (issue 31): what it shows, and nothing running beside it while it is drawn.
(Its time is benchmarks/startup.py's figure, not a test's.)"""

from __future__ import annotations

import inspect
import threading

import pytest
from enginekit import write_plan
from textual import events
from textual.screen import Screen
from textual.widget import Widget
from tuikit import drive, open_app, screen_text, until

# Both came in Textual 7.1: below it (the floor is 6.0) every widget draws its whole region and every
# ScreenResume restyles, as the console did before issue 31's first-paint work; what it shows is the same.
HAS_BLANK = hasattr(Widget, "BLANK")
RESUME_SAYS_RESTYLE = "event" in inspect.signature(Screen._on_screen_resume).parameters  # refresh_styles
needs_blank = pytest.mark.skipif(not HAS_BLANK, reason="Widget.BLANK is Textual 7.1's; below it nothing is skipped")

PLAN = '[[phase]]\nid = "0"\ntitle = "P"\n\n[[phase.step]]\nid = "0.1"\ntitle = "say hi"\nrun = "echo hi"\n'


def _first_frame(tmp_path, monkeypatch) -> tuple[object, dict]:
    """The console over a one-step plan, with what was true when its first frame was shown."""
    return _first_frame_of(tmp_path, monkeypatch, PLAN)


def _first_frame_of(tmp_path, monkeypatch, plan: str) -> tuple[object, dict]:
    from eagle_console.tui.app import ConsoleApp

    monkeypatch.setenv("EAGLE_CONSOLE_GPU_BACKEND", "none")
    seen: dict = {}
    shown = ConsoleApp._first_frame_shown

    def first(self) -> None:
        seen["threads"] = sorted(t.name for t in threading.enumerate() if t.name.startswith("eagle-"))
        seen["screen"] = screen_text(self)
        shown(self)

    monkeypatch.setattr(ConsoleApp, "_first_frame_shown", first)
    app, journal = open_app(write_plan(tmp_path, plan))
    journal.close()
    return app, seen


def test_no_pane_polls_before_the_first_frame_and_every_pane_does_after(tmp_path, monkeypatch):
    """Poll threads started at the first refresh took the GIL from the refreshes still to come before the
    screen settled (psutil and the log parser imported, NVML opened): they start once it has."""
    app, seen = _first_frame(tmp_path, monkeypatch)

    async def scenario(pilot):
        await until(pilot, lambda: "threads" in seen, what="the first frame")
        assert seen["threads"] == []
        await until(pilot, lambda: {"eagle-gpu-poll", "eagle-ServerPane-poll", "eagle-drafter-poll"}
                    <= {t.name for t in threading.enumerate()}, what="the panes polling")

    drive(app, scenario, size=(120, 40))


def test_the_first_frame_shows_the_selected_step(tmp_path, monkeypatch):
    """The tree selects its first step as it is built, and the Step pane and the Detail line show it in the
    first frame (they said "no step selected" until a frame later)."""
    app, seen = _first_frame(tmp_path, monkeypatch)

    async def scenario(pilot):
        await until(pilot, lambda: "screen" in seen, what="the first frame")
        assert "no step selected" not in seen["screen"]
        assert "0.1 say hi" in seen["screen"] and "0.1 · echo hi" in seen["screen"]

    drive(app, scenario, size=(120, 40))


def test_the_first_frame_builds_the_shown_tab_only_and_a_tab_shown_early_is_built_at_once(tmp_path, monkeypatch):
    """The four tabs not shown are not in the first frame's DOM (a placeholder and a container each were
    still styled and laid out); shown before they are added, a tab is built there and then."""
    import eagle_console.tui.app as console_app
    from eagle_console.tui.panes.nccl import NcclPane
    from eagle_console.tui.panes.results import ResultsPane

    monkeypatch.setattr(console_app, "mount_hidden_panes", lambda app: None)  # nothing added behind our back
    app, seen = _first_frame(tmp_path, monkeypatch)

    async def scenario(pilot):
        from textual.widgets import ContentSwitcher

        await until(pilot, lambda: "screen" in seen, what="the first frame")
        assert [c.id for c in app.query_one(ContentSwitcher).children] == ["server"]
        await pilot.press("5")
        pane = await until(pilot, lambda: next(iter(app.query(ResultsPane)), None), what="the Results pane")
        await until(pilot, lambda: pane.is_on_screen and "no results recorded yet" in screen_text(app),
                    what="the Results tab shown")
        await pilot.press("2")
        await until(pilot, lambda: next(iter(app.query(NcclPane)), None) is not None and
                    app.query_one(NcclPane).is_on_screen, what="the NCCL tab shown")
        assert not pane.is_on_screen

    drive(app, scenario, size=(120, 40))


LONG = ('[[phase]]\nid = "0"\ntitle = "A phase whose title is wider than the Plan pane at 120 columns"\n\n'
        + "".join(f'[[phase.step]]\nid = "0.{n}"\ntitle = "Step {n} with a title longer than the pane is wide, '
                  f'cut to fit"\nrun = "echo {n}"\n\n' for n in range(1, 6)))


def test_the_first_frame_shows_every_step_of_a_plan_with_long_titles(tmp_path, monkeypatch):
    """The tree's lines are built with the labels it shows (cut to the pane): built with the full titles, the
    first layout saw a tree wider than its pane and gave it scrollbars, which took its last row; only the
    extra layout passes of same-size Resizes (now skipped) took them away before the frame was shown."""
    app, seen = _first_frame_of(tmp_path, monkeypatch, LONG)

    async def scenario(pilot):
        await until(pilot, lambda: "screen" in seen, what="the first frame")
        for n in range(1, 6):
            assert f"0.{n} Step {n} with a title" in seen["screen"]

    drive(app, scenario, size=(120, 40))


def test_a_resize_to_the_size_the_screen_has_is_no_layout_pass(tmp_path, monkeypatch):
    """Three same-size Resizes reached the screen before its first frame, each a full layout and compositor
    refresh (5 layouts before the first frame, 2 now); a Resize to another size is laid out as before."""
    from textual import events
    from textual.screen import Screen

    app, seen = _first_frame(tmp_path, monkeypatch)
    layouts: list = []
    refresh_layout = Screen._refresh_layout

    def counted(self, *args, **kwargs):
        layouts.append(args)
        return refresh_layout(self, *args, **kwargs)

    monkeypatch.setattr(Screen, "_refresh_layout", counted)

    async def scenario(pilot):
        await until(pilot, lambda: "screen" in seen, what="the first frame")
        await pilot.pause()
        before = len(layouts)
        app.screen.post_message(events.Resize(app.size, app.size))
        await pilot.pause()
        assert len(layouts) == before
        await pilot.resize_terminal(100, 30)
        await until(pilot, lambda: app.screen.size == (100, 30), what="the screen at 100x30")
        assert len(layouts) > before

    drive(app, scenario, size=(120, 40))


def styled_text(app) -> str:
    """The screen as text with its colours and styles (screen_text drops them)."""
    return frame_text(app, app.screen._compositor.render_update(full=True, screen_stack=app._background_screens))


def frame_text(app, update) -> str:
    """A whole-screen update (as the app writes it) as text with its colours and styles."""
    import io

    from rich.console import Console

    width, height = app.size
    console = Console(width=width, height=height, file=io.StringIO(), force_terminal=True, color_system="truecolor",
                      record=True, legacy_windows=False, safe_box=False)
    console.print(update)
    return console.export_text(styles=True)


def restyle(screen) -> None:
    """Restyle the screen and every widget on it, as a ScreenResume that asks for it does (Textual 6 calls
    the stylesheet itself, 7.1 and later through update_node_styles)."""
    screen.app.stylesheet.update(screen, animate=False)
    screen.refresh()


def _resumes(monkeypatch) -> list:
    """(screen, refresh_styles) of each ScreenResume as Textual's handler gets it (True where Textual's
    handler takes no event: below 7.1 it always restyled)."""
    seen: list = []
    resume = Screen._on_screen_resume

    def spy(self, event=None):
        seen.append((self, getattr(event, "refresh_styles", True) if RESUME_SAYS_RESTYLE else True))
        return resume(self, event) if RESUME_SAYS_RESTYLE else resume(self)

    monkeypatch.setattr(Screen, "_on_screen_resume", spy)
    return seen


def test_the_first_frame_skips_the_first_restyle_and_is_what_a_full_restyle_draws(tmp_path, monkeypatch):
    """The screen's first ScreenResume restyled every widget, each styled as it was mounted (32 of 75
    Stylesheet.apply calls before the first frame changed nothing): skipped, and restyling all of it now
    draws the same screen, colours included. Nothing polls (the first frame is not let open)."""
    from eagle_console.tui.app import ConsoleApp

    monkeypatch.setenv("EAGLE_CONSOLE_GPU_BACKEND", "none")
    resumes = _resumes(monkeypatch)
    seen: dict = {}
    monkeypatch.setattr(ConsoleApp, "_first_frame_shown", lambda self: seen.setdefault("shown", True))
    app, journal = open_app(write_plan(tmp_path, PLAN))
    journal.close()

    async def scenario(pilot):
        await until(pilot, lambda: "shown" in seen, what="the first frame")
        await pilot.pause()
        assert [(screen is app.screen, refresh) for screen, refresh in resumes] == [(True, not RESUME_SAYS_RESTYLE)]
        first = styled_text(app)
        restyle(app.screen)
        await pilot.pause()
        await pilot.pause()
        assert styled_text(app) == first

    drive(app, scenario, size=(120, 40))


def test_a_later_resume_restyles_the_screen_and_a_theme_changed_under_a_dialog_shows(tmp_path, monkeypatch):
    """Only the first ScreenResume skips the restyle: a later one that asks for it (Textual's switch_screen,
    switch_mode) gets it, and a theme changed under a dialog shows on the main screen once the dialog
    closes, as a full restyle draws it."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))  # the theme chosen is saved there
    app, seen = _first_frame(tmp_path, monkeypatch)
    resumes = _resumes(monkeypatch)

    async def scenario(pilot):
        await until(pilot, lambda: "screen" in seen, what="the first frame")
        main = app.screen
        dark = styled_text(app)
        await pilot.press("question_mark")
        await until(pilot, lambda: app.screen is not main, what="the help dialog")
        app.theme = "textual-light"
        await pilot.pause()
        await pilot.press("escape")
        await until(pilot, lambda: app.screen is main, what="the main screen again")
        await pilot.pause()
        shown = styled_text(app)
        assert shown != dark
        restyle(main)
        await pilot.pause()
        await pilot.pause()
        assert styled_text(app) == shown
        main.post_message(events.ScreenResume())  # refresh_styles=True, as switch_screen sends it
        await pilot.pause()
        restyled = [refresh for screen, refresh in resumes if screen is main]
        assert restyled == ([False, False, True] if RESUME_SAYS_RESTYLE else [True] * 3)  # first, pop, this

    drive(app, scenario, size=(120, 40))


@needs_blank
def test_the_layout_containers_draw_nothing_and_a_tab_is_its_pane(tmp_path, monkeypatch):
    """Containers with nothing of their own to draw are BLANK (Textual drew each one's whole region under its
    children: 1,152 rows before the first frame, 243 with these); the shown tab is its pane, a LogView,
    with no container around it."""
    from textual.widgets import ContentSwitcher

    from eagle_console.tui.panes.logview import LogView
    from eagle_console.tui.panes.server import ServerPane

    app, seen = _first_frame(tmp_path, monkeypatch)

    async def scenario(pilot):
        await until(pilot, lambda: "screen" in seen, what="the first frame")
        assert app.screen.BLANK
        for selector in ("#main", "#left", "#right", "#logs", "ContentSwitcher", "ServerPane"):
            assert app.screen.query_one(selector).BLANK, selector
        pane = app.query_one(ContentSwitcher).children[0]
        assert isinstance(pane, ServerPane) and isinstance(pane, LogView) and pane.id == "server"
        assert not app.query_one("#step-info").BLANK and not app.query_one("#gpus").BLANK  # borders

    drive(app, scenario, size=(120, 40))


SIZES = pytest.mark.parametrize("size", [(120, 40), (80, 24)], ids=["120x40", "80x24"])
PLANS = pytest.mark.parametrize("plan", [PLAN, LONG], ids=["one-step", "long-titles"])


def _at_first_paint(tmp_path, monkeypatch, plan: str, size, counts: list) -> tuple[object, dict]:
    """Drive the console to its first paint: the app, and what was true there (what `counts` held, the
    screen as shown, the screen after laying all of it out again)."""
    from eagle_console.tui.app import ConsoleApp

    monkeypatch.setenv("EAGLE_CONSOLE_GPU_BACKEND", "none")
    seen: dict = {}

    def first(self) -> None:
        seen["counted"] = list(counts)
        seen["shown"] = styled_text(self)
        self.screen._refresh_layout(self.size)  # the whole screen again, now
        seen["again"] = styled_text(self)

    monkeypatch.setattr(ConsoleApp, "_first_frame_shown", first)
    app, journal = open_app(write_plan(tmp_path, plan))
    journal.close()

    async def scenario(pilot):
        await until(pilot, lambda: "again" in seen, what="the first frame")
        assert "0.1 " in screen_text(app)

    drive(app, scenario, size=size)
    return app, seen


@SIZES
@PLANS
def test_the_first_frame_is_laid_out_once_and_is_what_laying_it_out_again_draws(tmp_path, monkeypatch, plan, size):
    """Before: the screen was laid out and drawn whole a second time, a frame later, before the console was
    idle at its first frame. The layouts the widgets asked for while they mounted stayed asked after the
    first resume's layout (Textual's update timer clears them after its own), and two more came in after it:
    the toast rack's `display`, set inline at the first resume, and the Plan tree's Resize handler. One
    layout now (the tree's labels are cut to the width it is laid out at, not to a guess that the first
    Resize corrected); laying the screen out again at that moment draws the same frame, colours included."""
    layouts: list = []
    refresh_layout = Screen._refresh_layout

    def counted(self, size=None, scroll=False):
        if not scroll:
            layouts.append(self)
        return refresh_layout(self, size, scroll)

    monkeypatch.setattr(Screen, "_refresh_layout", counted)
    _app, seen = _at_first_paint(tmp_path, monkeypatch, plan, size, layouts)
    assert len(seen["counted"]) == 1
    assert seen["again"] == seen["shown"]


@SIZES
@PLANS
def test_the_first_frame_is_the_only_one_written_before_the_first_paint_and_is_what_is_shown(
        tmp_path, monkeypatch, plan, size):
    """Before: a second frame of every widget was written before the console was idle at its first frame.
    The widgets mounting had each asked to be drawn (~17 Update messages, handled after the first layout,
    which had drawn them all) and the screen's own repaint stayed asked after that layout. One frame now,
    and it is what the screen shows at the first paint and what laying it out again draws."""
    from textual.app import App

    written: list = []
    display = App._display

    def recorded(self, screen, update) -> None:
        if update is not None:
            written.append(update)
        return display(self, screen, update)

    monkeypatch.setattr(App, "_display", recorded)
    app, seen = _at_first_paint(tmp_path, monkeypatch, plan, size, written)
    assert len(seen["counted"]) == 1
    assert frame_text(app, seen["counted"][0]) == seen["shown"] == seen["again"]
