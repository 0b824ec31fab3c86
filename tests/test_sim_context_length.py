"""The simulated node teaches why step 0.2 exists: SGLang refuses a drafter whose context is shorter than the
target's (configs/model_config.py `_derive_context_length`), with its own message, until 0.2 fixes it."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import clikit
import pytest

from eagle_console.demo.build import build_demo, stop_leftovers
from eagle_console.sim.server_config import ServerConfig, derived_context_length, draft_context_error

SGLANG_TEXT = ("Warning: Target model's context_length (262144) is greater than the derived context_length (131072). "
               "This may lead to incorrect model outputs or CUDA errors. Note that the derived context_length may "
               "differ from max_position_embeddings in the model's config. To allow overriding this maximum, set "
               "the env var SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1")


def cli(*args: str, timeout: float = 180) -> subprocess.CompletedProcess:
    return clikit.run(args, timeout=timeout)


def test_the_derived_length_follows_get_context_length(tmp_path: Path):
    assert derived_context_length({"max_position_embeddings": 131072}) == 131072
    assert derived_context_length({"seq_length": 4096, "max_position_embeddings": 131072}) == 4096  # key order
    assert derived_context_length({"max_position_embeddings": 4096, "rope_scaling": {"factor": 4.0}}) == 16384
    assert derived_context_length({"max_position_embeddings": 4096,
                                   "rope_scaling": {"factor": 8.0, "rope_type": "llama3"}}) == 4096
    (tmp_path / "config.json").write_text(json.dumps({"max_position_embeddings": 131072}))
    cfg = ServerConfig(speculative_draft_model_path=str(tmp_path), speculative_algorithm="EAGLE3")
    assert draft_context_error(cfg, allow_longer=False) == (SGLANG_TEXT, [])
    error, warnings = draft_context_error(cfg, allow_longer=True)
    assert error is None and warnings[-1] == "Overriding the draft model's max_position_embeddings to 262144."


@pytest.fixture
def demo(tmp_path):
    plan = build_demo(tmp_path / "demo")
    yield plan
    cli("rollback", plan, "0.3", "--yes", "--force")
    stop_leftovers(tmp_path / "demo")


def test_demo_03_fails_with_sglangs_message_until_02_fixes_the_drafter(demo):
    failed = cli("run", demo, "0.3", "--force", "--wait")
    assert failed.returncode == 1, failed.stdout + failed.stderr
    status = json.loads(cli("status", demo, "--json").stdout)
    steps = {s["id"]: s["status"] for p in status["phases"] for s in p["steps"]}
    assert steps["0.3"] == "failed"
    log = Path(demo).parent / "logs" / "sglang-phase0.log"
    report = json.loads(cli("server-log", log, "--json").stdout)
    messages = [f["message"] for f in report["findings"] if f["code"] == "SCHEDULER_EXCEPTION"]
    assert messages and any("context_length (262144) is greater than the derived context_length (131072)" in m
                            for m in messages), report["findings"]
    assert f"ValueError: {SGLANG_TEXT}" in log.read_text()
    # the Server pane's head shows SGLang's message whole (it was cut at 160 characters)
    from eagle_console.tui.panes.server import summary_text

    shown = summary_text(report, []).plain
    assert "To allow overriding this maximum, set the env var SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN" in shown
    fixed = cli("run", demo, "0.2", "--wait")
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr
    started = cli("run", demo, "0.3", "--force", "--wait")
    assert started.returncode == 0, started.stdout + started.stderr


def test_the_draft_weights_line_names_the_class_sglang_builds_for_the_drafter(tmp_path: Path):
    """0.5.23's "Load weight end. … type=…" names the model class: an MLA drafter (the demo's K2.x layout)
    is `Eagle3DeepseekV2ForCausalLM` (models/kimi_k25_eagle3.py EntryClass), a Llama-layout one
    `LlamaForCausalLMEagle3`."""
    from eagle_console.sim.drafters import draft_config, mla_draft_config
    from eagle_console.sim.server_config import draft_class

    for name, config, expected in (("mla", mla_draft_config(), "Eagle3DeepseekV2ForCausalLM"),
                                   ("llama", draft_config(), "LlamaForCausalLMEagle3")):
        (tmp_path / name).mkdir()
        (tmp_path / name / "config.json").write_text(json.dumps(config))
        cfg = ServerConfig(speculative_draft_model_path=str(tmp_path / name), speculative_algorithm="EAGLE3")
        assert draft_class(cfg) == expected
