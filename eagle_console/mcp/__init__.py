"""`eagle-console mcp PLAN`: the console's operations for an AI agent, as a Model Context Protocol server over
stdio (docs/agent.md). tools.py holds what each tool does (no SDK, no Textual: tested in process), bounds.py
what no answer may exceed or show, server.py the SDK's server around them (the `agent` extra)."""
