"""What every dialog of the console shares: its CSS (dialogs.tcss), read when the first dialog opens
rather than parsed and matched before the console's first frame (console.tcss holds the main screen's)."""

from __future__ import annotations

from textual.screen import ModalScreen, ScreenResultType


class Dialog(ModalScreen[ScreenResultType]):
    CSS_PATH = "dialogs.tcss"
