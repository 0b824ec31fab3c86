"""The console's side of an agent's request: shown at once (toast, tree marker, `a Approve` on the key line
only while one waits), denied with a note from the Approve modal — nothing starts, the agent is told who."""

from __future__ import annotations

from pathlib import Path

from tuikit import drive, label, notices, open_app, screen_text, until

from eagle_console.mcp.tools import AgentTools

PLAN = """[plan]
id = "ask"
title = "asking"

[[phase]]
id = "0"
title = "P"
  [[phase.step]]
  id = "0.1"
  title = "Restart the server"
  approve = true
  run = "echo restarted"
"""


def test_a_console_denies_an_agents_request(tmp_path: Path) -> None:
    plan = tmp_path / "ask.toml"
    plan.write_text(PLAN)
    agent = AgentTools(plan)
    agent.set_client("claude-code")
    app, journal = open_app(plan)
    asked: dict = {}

    async def scenario(pilot) -> None:
        await until(pilot, lambda: "r Run" in screen_text(app), what="the key line")
        assert "a Approve" not in screen_text(app)  # nothing waits: the key is off the key line
        doc, failed = agent.call(agent.run_step, "0.1", False, 0)
        assert not failed and doc["status"] == "awaiting_approval", doc
        asked.update(doc)
        await until(pilot, lambda: any("asks to run 0.1" in n and "(a)" in n for n in notices(app)),
                    what="the toast")
        await until(pilot, lambda: "⚠ approve?" in label(app, "0.1"), what="the tree marker")
        assert "a Approve" in screen_text(app)
        await pilot.press("a")
        await until(pilot, lambda: type(app.screen).__name__ == "ApprovalScreen", what="the Approve modal")
        text = screen_text(app)
        assert "via agent:claude-code asks to run 0.1" in text and "approve = true" in text
        await pilot.press("down", "enter")  # ✖ Deny, then the note
        for key in "later":
            await pilot.press(key)
        await pilot.press("enter")
        await until(pilot, lambda: "⚠ approve?" not in label(app, "0.1"), what="the marker gone")
        await until(pilot, lambda: "a Approve" not in screen_text(app), what="the key gone")

    try:
        drive(app, scenario)
        doc, failed = agent.call(agent.approval_status, asked["approval"]["id"])
        assert not failed and doc["status"] == "denied" and not doc["started"]
        assert "via console" in doc["message"] and ": later" in doc["message"]
        assert journal.runs("0.1") == [] and "0.1" not in journal.statuses()
    finally:
        agent.close()
        journal.close()


def test_a_read_only_console_shows_the_request_but_cannot_answer_it(tmp_path: Path) -> None:
    plan = tmp_path / "ask.toml"
    plan.write_text(PLAN)
    agent = AgentTools(plan)
    agent.call(agent.run_step, "0.1", False, 0)
    app, journal = open_app(plan, readonly=True)

    async def scenario(pilot) -> None:
        await until(pilot, lambda: "⚠ approve?" in label(app, "0.1"), what="the tree marker")
        assert "a Approve" not in screen_text(app)
        await pilot.press("a")
        await pilot.pause()
        assert type(app.screen).__name__ != "ApprovalScreen"

    try:
        drive(app, scenario)
        assert agent.journal.approvals()[0].open
    finally:
        agent.close()
        journal.close()
