"""`eagle-console serve`: who may reach a console served to a browser (`access`, no third-party imports).

The textual-serve wrapper itself is the interface layer's: eagle_console/tui/served.py.
"""

TOKEN_ENV = "EAGLE_CONSOLE_TOKEN"  # the CLI's help names it without loading access
