"""The agent's tools without the SDK (eagle_console/mcp/tools.py): what they refuse to read, what they never
show, how big an answer may get, their errors, and an agent's todo list taken back as marks."""

from __future__ import annotations

import json
from pathlib import Path

from enginekit import wait_for

from eagle_console.mcp import bounds
from eagle_console.mcp.tools import AgentTools

SECRET = "hf_s3cr3t-token-value"

PLAN = f"""[plan]
id = "hard"
title = "hardening"
todo_label = "Phase {{id}}: {{title}}"

[env]
HF_TOKEN = "{SECRET}"
NCCL_PROTO = "LL"

[[phase]]
id = "0"
title = "Probe"
  [[phase.step]]
  id = "0.1"
  title = "Print the token"
  run = "echo token=$HF_TOKEN; echo proto=$NCCL_PROTO"
  [[phase.step]]
  id = "0.2"
  title = "Spill a big log"
  run = ["python3", "-c", "import sys\\nfor i in range(20000): print(str(i) + ' ' + 'x' * 900)"]
  [[phase.step]]
  id = "0.3"
  title = "Log outside the plan's folder"
  run = "echo elsewhere"
  log = "{{outside}}"
  [[phase.step]]
  id = "0.4"
  title = "By hand"
  [[phase.step]]
  id = "0.5"
  title = "Something the plan wants a person to approve"
  approve = true
  run = "echo approved"
"""


def tools_for(tmp_path: Path, approvals: bool = True) -> AgentTools:
    outside = tmp_path / "elsewhere" / "out.log"
    outside.parent.mkdir()
    folder = tmp_path / "plan"
    folder.mkdir()
    (folder / "hard.toml").write_text(PLAN.replace("{outside}", str(outside)))
    tools = AgentTools(folder / "hard.toml", approvals=approvals)
    tools.set_client("unit test")
    return tools


def ran(tools: AgentTools, step: str) -> dict:
    doc, failed = tools.call(tools.run_step, step)
    assert not failed, doc
    wait_for(lambda: tools.journal.run(doc["run"]["id"]).finished, timeout=30)
    return doc


def test_env_values_are_never_shown(tmp_path) -> None:
    tools = tools_for(tmp_path)
    ran(tools, "0.1")
    for doc, _ in (tools.call(tools.step_log, "0.1"), tools.call(tools.recent_events),
                   tools.call(tools.plan_resource), tools.call(tools.plan_status)):
        assert SECRET not in json.dumps(doc)
    log, _ = tools.call(tools.step_log, "0.1")
    assert "token=${env:HF_TOKEN}" in log["lines"]
    assert "proto=LL" in log["lines"]  # a value this short is no secret, and would be found everywhere
    begin = next(e for e in tools.call(tools.recent_events)[0]["events"] if e["kind"] == "run_begin")
    assert begin["data"]["env"] == ["HF_TOKEN", "NCCL_PROTO"] and begin["face"] == "agent:unit_test"
    assert tools.call(tools.plan_resource)[0]["env"] == ["HF_TOKEN", "NCCL_PROTO"]


def test_answers_are_bounded(tmp_path) -> None:
    tools = tools_for(tmp_path)
    ran(tools, "0.2")
    doc, failed = tools.call(tools.step_log, "0.2", 10_000)
    assert not failed
    assert len(doc["lines"]) <= bounds.MAX_LOG_LINES and doc["earlier_lines_left_out"]
    assert all(len(line) <= bounds.MAX_LINE for line in doc["lines"])
    assert any(line.startswith("19999 ") for line in doc["lines"])  # the end of the log, not its start
    assert len(json.dumps(doc)) <= bounds.MAX_RESPONSE_BYTES
    big, cut = bounds.bound({"items": ["y" * 5000] * 1000})
    assert cut and len(json.dumps(big)) <= bounds.MAX_RESPONSE_BYTES


def test_logs_outside_the_plans_folder_and_state_dir_are_refused(tmp_path) -> None:
    tools = tools_for(tmp_path)
    ran(tools, "0.3")
    doc, failed = tools.call(tools.step_log, "0.3")
    assert failed and doc["error"]["code"] == "outside" and "elsewhere" in doc["error"]["message"]
    run_id = tools.journal.latest_run("0.3").id
    doc, failed = tools.call(tools.run_log, run_id)
    assert failed and doc["error"]["code"] == "outside"
    # a symlink inside the folder that points outside is no way round it
    link = tools.plan.folder / "sneaky.log"
    link.symlink_to(tmp_path / "elsewhere" / "out.log")
    try:
        bounds.readable(link, tools.plan)
    except bounds.Outside:
        pass
    else:
        raise AssertionError("a symlink out of the plan's folder was readable")


def test_errors_are_structured_never_tracebacks(tmp_path) -> None:
    tools = tools_for(tmp_path)
    cases = [(tools.run_step, ("9.9",), "refused"), (tools.run_step, ("0.4",), "refused"),
             (tools.step_log, ("9.9",), "not_found"), (tools.mark_step, ("0.1", "done"), "bad_input"),
             (tools.wait_run, ("x",), "bad_input"), (tools.approval_status, (12345,), "refused"),
             (tools.drafter_check, ("0.1",), "bad_input"), (tools.run_step, ("0.1", False, -1), None)]
    for fn, args, code in cases:
        doc, failed = tools.call(fn, *args)
        if code is None:  # a negative wait: 0.1 needs no approval, so it starts at once and the wait is unused
            assert not failed, doc
            continue
        assert failed and doc["error"]["code"] == code, (fn.__name__, args, doc)
        assert "Traceback" not in doc["error"]["message"]

    def broken() -> dict:
        raise RuntimeError("a bug")

    doc, failed = tools.call(broken)
    assert failed and doc == {"error": {"code": "internal", "message": "RuntimeError: a bug"}}


def test_an_agents_todo_list_comes_back_as_marks(tmp_path) -> None:
    tools = tools_for(tmp_path)
    todos = tools.call(tools.todo_list)[0]["todos"]
    assert todos[0] == {"content": "Phase 0: Probe", "status": "pending", "priority": "medium"}
    todos[3]["status"] = "completed"  # Phase 0.3: ...
    todos[4]["status"] = "cancelled"  # Phase 0.4: By hand
    todos[0]["status"] = "in_progress"  # a phase follows its steps: not marked, said
    doc, failed = tools.call(tools.todowrite, todos, "from the agent's list")
    assert not failed, doc
    assert {(m["step"], m["status"]) for m in doc["marked"]} == {("0.3", "completed"), ("0.4", "skipped")}
    assert doc["phases_not_marked"][0]["phase"] == "0"
    assert tools.journal.notes("0.4")[0].face == "agent:unit_test"
    # unknown items refuse the whole list, naming every known label; nothing is marked
    bad = [*todos, {"content": "Phase 9: Party", "status": "completed", "priority": "low"}]
    bad[2]["status"] = "completed"
    doc, failed = tools.call(tools.todowrite, bad)
    assert failed and doc["error"]["code"] == "bad_input" and doc["error"]["unknown"] == ["Phase 9: Party"]
    assert "Phase 0.2: Spill a big log" in doc["error"]["known"]
    assert tools.journal.statuses().get("0.2", "pending") == "pending"


def test_approve_true_waits_unless_no_approvals(tmp_path) -> None:
    tools = tools_for(tmp_path)
    doc, failed = tools.call(tools.run_step, "0.5", False, 0)
    assert not failed and doc["status"] == "awaiting_approval" and not doc["started"], doc
    assert doc["approval"]["reasons"] == ["the plan asks for approval (approve = true)"]
    assert tools.journal.runs("0.5") == []
    unattended = AgentTools(tools.plan_path, approvals=False)  # eagle-console mcp PLAN --no-approvals
    try:
        assert unattended.call(unattended.plan_resource)[0]["approvals"] is False
        started = ran(unattended, "0.5")
        assert started["started"] and started["run"]["face"] == "agent:unnamed"
    finally:
        unattended.close()
