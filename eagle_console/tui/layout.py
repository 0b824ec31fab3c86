"""The console's layout containers: Textual's, marked BLANK (no border, no content of their own).

Textual draws every widget's whole region, its children's regions over it: the first frame drew ~380 rows of
empty containers under the ~40 that show. A BLANK widget's rows are its background, made without styling a
line. Only for containers whose children cover them and that have no border, padding or scrollbar.
"""

from __future__ import annotations

from textual.containers import Horizontal, Vertical
from textual.widgets import ContentSwitcher


class Row(Horizontal):
    BLANK = True


class Column(Vertical):
    BLANK = True


class Switcher(ContentSwitcher):
    BLANK = True
