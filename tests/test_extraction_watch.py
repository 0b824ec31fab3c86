"""ExtractionWatch on a growing folder and on a log with tqdm lines, the "does not fit" warning, verify."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import clikit
import pytest

from eagle_console.drafter.samples import verify_extraction
from eagle_console.engine.builtins import get_builtin
from eagle_console.engine.builtins.base import ActionContext
from eagle_console.engine.runner import builtin_call
from eagle_console.node.extraction import ExtractionWatch, OutputScanner, full_scan
from eagle_console.plan.model import Action, Plan, Step


def extract(out: Path, *args: str, log: Path | None = None) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "eagle_console.sim.extract", "--out", str(out), *args]
    if log is None:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=60, check=True)
    with open(log, "w") as f:
        return subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT, text=True, timeout=60, check=True)


def test_growing_folder_counts_only_what_is_new(tmp_path: Path) -> None:
    out = tmp_path / "out"
    scanner = OutputScanner(out)
    assert scanner.tick() == (0, 0)
    extract(out, "--samples", "30", "--group-size", "10")
    assert scanner.tick() == full_scan(out)
    extract(out, "--samples", "45", "--group-size", "10", "--seed", "3")  # rewrites 0..29, adds 30..44
    files, size = scanner.tick()
    assert (files, size) == full_scan(out) and files == 45
    (out / "rows_40-50" / "data_44.safetensors").unlink()
    assert scanner.tick() == full_scan(out)
    (out / "rows_0-10" / "notes.txt").write_text("not a sample")
    assert scanner.tick()[0] == 44


def test_log_with_tqdm_lines_and_summary(tmp_path: Path) -> None:
    out, log = tmp_path / "out", tmp_path / "extract.log"
    log.write_text("loading model\n" "Extracting: 40%|████      | 4/10 [00:02<00:03, 2.00it/s, tokens=512]\r")
    watch = ExtractionWatch(logs=[log], total=None)
    r = watch.tick()
    assert (r["done"], r["total"], r["rate_per_s"], r["tokens"]) == (4, 10, 2.0, 512)
    assert r["eta_s"] == pytest.approx(3.0) and r["summary"] is None
    extract(out, "--samples", "10", log=log)  # appends nothing: a fresh run truncates, as a relaunched job would
    r = watch.tick()
    assert r["done"] == 10 and r["summary"]["total_samples"] == 10 and r["eta_s"] == 0.0
    assert r["tokens"] == r["summary"]["total_tokens"] > 0


def test_does_not_fit_warning_with_sparse_samples(tmp_path: Path) -> None:
    out, log = tmp_path / "out", tmp_path / "x.log"
    # 4 of 10_000 samples written, each of logical size 100 GB: 1 PB projected, far beyond any free space
    extract(out, "--samples", "4", "--bytes-per-sample", str(100 * 10**9), log=log)
    watch = ExtractionWatch(outputs=[out], total=10_000)
    r = watch.tick()
    assert r["files"] == 4 and r["output_bytes"] >= 4 * 100 * 10**9
    assert r["projected_bytes"] >= 10_000 * 100 * 10**9 and r["fits"] is False
    assert r["warnings"] and "free" in r["warnings"][0]
    # all written, but sparse: the files take almost nothing on disk, so the 400 GB still do not fit (it said
    # "fits" here once nothing was left to write, on the same figures: issue 32)
    small = ExtractionWatch(outputs=[out], total=4).tick()
    assert small["output_disk_bytes"] < 10**9 and small["fits"] is False
    assert small["warnings"][0].startswith("finished, but its files'"), small["warnings"]
    dense = tmp_path / "dense"
    extract(dense, "--samples", "4")  # real bytes on disk: all written, nothing more to need
    whole = ExtractionWatch(outputs=[dense], total=4).tick()
    assert whole["fits"] is True and whole["warnings"] == [] and whole["output_disk_bytes"] >= whole["output_bytes"]


def test_the_fit_verdict_does_not_flip_when_the_run_ends_on_the_same_figures(tmp_path: Path) -> None:
    """While it ran: `fits: NO`, projected far beyond the free space; at the last sample, with the same
    projection and the same free space, it said `fits: yes` (nothing left to write). The sim's files are
    sparse, as big files on a full disk would not be: what they take on disk counts as written."""
    out, log = tmp_path / "out", tmp_path / "extract.log"
    per_sample = 2 * 10**12  # 2 TB each (sparse), 50 of them: 100 TB, beyond any test machine's free space
    extract(out, "--samples", "3", "--bytes-per-sample", str(per_sample))
    log.write_text("Extracting: 6%|▌         | 3/50 [00:01<00:15, 3.00it/s, tokens=300]\r")
    watch = ExtractionWatch(logs=[log], outputs=[out], total=50)
    running = watch.tick()
    assert running["summary"] is None and running["fits"] is False
    assert running["warnings"][0].endswith("free space or stop early"), running["warnings"]
    extract(out, "--samples", "50", "--bytes-per-sample", str(per_sample), log=log)
    ended = watch.tick()
    assert ended["summary"] is not None and ended["projected_bytes"] == ended["output_bytes"] >= 50 * per_sample
    assert ended["fits"] is False, ended  # was True
    assert ended["warnings"][0].startswith("finished, but its files'"), ended["warnings"]


def test_cli_extraction_json(tmp_path: Path) -> None:
    out, log = tmp_path / "out", tmp_path / "x.log"
    extract(out, "--samples", "6", log=log)
    p = clikit.run(["extraction", log, out, "--json"], timeout=60)
    doc = json.loads(p.stdout)
    assert p.returncode == 0
    assert {"done", "total", "rate_per_s", "eta_s", "files", "output_bytes", "projected_bytes", "free_bytes",
            "fits", "summary"} <= set(doc)
    assert doc["done"] == doc["files"] == 6 and doc["summary"]["total_samples"] == 6
    p = clikit.run(["extraction", tmp_path / "nope"], timeout=60)
    assert p.returncode == 2 and "not found" in p.stderr


def test_verify_good_and_bad_samples(tmp_path: Path) -> None:
    good, bad = tmp_path / "good", tmp_path / "bad"
    extract(good, "--samples", "40", "--hidden-size", "16")
    r = verify_extraction(good, sample=8, hidden_size=16, layers=3)
    assert r["ok"] and r["checked"] == 8 and r["files"] == 40
    assert r["largest_file"].endswith("data_39.safetensors")  # the longest sample is always opened
    wrong = verify_extraction(good, sample=4, hidden_size=7168, layers=3)
    assert not wrong["ok"] and "expected [1, " in wrong["problems"][0]["problems"][0]
    extract(bad, "--samples", "40", "--bad", "1")  # the NaN goes into the longest sample
    r = verify_extraction(bad, sample=4, hidden_size=16)
    assert not r["ok"] and r["bad"] == 1 and "NaN/Inf" in r["problems"][0]["problems"][0]


def test_verify_builtin_reports_results(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out"
    extract(out, "--samples", "12", "--bad", "1")
    plan = Plan(id="p", title="t", path=tmp_path / "plan.toml", state_dir=tmp_path / "state")
    step = Step(id="2.1", title="verify", phase_id="2")
    args = {"path": str(out), "sample": 5, "hidden_size": 16}
    ctx = ActionContext.from_call(builtin_call(plan, step, Action("builtin", uses="extraction.verify", with_=args),
                                               "run"))
    assert get_builtin("extraction.verify").run(ctx) == 1
    text = capsys.readouterr().out
    assert "::result verify_bad=1" in text and "::result verify_files=12" in text


def test_rate_without_a_log_is_the_pace_of_the_files_and_stays_put_after_the_end(tmp_path: Path) -> None:
    """No log: the rate is the output files' pace (first to last sample), the same for every reader, and it
    does not decay after the job ended (the old windowed rate fell towards 0 while nothing was written)."""
    out = tmp_path / "out"
    extract(out, "--samples", "6", "--rate", "20")
    first = ExtractionWatch(outputs=[out], total=6).tick()["rate_per_s"]
    again = ExtractionWatch(outputs=[out], total=6)
    again.tick()
    assert first is not None and first > 0
    assert again.tick()["rate_per_s"] == first
