"""One `Finding` for every checker, and the `--json` documents keep the keys their named types declare."""

from __future__ import annotations

from pathlib import Path

from eagle_console.drafter.check import DrafterCheck, DrafterReport, check_drafter
from eagle_console.findings import Finding, FindingJson, by_severity
from eagle_console.parse.nccl import NcclParser, NcclSummary
from eagle_console.parse.sglang_log import ServerLogSummary, SglangLogParser
from eagle_console.sglang.args import launch_findings
from eagle_console.sim import drafters as sim

DATA = Path(__file__).parent / "data"


def read(name: str) -> list[str]:
    return (DATA / name).read_text(encoding="utf-8").splitlines()


def assert_findings(found: list, json_found: list) -> None:
    assert found and all(type(f) is Finding for f in found)
    assert json_found == [f.to_json() for f in found]
    assert all(list(f) == list(FindingJson.__annotations__) for f in json_found)


def test_nccl_findings_are_findings_and_the_summary_has_its_declared_keys() -> None:
    parser = NcclParser()
    parser.feed(read("nccl/nccltests166_shm_net.txt"))
    summary = parser.summary()
    assert list(summary) == list(NcclSummary.__annotations__)
    assert_findings(parser.findings(), summary["findings"])


def test_server_log_findings_are_findings_and_the_summary_has_its_declared_keys() -> None:
    parser = SglangLogParser()
    parser.feed(read("sglang/sglang4547_cuda_oom_traceback.txt"))
    summary = parser.summary()
    assert list(summary) == list(ServerLogSummary.__annotations__)
    assert_findings(parser.findings(), summary["findings"])


def test_drafter_and_launch_findings_share_the_shape(tmp_path: Path) -> None:
    cfg = sim.draft_config(norm_before_residual=None)
    path = sim.write_drafter(tmp_path / "d", cfg, sim.draft_tensors(cfg, sim.k25_target_ids()))
    check = DrafterCheck(path)
    report = check.run()
    assert list(report) == list(DrafterReport.__annotations__) and report == check_drafter(path)
    assert_findings(by_severity(check.findings), report["findings"])
    launch = launch_findings({"model": "m", "draft": str(path), "speculative": {"algorithm": "EAGLE"}})
    assert [(f.severity, f.code) for f in launch] == [("error", "ALGORITHM")]
    assert type(launch[0]) is Finding
