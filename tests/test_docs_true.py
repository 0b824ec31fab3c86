"""What the README and docs say of the repository itself is true (issue 32): what `.ci/run` runs, the order
`n` takes the demo's steps in, what an extra installs; the shipped plans validate clean; the demo plan
reads like the real Phase 0 plan. (The commands the docs show: tests/test_doc_commands.py.)"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import clikit

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

REPO = Path(__file__).resolve().parent.parent
README = (REPO / "README.md").read_text()
PLANS = sorted((REPO / "plans").glob("*.toml"))


def test_every_shipped_plan_validates_with_no_warning() -> None:
    """Defect: plans/extraction-sglang.toml drew `59:11: warning: "check" puts ${dataset} inside quotes`."""
    assert len(PLANS) >= 2
    r = clikit.run(["validate", *PLANS], cwd=REPO, timeout=60)
    assert r.returncode == 0 and r.stderr == "", r
    assert [line.split(": ok — plan ")[0] for line in r.stdout.splitlines()] == [str(p) for p in PLANS], r.stdout


def test_the_demo_plan_describes_its_steps_as_the_real_phase0_plan_does(tmp_path: Path) -> None:
    """Defect: the demo's steps had no description while plans/phase0-aqmedai-probe.toml's had: the demo
    showed an emptier Step pane than a real plan does."""
    from eagle_console.demo.build import build_demo, stop_leftovers
    from eagle_console.plan.loader import load_plan

    demo = load_plan(build_demo(tmp_path, orphans=0))
    stop_leftovers(tmp_path)
    real = load_plan(REPO / "plans" / "phase0-aqmedai-probe.toml")
    assert [s.id for s in demo.steps() if not s.description] == []
    assert [s.id for s in real.steps() if not s.description] == []
    shared = [s.id for s in real.steps() if demo.step(s.id) is not None]
    assert shared == ["0.1", "0.2", "0.2b", "0.3", "0.4"]
    assert {sid: demo.step(sid).description for sid in shared} == {sid: real.step(sid).description for sid in shared}


def test_the_readme_test_command_is_ci_first_step_and_it_names_the_others() -> None:
    """Defect: the README said its test command "is exactly what `.ci/run` runs"; .ci/run also runs ruff and
    the suite twice more (at the dependency floors on 3.10, at the newest releases on 3.13)."""
    ci = (REPO / ".ci" / "run").read_text()
    command = re.search(r"Run the tests.*?```bash\n(.+?)\n```", README, re.S)
    assert command, "the README's test command"
    sections = re.findall(r'^echo "== (.+)"\n(.+)$', ci, re.M)
    assert sections[0][1] == command.group(1), "the README's command is .ci/run's first"
    said = README[command.start():command.end()]
    assert "exactly" not in said
    for name, _ in sections[1:]:  # each further step of .ci/run is named where the README gives the command
        words = re.findall(r"ruff|import-linter|lint-imports|floors|newest|3\.\d+", name)
        assert words, f".ci/run step {name!r}: say in the README what it runs (and teach this test its words)"
        for word in words:
            assert word in said, f".ci/run step {name!r}: the README does not say {word!r}"


def test_the_readme_walks_phase0_in_the_order_n_takes_it(tmp_path: Path) -> None:
    """Defect: the README's `n` walk went 0.1, 0.2, 0.3, 0.4: `n` runs 0.2b between 0.2 and 0.3."""
    from eagle_console.demo.build import build_demo, stop_leftovers
    from eagle_console.ops.steps import next_step
    from eagle_console.plan.loader import load_plan

    plan = load_plan(build_demo(tmp_path, orphans=0))
    stop_leftovers(tmp_path)
    done: dict[str, str] = {}
    order = []
    while (step := next_step(plan, done)) is not None and step.phase_id == "0":
        order.append(step.id)
        done[step.id] = "completed"
    walk = re.search(r"`n` runs the next step \((.+?)\), `K`", README, re.S)
    assert walk, "the README's walk through Phase 0"
    assert re.findall(r"\b(\d+\.\d+[a-z]?) [a-z]", walk.group(1)) == order == ["0.1", "0.2", "0.2b", "0.3", "0.4"]


def test_what_the_docs_say_an_extra_adds_is_what_pyproject_declares() -> None:
    """Defect: operations.md said `pip install -e '.[node]'` "adds sglang[all]"; the extra is plain `sglang`."""
    extras = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    seen = 0
    for doc in [REPO / "README.md", *(REPO / "docs").glob("*.md")]:
        for extra, adds in re.findall(r"\.\[(\w+)\]'\s+#\s*adds ([\w\[\],.-]+)", doc.read_text()):
            declared = [re.match(r"[\w\[\],.-]+", req).group() for req in extras[extra]]
            assert adds in declared, f"{doc.name}: .[{extra}] adds {adds}, pyproject declares {declared}"
            seen += 1
    assert seen >= 1


def test_the_docs_do_not_say_the_console_is_still_to_ship() -> None:
    """Defect: operations.md said to reattach with status, log -f "or the console, once it ships"."""
    for doc in [REPO / "README.md", *(REPO / "docs").glob("*.md")]:
        assert "once it ships" not in doc.read_text(), doc.name
