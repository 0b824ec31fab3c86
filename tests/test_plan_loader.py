"""The plan loader: every key of plan-format.md, and each error with its message and position."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from eagle_console.engine.builtins import REGISTRY, check_with
from eagle_console.engine.builtins.base import Builtin
from eagle_console.plan.loader import PlanError, PlanIssue, load_plan, parse_plan
from eagle_console.plan.uses import BUILTINS, Uses

REPO = Path(__file__).resolve().parent.parent
HEAD = '[plan]\nid = "t"\ntitle = "test plan"\n\n'


def plan_text(body: str, head: str = HEAD) -> str:
    return head + textwrap.dedent(body)


def load(tmp_path: Path, text: str | bytes, environ: dict[str, str] | None = None):
    path = tmp_path / "plan.toml"
    path.write_bytes(text.encode() if isinstance(text, str) else text)
    return load_plan(path, environ=environ or {})


def issues(tmp_path: Path, text: str | bytes, environ: dict[str, str] | None = None) -> list[PlanIssue]:
    with pytest.raises(PlanError) as info:
        load(tmp_path, text, environ)
    assert info.value.errors
    return info.value.errors


def at(text: str, needle: str, nth: int = 1) -> tuple[int, int]:
    """1-based line and column of the nth occurrence of needle."""
    i = -1
    for _ in range(nth):
        i = text.index(needle, i + 1)
    return text.count("\n", 0, i) + 1, i - (text.rfind("\n", 0, i) + 1) + 1


def only(errs: list[PlanIssue], fragment: str) -> PlanIssue:
    hits = [e for e in errs if fragment in e.message]
    assert len(hits) == 1, errs
    return hits[0]


STEP = '''
[[phase]]
id = "0"
title = "phase zero"

  [[phase.step]]
  id = "0.1"
  title = "first"
'''


def test_the_repo_plans_load() -> None:
    for path in sorted((REPO / "plans").glob("*.toml")):
        plan = load_plan(path, environ={})
        assert plan.phases and list(plan.steps()), path


def test_full_plan_fields(tmp_path: Path) -> None:
    plan = load(tmp_path, plan_text('''
        [vars]
        model = "/data/models/Kimi-K2.5"
        port = 30000
        url = "http://127.0.0.1:${port}"

        [env]
        NCCL_PROTO = "LL"

        [[phase]]
        id = "0"
        title = "Quick Probe"
        priority = "high"

          [[phase.step]]
          id = "0.1"
          title = "Kill any existing server processes"
          uses = "gpu.kill"
          with = { scope = "all", grace = "10s" }

          [[phase.step]]
          id = "0.3"
          title = "Launch"
          needs = ["0.1"]
          uses = "sglang.server"
          with = { model = "${model}", tp = 8, port = "${port}", args = ["--trust-remote-code"] }
          log = "logs/sglang.log"
          timeout = "40m"
          env = { NCCL_ALGO = "Ring" }

          [[phase.step]]
          id = "0.5"
          title = "by hand"
          cwd = "work"
          ready = { http = "${url}/health", timeout = "2m" }
          service = true
          run = ["python3", "-m", "http.server", "${port}"]
          watch = { extraction = { log = "x.log", output = "/dev/shm/out", total = 10000 } }
    '''))
    assert plan.id == "t" and plan.state_dir == tmp_path / ".eagle-console" / "t"
    kill, server, manual = plan.steps()
    assert kill.confirm is True and kill.action.uses == "gpu.kill" and kill.priority == "medium"
    assert server.service is True and server.confirm is False
    assert server.action.with_["port"] == 30000  # exactly "${port}" keeps the int
    assert server.action.with_["model"] == "/data/models/Kimi-K2.5"
    assert server.log == tmp_path / "logs" / "sglang.log" and server.timeout_s == 2400
    assert server.env == {"NCCL_PROTO": "LL", "NCCL_ALGO": "Ring"}
    assert manual.cwd == tmp_path / "work"
    assert manual.ready.http == "http://127.0.0.1:30000/health" and manual.ready.timeout_s == 120
    assert manual.action.argv == ("python3", "-m", "http.server", "30000")
    assert manual.watch_extraction.log == tmp_path / "x.log" and manual.watch_extraction.total == 10000
    assert plan.phases[0].priority == "high" and plan.phases[0].line == at(plan.path.read_text(), "[[phase]]")[0]


def test_state_dir_from_plan_and_override(tmp_path: Path) -> None:
    text = plan_text(STEP, head='[plan]\nid = "t"\ntitle = "x"\nstate_dir = "st"\n')
    assert load(tmp_path, text).state_dir == tmp_path / "st"
    path = tmp_path / "plan.toml"
    assert load_plan(path, state_dir=tmp_path / "o").state_dir == tmp_path / "o"


def test_phase_needs_hold_for_its_steps(tmp_path: Path) -> None:
    plan = load(tmp_path, plan_text(STEP + '''
        [[phase]]
        id = "1"
        title = "later"
        needs = ["0"]
          [[phase.step]]
          id = "1.1"
          title = "a"
          needs = ["0.1"]
    '''))
    assert plan.step("1.1").needs == ("0", "0.1")


# -- errors, each with its position ---------------------------------------------------------------------------

def test_toml_syntax_error_has_tomllib_position(tmp_path: Path) -> None:
    text = plan_text(STEP + '  priority = "high\n')
    (e,) = issues(tmp_path, text)
    # an unterminated string is named as such, at its opening quote (issue #17), not tomllib's "Illegal
    # character" at the end of the line
    assert e.message.startswith("unterminated string") and (e.line, e.column) == at(text, '"high')


def test_multiline_inline_table_gets_a_hint(tmp_path: Path) -> None:
    text = plan_text(STEP + '  uses = "gpu.kill"\n  with = { scope = "all",\n    grace = "10s" }\n')
    (e,) = issues(tmp_path, text)
    assert "must be on one line" in e.message and e.line == at(text, "with = {")[0]


def test_not_utf8(tmp_path: Path) -> None:
    data = HEAD.encode() + b'node = "caf\xe9"\n'
    (e,) = issues(tmp_path, data)
    assert "not UTF-8" in e.message and (e.line, e.column) == (5, 12)


def test_unknown_key_suggests_the_closest(tmp_path: Path) -> None:
    text = plan_text(STEP + '  priorty = "high"\n')
    e = only(issues(tmp_path, text), "priorty")
    assert 'did you mean "priority"' in e.message and (e.line, e.column) == at(text, "priorty")


def test_unknown_top_level_and_plan_keys(tmp_path: Path) -> None:
    text = plan_text(STEP, head='[plan]\nid = "t"\ntitle = "x"\ntodo_lable = "{id}"\n[varz]\na = 1\n')
    errs = issues(tmp_path, text)
    assert (only(errs, "todo_lable").line, only(errs, "todo_lable").column) == at(text, "todo_lable")
    assert 'did you mean "todo_label"' in only(errs, "todo_lable").message
    assert only(errs, '"varz"').line == at(text, "[varz]")[0] and "vars" in only(errs, '"varz"').message


def test_missing_id_and_title(tmp_path: Path) -> None:
    text = plan_text('''
        [[phase]]
        title = "no id"
          [[phase.step]]
          id = "0.1"
    ''')
    errs = issues(tmp_path, text)
    assert only(errs, 'needs "id"').line == at(text, "[[phase]]")[0]
    assert only(errs, 'needs "title"').line == at(text, "[[phase.step]]")[0]


def test_missing_plan_table(tmp_path: Path) -> None:
    errs = issues(tmp_path, textwrap.dedent(STEP))
    assert only(errs, "[plan]").line == 1


def test_duplicate_ids(tmp_path: Path) -> None:
    text = plan_text(STEP + '  [[phase.step]]\n  id = "0.1"\n  title = "again"\n')
    e = only(issues(tmp_path, text), "duplicate")
    assert (e.line, e.column) == (at(text, '"0.1"', 2)[0], at(text, '"0.1"', 2)[1])
    assert f"first at line {at(text, '0.1')[0]}" in e.message


def test_bad_priority_points_at_the_value(tmp_path: Path) -> None:
    text = plan_text(STEP + '  priority = "urgent"\n')
    e = only(issues(tmp_path, text), "priority")
    assert "high, medium, low" in e.message and (e.line, e.column) == at(text, '"urgent"')


def test_needs_unknown_id(tmp_path: Path) -> None:
    text = plan_text(STEP + '  needs = ["0.0", "0.2x"]\n')
    errs = issues(tmp_path, text)
    e = only(errs, '"0.2x"')
    assert (e.line, e.column) == at(text, '"0.2x"')
    assert (only(errs, '"0.0"').line, only(errs, '"0.0"').column) == at(text, '"0.0"')


def test_needs_cycle(tmp_path: Path) -> None:
    text = plan_text(STEP + '  needs = ["0.2"]\n  [[phase.step]]\n  id = "0.2"\n  title = "b"\n  needs = ["0.1"]\n')
    e = only(issues(tmp_path, text), "cycle")
    assert "0.1 -> 0.2 -> 0.1" in e.message and e.line == at(text, "needs")[0]


def test_step_needing_its_own_phase_is_a_cycle(tmp_path: Path) -> None:
    text = plan_text(STEP + '  needs = ["0"]\n')
    assert "0.1 -> 0.1" in only(issues(tmp_path, text), "cycle").message


def test_unknown_var_suggests(tmp_path: Path) -> None:
    text = plan_text('[vars]\nmodel = "/m"\n' + STEP + '  run = "ls ${modle}"\n')
    e = only(issues(tmp_path, text), "modle")
    assert "did you mean ${model}" in e.message and (e.line, e.column) == at(text, '"ls ${modle}"')


def test_var_cycle(tmp_path: Path) -> None:
    text = plan_text('[vars]\na = "${b}/x"\nb = "${a}/y"\n' + STEP)
    errs = issues(tmp_path, text)
    e = [x for x in errs if "cycle" in x.message][0]
    assert "a -> b -> a" in e.message or "b -> a -> b" in e.message
    assert e.line in (at(text, '"${b}/x"')[0], at(text, '"${a}/y"')[0])


def test_literal_dollar_brace_and_env(tmp_path: Path) -> None:
    plan = load(tmp_path, plan_text(STEP + '  run = "echo $${HOME} ${env:WHO}"\n'), environ={"WHO": "o'neil"})
    assert plan.step("0.1").action.shell == "echo ${HOME} 'o'\"'\"'neil'"


def test_env_var_not_set(tmp_path: Path) -> None:
    text = plan_text(STEP + '  run = "echo ${env:NOT_SET_HERE}"\n')
    e = only(issues(tmp_path, text), "NOT_SET_HERE")
    assert "not set" in e.message and e.line == at(text, "run =")[0]


def test_unclosed_reference(tmp_path: Path) -> None:
    text = plan_text(STEP + '  run = "echo ${oops"\n')
    assert only(issues(tmp_path, text), "unclosed").line == at(text, "run =")[0]


def test_bad_duration(tmp_path: Path) -> None:
    text = plan_text(STEP + '  run = "true"\n  timeout = "40 minutes"\n')
    e = only(issues(tmp_path, text), "duration")
    assert '"90s"' in e.message and (e.line, e.column) == at(text, '"40 minutes"')
    text = plan_text(STEP + '  run = "true"\n  timeout = -5\n')
    assert only(issues(tmp_path, text), "positive").line == at(text, "timeout")[0]


def test_run_and_uses(tmp_path: Path) -> None:
    text = plan_text(STEP + '  run = "true"\n  uses = "gpu.kill"\n')
    e = only(issues(tmp_path, text), "not both")
    assert (e.line, e.column) == at(text, "uses")


def test_unknown_uses(tmp_path: Path) -> None:
    text = plan_text(STEP + '  uses = "gpu.kil"\n')
    e = only(issues(tmp_path, text), "gpu.kil")
    assert 'did you mean "gpu.kill"' in e.message and (e.line, e.column) == at(text, '"gpu.kil"')


def test_unknown_uses_in_check_table(tmp_path: Path) -> None:
    text = plan_text(STEP + '  run = "true"\n  check = { uses = "drafter.chek", with = { path = "/d" } }\n')
    e = only(issues(tmp_path, text), "drafter.chek")
    assert 'did you mean "drafter.check"' in e.message and (e.line, e.column) == at(text, '"drafter.chek"')


def test_wrong_value_types(tmp_path: Path) -> None:
    text = plan_text(STEP + '  title2 = 1\n  service = "yes"\n  needs = 3\n  with = 4\n')
    errs = issues(tmp_path, text)
    assert (only(errs, '"service" must be true or false').line,
            only(errs, '"service" must be true or false').column) == at(text, '"yes"')
    assert only(errs, '"needs" must be an array').line == at(text, "needs = 3")[0]
    assert only(errs, "with gives the arguments").line == at(text, "with = 4")[0]


def test_phase_as_table_not_array(tmp_path: Path) -> None:
    text = plan_text('[phase]\nid = "0"\ntitle = "x"\n')
    assert only(issues(tmp_path, text), "[[phase]]").line == at(text, "[phase]")[0]


def test_arrays_where_tables_are_expected(tmp_path: Path) -> None:
    text = plan_text('vars = [1, 2]\nphase = [1]\n', head="plan = [\"x\"]\n")
    errs = issues(tmp_path, text)
    assert only(errs, '"plan" must be a table').line == 1
    assert only(errs, '"vars" must be a table').line == at(text, "vars")[0]


def test_huge_numbers(tmp_path: Path) -> None:
    big = "9" * 400
    text = plan_text(STEP + f'  run = "true"\n  timeout = {big}\n  priority = {big}\n',
                     head=f'[plan]\nid = "t"\ntitle = "x"\nbaseline = {{ tok_s = {big} }}\n')
    errs = issues(tmp_path, text)
    assert only(errs, "positive, finite").line == at(text, "timeout")[0]
    assert len(only(errs, "bad priority").message) < 200
    assert only(errs, "too large").line == at(text, "baseline")[0]


def test_ready_needs_a_service_and_one_probe(tmp_path: Path) -> None:
    text = plan_text(STEP + '  run = "true"\n  ready = { http = "http://x/health", log = "up" }\n')
    assert only(issues(tmp_path, text), "exactly one").line == at(text, "ready")[0]
    text = plan_text(STEP + '  run = "true"\n  ready = { log = "Uvicorn running" }\n')
    assert only(issues(tmp_path, text), "services only").line == at(text, "ready")[0]


def test_bad_todo_label_placeholder(tmp_path: Path) -> None:
    text = plan_text(STEP, head='[plan]\nid = "t"\ntitle = "x"\ntodo_label = "Phase {nr}: {title}"\n')
    e = only(issues(tmp_path, text), "{nr}")
    assert (e.line, e.column) == at(text, '"Phase {nr}')


def test_sglang_server_is_always_a_service(tmp_path: Path) -> None:
    text = plan_text(STEP + '  uses = "sglang.server"\n  service = false\n')
    assert only(issues(tmp_path, text), "always a service").line == at(text, "service = false")[0]


def test_all_errors_are_collected_in_file_order(tmp_path: Path) -> None:
    text = plan_text(STEP + '  priority = "x"\n  uses = "nope"\n  timeout = "soon"\n')
    errs = issues(tmp_path, text)
    assert len(errs) == 3 and [e.line for e in errs] == sorted(e.line for e in errs)


def test_format_first(tmp_path: Path) -> None:
    text = plan_text(STEP + '  priority = "x"\n  uses = "nope"\n')
    with pytest.raises(PlanError) as info:
        load(tmp_path, text)
    line, col = at(text, '"x"')
    assert info.value.format_first().startswith(f"{tmp_path / 'plan.toml'}:{line}:{col}: bad priority")
    assert "1 more error" in info.value.format_first()


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(PlanError) as info:
        load_plan(tmp_path / "absent.toml")
    assert info.value.errors[0].line is None and "cannot read" in info.value.errors[0].message


def test_parse_plan_accepts_text(tmp_path: Path) -> None:
    plan = parse_plan(plan_text(STEP), tmp_path / "p.toml")
    assert plan.path == tmp_path / "p.toml" and plan.step("0.1").action is None


class CrashingValidator(Builtin):
    """A built-in whose `validate` has a bug: registered for the test below only."""

    name = "test.crashing"

    def validate(self, args):
        return [f"{args['missing']}"]  # KeyError on any `with` without "missing"


def test_a_crashing_validator_is_a_plan_error_at_the_steps_with(tmp_path, monkeypatch):
    monkeypatch.setitem(REGISTRY, "test.crashing", f"{__name__}:CrashingValidator")
    monkeypatch.setitem(BUILTINS, "test.crashing", Uses())
    text = plan_text("""
        [[phase]]
        id = "0"
        title = "P"
          [[phase.step]]
          id = "0.1"
          title = "uses a built-in whose validator crashes"
          uses = "test.crashing"
          with = { path = "x" }
    """)
    path = tmp_path / "plan.toml"
    path.write_text(text)
    load_plan(path, environ={})  # a plain load does not ask the built-ins
    with pytest.raises(PlanError) as info:
        load_plan(path, environ={}, check_builtins=check_with)
    (issue,) = info.value.errors
    assert (issue.line, issue.column) == at(text, "{ path")
    assert issue.message.startswith("test.crashing: its check of `with` crashed (KeyError: 'missing')")
    assert info.value.format_all()[0].startswith(f"{path}:{issue.line}:{issue.column}: test.crashing:")


def test_sglang_server_validator_crash_on_a_draft_config_is_reported(tmp_path):
    """A real crash: a draft config.json whose "architectures" is a number (is_eagle3 iterates it)."""
    draft = tmp_path / "drafter"
    draft.mkdir()
    (draft / "config.json").write_text('{"architectures": 5}')
    text = plan_text(f"""
        [[phase]]
        id = "0"
        title = "P"
          [[phase.step]]
          id = "0.1"
          title = "serve"
          uses = "sglang.server"
          with = {{ model = "/m", draft = "{draft}", speculative = {{ algorithm = "EAGLE3" }} }}
    """)
    path = tmp_path / "plan.toml"
    path.write_text(text)
    try:
        load_plan(path, environ={}, check_builtins=check_with)
    except PlanError as exc:
        (issue,) = exc.errors
        assert (issue.line, issue.column) == at(text, "{ model")
        assert "sglang.server: its check of `with` crashed (TypeError" in issue.message
    else:
        pytest.fail("validate said ok although the sglang.server validator crashed")
