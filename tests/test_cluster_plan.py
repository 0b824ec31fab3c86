"""`[cluster]` and a step's `node` in the plan (issue #20): read without Ray, errors at line:column."""

from __future__ import annotations

import json
from pathlib import Path

from test_plan_loader import at, issues, load, only, plan_text

STEP = '''
[[phase]]
id = "0"
title = "P"
  [[phase.step]]
  id = "0.1"
  title = "extract on b"
  run = "echo hi"
  node = "b"
'''


def test_cluster_and_node_are_read(tmp_path: Path):
    plan = load(tmp_path, plan_text('[cluster]\naddress = "ray://head.internal:10001"\n' + STEP))
    assert plan.cluster is not None and plan.cluster.address == "ray://head.internal:10001"
    assert plan.step("0.1").node == "b"


def test_a_plan_without_cluster_has_none(tmp_path: Path):
    plan = load(tmp_path, plan_text(STEP.replace('  node = "b"\n', "")))
    assert plan.cluster is None and plan.step("0.1").node is None


def test_node_without_cluster_is_an_error_at_its_value(tmp_path: Path):
    text = plan_text(STEP)
    err = only(issues(tmp_path, text), "node names a cluster node")
    assert (err.line, err.column) == at(text, '"b"')


def test_bad_address_and_bad_node_name(tmp_path: Path):
    text = plan_text('[cluster]\naddress = "http://x"\n' + STEP.replace('node = "b"', 'node = "b c"'))
    errs = issues(tmp_path, text)
    assert (only(errs, "bad [cluster] address").line, only(errs, "bad [cluster] address").column) == at(text, '"http')
    assert (only(errs, "bad node name").line, only(errs, "bad node name").column) == at(text, '"b c"')


def test_unknown_key_in_cluster(tmp_path: Path):
    text = plan_text('[cluster]\naddress = "auto"\nadress = "x"\n' + STEP)
    assert only(issues(tmp_path, text), 'unknown key "adress"').line == at(text, "adress =")[0]


def test_schema_knows_cluster_and_node():
    schema = json.loads((Path(__file__).parent.parent / "eagle_console/plan/schema.json").read_text())
    assert schema["properties"]["cluster"]["required"] == ["address"]
    assert "node" in schema["definitions"]["step"]["properties"]
