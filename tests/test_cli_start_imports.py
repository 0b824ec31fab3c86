"""What a CLI process loads before it does anything (benchmarks/cli_start.py measures the CPU): the commands
an operator and a script run most do not load psutil, the SGLang log patterns or the browser server's
access rules, none of which they use; and the start time read from /proc is psutil's, to the tick."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import psutil

from eagle_console.processes import create_time

HEAVY = ("psutil", "eagle_console.parse.sglang_log", "eagle_console.serve.access")
# run as the CLI's entry point does, then list which of HEAVY were loaded (atexit: after the command ran)
PROBE = ("import atexit, json, sys\n"
         "atexit.register(lambda: sys.__stderr__.write('LOADED=' + json.dumps("
         f"sorted(m for m in {HEAVY!r} if m in sys.modules)) + '\\n'))\n"
         "from eagle_console.cli import main\n"
         "sys.argv = ['eagle-console', *sys.argv[1:]]\n"
         "sys.exit(main())\n")

PLAN = '[plan]\nid = "p"\ntitle = "t"\n\n[[phase]]\nid = "0"\ntitle = "P"\n  [[phase.step]]\n  id = "0.1"\n' \
       '  title = "s"\n  run = "true"\n'


def loaded_by(*argv: str, cwd: Path) -> list[str]:
    out = subprocess.run([sys.executable, "-c", PROBE, *argv], capture_output=True, text=True, timeout=60,
                         cwd=cwd, stdin=subprocess.DEVNULL)
    line = next((x for x in out.stderr.splitlines() if x.startswith("LOADED=")), None)
    assert line is not None, out.stdout + out.stderr
    return json.loads(line.removeprefix("LOADED="))


def test_status_run_mark_validate_and_help_load_none_of_the_heavy_modules(tmp_path):
    """Were loaded by every command (status 131.6 ms CPU, now 105.9; bare Python 27.6); `run` loaded psutil
    and the kill rules to read the grace of a timeout (node/grace.py)."""
    plan = tmp_path / "plan.toml"
    plan.write_text(PLAN)
    for argv in (["status", str(plan)], ["status", str(plan), "--json"], ["validate", str(plan)],
                 ["run", str(plan), "0.1", "--yes", "--wait"], ["rollback", str(plan), "0.1", "--yes"],
                 ["mark", str(plan), "0.1", "skipped", "--note", "n"], ["nccl", "--help"], ["serve", "--help"]):
        assert loaded_by(*argv, cwd=tmp_path) == [], argv


def test_the_commands_that_use_them_still_load_them(tmp_path):
    """The modules are loaded where they are used, not lost: a server log's load line, the GPU holders."""
    log = tmp_path / "server.log"
    log.write_text("[2026-01-01 00:00:00] Load weight end. type=DeepseekV3ForCausalLM, dtype=torch.bfloat16, "
                   "avail mem=10.00 GB, mem usage=60.00 GB.\n")
    assert "eagle_console.parse.sglang_log" in loaded_by("server-log", str(log), cwd=tmp_path)
    assert "psutil" in loaded_by("orphans", "--json", cwd=tmp_path)


def test_create_time_is_psutils_for_every_process():
    """A start time read from /proc here is compared with ones psutil gave (journal records, a session's
    members) within CTIME_SLACK_S: it must be the same value, for every process there is."""
    compared = 0
    for proc in psutil.process_iter():
        try:
            theirs = proc.create_time()
        except psutil.Error:
            continue
        ours = create_time(proc.pid)
        if ours is None:  # exited in between
            continue
        assert ours == theirs, (proc.pid, ours, theirs)
        compared += 1
    assert compared > 5
    assert create_time(2**22 + 1) is None  # above pid_max: no such process
