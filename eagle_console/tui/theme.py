"""The console's colours come from the Textual theme, and the operator's theme choice is kept.

Rich Text in the panes names semantic styles (`ec.ok`, `ec.error.bold`, …), never a colour; `tstyle`
turns a name into a style from the running App's theme variables ($success, $warning, $error, $accent,
$secondary), so "Change theme" in the command palette recolours statuses too. Outside a running App
(or in an App without those variables) the names fall back to the ANSI colours used before themes.
The chosen theme is saved in $XDG_CONFIG_HOME/eagle-console/settings.json (~/.config/… by default): a
preference of the operator, not of one plan, so not in a plan's state dir. A settings file that cannot be
read as settings (not JSON, not an object, nested too deep, over 1 MiB, a FIFO or a device in its place)
opens the console with the default settings and a notice saying why (eagle_console/inputfile.py), and is
not overwritten by a theme change.
"""

from __future__ import annotations

import json
import os
from functools import lru_cache
from pathlib import Path
from typing import Any

from rich.style import Style
from textual._context import active_app

from eagle_console.inputfile import NOT_FOUND, SETTINGS_CAP, InputFileError, load_json

# style name -> (theme variable, modifiers, the colour without a theme)
STYLES: dict[str, tuple[str, str, str]] = {
    "ec.ok": ("success", "", "green"),
    "ec.ok.bold": ("success", "bold", "green"),
    "ec.warn": ("warning", "", "yellow"),
    "ec.warn.bold": ("warning", "bold", "yellow"),
    "ec.error": ("error", "", "red"),
    "ec.error.bold": ("error", "bold", "red"),
    "ec.info": ("accent", "", "cyan"),
    "ec.other": ("secondary", "", "magenta"),
}
_cache: dict[tuple[int, str], dict[str, str]] = {}


def theme_styles(variables: dict[str, str] | None) -> dict[str, str]:
    """Every semantic name as a Rich style string, from theme variables (None: the fallback colours)."""
    out = {}
    for name, (var, mods, fallback) in STYLES.items():
        colour = (variables or {}).get(var) or fallback
        out[name] = f"{mods} {colour}".strip()
    return out


def tstyle(name: str) -> str:
    """The style for `name` in the running App's current theme; other style strings pass unchanged."""
    if name not in STYLES:
        return name
    app = active_app.get(None)
    if app is None:
        return theme_styles(None)[name]
    key = (id(app), str(app.theme))
    if key not in _cache:
        _cache[key] = theme_styles(app.get_css_variables())
    return _cache[key][name]


@lru_cache(maxsize=64)
def _parsed(text: str) -> Style:
    return Style.parse(text)


def rich_style(name: str) -> Style:
    """`tstyle(name)` as a Rich Style, for line stylers that colour log lines as they are drawn (parsed once)."""
    return _parsed(tstyle(name))


def settings_path() -> Path:
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "eagle-console" / "settings.json"


def read_settings() -> tuple[dict[str, Any], str | None]:
    """The saved settings and, when the file is there but cannot be used, why (the defaults are used)."""
    path = settings_path()
    try:
        data = load_json(path, SETTINGS_CAP)
    except InputFileError as exc:
        if exc.why == NOT_FOUND:
            return {}, None  # none saved yet
        return {}, f"{exc}; the default settings are used"
    if not isinstance(data, dict):
        return {}, f"{path}: not a JSON object; the default settings are used"
    return data, None


def load_settings() -> dict[str, Any]:
    return read_settings()[0]


def save_theme(name: str) -> None:
    path = settings_path()
    current, problem = read_settings()
    if problem is not None:
        return  # never overwrite a file we could not read: the operator may want what is in it
    settings = {**current, "theme": name}
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(settings, indent=2) + "\n")
        tmp.replace(path)
    except OSError:
        pass  # a read-only home: the choice lasts for this session only


def restore(app: Any) -> str | None:
    """At start (App.__init__): the saved theme, if it still exists; returns why the settings file could not
    be used, for the console to say once it is up."""
    settings, problem = read_settings()
    saved = settings.get("theme")
    if isinstance(saved, str) and saved in app.available_themes:
        app.theme = saved
    return problem


def follow(app: Any, relabel: Any) -> None:
    """Once running (on_mount): a theme change is saved and `relabel()` recolours the plan tree at once
    (the other panes take the new colours at their next poll)."""

    def changed(theme: Any) -> None:
        save_theme(theme.name)
        relabel()

    app.theme_changed_signal.subscribe(app, changed)
