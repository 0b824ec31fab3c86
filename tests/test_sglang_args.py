"""The sglang.server launch command: argv from `with`, its checks (ALGORITHM on real drafter configs)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from eagle_console.engine.builtins.base import ActionContext
from eagle_console.engine.builtins.sglang_server import SglangServer
from eagle_console.engine.runner import builtin_call
from eagle_console.plan.model import Action, Plan, Step
from eagle_console.sglang.args import LaunchArgsError, build_launch_argv, launch_findings

SPEC = {"algorithm": "EAGLE3", "num_steps": 2, "eagle_topk": 1, "num_draft_tokens": 3}


def eagle3_drafter(folder: Path) -> Path:
    """A drafter folder whose config.json is shaped like SpecForge's LlamaForCausalLMEagle3 export."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(json.dumps({
        "architectures": ["LlamaForCausalLMEagle3"], "model_type": "llama", "num_hidden_layers": 1,
        "hidden_size": 7168, "vocab_size": 163840, "draft_vocab_size": 32000,
        "eagle_config": {"eagle_aux_hidden_state_layer_ids": [1, 29, 57]}}))
    return folder


def eagle2_drafter(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(json.dumps({"architectures": ["LlamaForCausalLM"], "hidden_size": 4096,
                                                    "vocab_size": 32000}))
    return folder


def test_full_argv_in_order():
    argv = build_launch_argv({"model": "/m/K2.5", "draft": "/m/draft", "tp": 8, "port": "30000",
                              "speculative": SPEC, "args": ["--disable-custom-all-reduce", "--trust-remote-code"]})
    assert argv == ["python3", "-m", "sglang.launch_server", "--model-path", "/m/K2.5", "--tp-size", "8",
                    "--host", "127.0.0.1", "--port", "30000", "--speculative-algorithm", "EAGLE3",
                    "--speculative-draft-model-path", "/m/draft", "--speculative-num-steps", "2",
                    "--speculative-eagle-topk", "1", "--speculative-num-draft-tokens", "3",
                    "--disable-custom-all-reduce", "--trust-remote-code"]


def test_python_string_is_split_so_the_sim_can_stand_in():
    argv = build_launch_argv({"model": "m", "python": "/venv/bin/python -m eagle_console.sim.sglang_server"})
    assert argv[:5] == ["/venv/bin/python", "-m", "eagle_console.sim.sglang_server", "-m", "sglang.launch_server"]
    assert build_launch_argv({"model": "m", "python": ["py", "-X", "dev"]})[:3] == ["py", "-X", "dev"]


@pytest.mark.parametrize("with_, words", [
    ({}, "`model`"),
    ({"model": "m", "port": 70000}, "`port` must be between"),
    ({"model": "m", "tp": "eight"}, "`tp` must be an integer"),
    ({"model": "m", "speculative": {"algorithm": "EAGLE 4"}}, "speculative.algorithm"),  # EAGLE4: a plugin name
    ({"model": "m", "speculative": {"algorithm": "EAGLE3", "steps": 2}}, "unknown keys: steps"),
    ({"model": "m", "draft": "/d"}, "`draft` is set but"),
    ({"model": "m", "args": "--x"}, "`args` must be a list"),
    ({"model": "m", "python": "'unclosed"}, "`python` does not split"),
    ({"model": "m", "typo": 1}, "unknown keys: typo"),
])
def test_bad_with_is_refused_with_the_key(with_, words):
    with pytest.raises(LaunchArgsError, match=words.replace("(", r"\(").replace("`", "`")):
        build_launch_argv(with_)
    assert [f.code for f in launch_findings(with_)] == ["ARGS"]


def test_eagle3_drafter_with_algorithm_eagle_is_refused(tmp_path):
    draft = eagle3_drafter(tmp_path / "k25-eagle3")
    findings = launch_findings({"model": "m", "draft": str(draft), "speculative": {**SPEC, "algorithm": "EAGLE"}})
    assert [(f.severity, f.code) for f in findings] == [("error", "ALGORITHM")]
    assert "EAGLE3" in findings[0].message
    assert SglangServer().validate({"model": "m", "draft": str(draft), "speculative": {"algorithm": "eagle"}})[0] \
        .startswith("ALGORITHM: ")
    assert launch_findings({"model": "m", "draft": str(draft), "speculative": SPEC}) == []


def test_eagle2_drafter_with_eagle_is_fine_and_hub_ids_are_not_read(tmp_path):
    draft = eagle2_drafter(tmp_path / "eagle2")
    assert launch_findings({"model": "m", "draft": str(draft), "speculative": {"algorithm": "EAGLE"}}) == []
    assert launch_findings({"model": "m", "draft": "AQ-MedAI/Kimi-K25-eagle3",
                            "speculative": {"algorithm": "EAGLE"}}) == []


def test_chain_with_wrong_draft_token_count_warns():
    findings = launch_findings({"model": "m", "speculative": {"algorithm": "EAGLE3", "num_steps": 3,
                                                              "eagle_topk": 1, "num_draft_tokens": 3}})
    assert [(f.severity, f.code) for f in findings] == [("warning", "SPEC_CHAIN")]
    assert SglangServer().validate({"model": "m", "speculative": {"algorithm": "EAGLE3", "num_steps": 3,
                                                                  "eagle_topk": 1, "num_draft_tokens": 3}}) == []


def test_builtin_argv_and_default_ready(tmp_path):
    plan = Plan(id="p", title="P", path=tmp_path / "plan.toml", state_dir=tmp_path / "state")
    step = Step(id="0.3", title="server", phase_id="0", timeout_s=600.0)
    args = {"model": "/m", "tp": 8, "port": 31000, "host": "0.0.0.0"}
    call = builtin_call(plan, step, Action("builtin", uses="sglang.server", with_=args), "run")
    ctx = ActionContext.from_call(call)
    b = SglangServer()
    assert b.service and b.has_undo()
    assert b.service_argv(ctx)[:3] == ["python3", "-m", "sglang.launch_server"]
    ready = b.default_ready(ctx)
    assert ready.http == "http://127.0.0.1:31000/health" and ready.timeout_s == 600.0


@pytest.mark.parametrize("extra, flag", [
    (["--port", "30001"], "repeats --port"),
    (["--port=30001"], "repeats --port"),
    (["--por", "30001"], "abbreviates --port"),
    (["--tp", "4"], "abbreviates --tp-size"),  # 0.5.23: no `--tp` alias, only argparse's abbreviation
    (["--tensor-parallel-size=4"], "repeats --tp-size"),
    (["--model", "/other"], "repeats --model-path"),
    (["--model-pa=/other"], "abbreviates --model-path"),
    (["--speculative-draft-model", "/d2"], "repeats --speculative-draft-model-path"),
    (["--speculative-num-st", "5"], "abbreviates --speculative-num-steps"),
])
def test_args_repeating_a_generated_flag_are_refused(extra, flag):
    with_ = {"model": "m", "draft": "/d", "speculative": SPEC, "args": ["--trust-remote-code", *extra]}
    with pytest.raises(LaunchArgsError, match=flag):
        build_launch_argv(with_)
    assert [f.code for f in launch_findings(with_)] == ["ARGS"]


def test_args_that_generate_nothing_twice_pass():
    argv = build_launch_argv({"model": "m", "speculative": {"algorithm": "EAGLE3"},
                              "args": ["--speculative-num-steps", "3", "--mem-fraction-static=0.8", "--trust-remote-code"]})
    assert argv[-4:] == ["--speculative-num-steps", "3", "--mem-fraction-static=0.8", "--trust-remote-code"]


@pytest.mark.parametrize("spec", [{"algorithm": "EAGLE3", "eagle_topk": 1},
                                  {"algorithm": "EAGLE3", "num_draft_tokens": 4}])
def test_topk_or_draft_tokens_without_num_steps_is_refused_as_sglang_asserts(spec):
    with pytest.raises(LaunchArgsError, match="need `num_steps`"):
        build_launch_argv({"model": "m", "speculative": spec})


def test_newer_algorithms_are_accepted_with_a_version_note():
    findings = launch_findings({"model": "m", "draft": "/hub/dflash", "speculative": {"algorithm": "dflash"}})
    assert [(f.severity, f.code) for f in findings] == [("warning", "SPEC_VERSION")]
    assert "--speculative-algorithm" in " ".join(build_launch_argv({"model": "m", "speculative": {"algorithm": "DFLASH"}}))


def test_eagle_with_eagle3_drafter_names_the_silent_accept_length(tmp_path):
    draft = eagle3_drafter(tmp_path / "k25-eagle3")
    (finding,) = launch_findings({"model": "m", "draft": str(draft), "speculative": {**SPEC, "algorithm": "EAGLE"}})
    assert finding.severity == "error" and "accept length is silently 1.0" in finding.message


# SGLang 0.5.23 (the wheel's srt/speculative/spec_info.py:32-66 and srt/arg_groups/fields/exec_.py:629-645,
# server_args.py:408-414); docs/upstream.md "Server log and arguments (SGLang 0.5.23)".
def test_uno_and_plugin_registered_algorithms_are_accepted_with_a_note():
    assert "UNO" in build_launch_argv({"model": "m", "speculative": {"algorithm": "UNO"}})
    assert [f.code for f in launch_findings({"model": "m", "speculative": {"algorithm": "uno"}})] == ["SPEC_VERSION"]
    findings = launch_findings({"model": "m", "speculative": {"algorithm": "MY_SPEC"}})
    assert [(f.severity, f.code) for f in findings] == [("warning", "SPEC_VERSION")]
    assert "plugin" in findings[0].message
    with pytest.raises(LaunchArgsError, match="plugin-registered"):
        build_launch_argv({"model": "m", "speculative": {"algorithm": "EAGLE-3; rm"}})


def test_cuda_graph_max_bs_is_refused_for_0_5_23_and_deprecations_named():
    with_ = {"model": "m", "sglang_version": "0.5.23", "args": ["--cuda-graph-max-bs", "16", "--disable-cuda-graph"]}
    got = [(f.severity, f.code, f.message) for f in launch_findings(with_)]
    assert [(sev, code) for sev, code, _m in got] == [("error", "ARGS"), ("warning", "ARGS")]
    assert "--cuda-graph-max-bs-decode" in got[0][2] and "ambiguous" in got[0][2]
    assert "--cuda-graph-backend-decode=disabled" in got[1][2]
    assert "--sglang-version" not in " ".join(build_launch_argv(with_))  # a check key, never on the command line
    old = launch_findings({**with_, "sglang_version": "0.5.9"})
    assert old == []
    unknown = launch_findings({"model": "m", "args": ["--cuda-graph-max-bs", "16"]})
    assert [(f.severity, f.code) for f in unknown] == [("warning", "ARGS")]
