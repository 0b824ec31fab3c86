"""`eagle-console serve`: the console in a browser, over textual-serve (the optional `serve` extra).

`access` decides who may connect (no third-party imports); `web` wraps textual-serve's aiohttp app.
"""
