"""Fault injection: the console dies (kill -9) or its terminal closes (SIGHUP) while a step runs.

Each trial opens the real console in tmux on a one-step plan, presses `r` to start a step that runs for
DURATION seconds, then kills the console with SIGKILL (even trials) or closes its terminal with
`tmux kill-session` (odd trials: SIGHUP). It then waits for the step to end and checks that

  * the run finished with exit status 0 and the step is `completed` (a lost run otherwise),
  * every journal event the run should produce is there (run_begin, status in_progress, run_log,
    2x run_proc, run_exit, status completed — a lost event otherwise),
  * a console opened afterwards shows the step completed (✔) and its log in the Output tab.

    python benchmarks/fault_runs.py [--trials 20] [--duration 20] [--parallel 5]

Trials run in parallel batches (each on its own plan and journal) so 20 x 20 s takes minutes, not 7.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from eagle_console.journal import Journal  # noqa: E402

EXPECTED = Counter({"run_begin": 1, "run_log": 1, "run_proc": 2, "run_exit": 1, "status": 2})


def tmux(*args: str) -> str:
    return subprocess.run(["tmux", *args], capture_output=True, text=True).stdout


def screen(session: str) -> str:
    return tmux("capture-pane", "-p", "-t", session)


def wait_for(pred, timeout: float, interval: float = 0.2):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = pred()
        if value:
            return value
        time.sleep(interval)
    return None


def console(session: str, plan: Path) -> None:
    env = f"PYTHONPATH={REPO} EAGLE_CONSOLE_KILL_GRACE=2"
    cmd = f"env {env} {sys.executable} -m eagle_console tui {plan}"
    tmux("new-session", "-d", "-s", session, "-x", "120", "-y", "40", cmd)


def trial(n: int, duration: float, root: Path) -> dict:
    mode = "kill -9" if n % 2 == 0 else "SIGHUP"
    folder = root / f"trial-{n}"
    folder.mkdir()
    plan = folder / "plan.toml"
    plan.write_text(f'''[plan]
id = "fault{n}"
title = "fault trial {n}"

[[phase]]
id = "0"
title = "Faults"
  [[phase.step]]
  id = "0.1"
  title = "A {duration:g}-second step"
  run = "echo step started; sleep {duration:g}; echo step finished cleanly"
''')
    session = f"ec-fault-{os.getpid()}-{n}"
    result = {"trial": n, "mode": mode, "lost_run": True, "lost_events": 0, "shown": False, "error": None}
    try:
        console(session, plan)
        if not wait_for(lambda: "fault trial" in screen(session) or "0.1" in screen(session), 30):
            result["error"] = "the console did not come up"
            return result
        time.sleep(0.5)
        tmux("send-keys", "-t", session, "r")
        journal = Journal(folder / ".eagle-console" / f"fault{n}" / "journal.db")
        run = wait_for(lambda: next((r for r in journal.runs() if r.pid), None), 30)
        if run is None:
            result["error"] = "pressing r did not start the run"
            return result
        console_pid = int(tmux("display-message", "-p", "-t", session, "#{pane_pid}").strip() or 0)
        if mode == "kill -9":
            os.kill(console_pid, signal.SIGKILL)
        else:
            tmux("kill-session", "-t", session)  # the terminal goes away: SIGHUP to the console
        ended = wait_for(lambda: (r := journal.run(run.id)) and r.finished and r, duration + 60)
        if ended and ended.exit_code == 0 and journal.statuses().get("0.1") == "completed":
            result["lost_run"] = False
        kinds = Counter(e.kind for e in journal.events(0, "0.1"))
        result["lost_events"] = sum((EXPECTED - kinds).values())
        tmux("kill-session", "-t", session)
        after = session + "-after"
        console(after, plan)
        seen = wait_for(lambda: "✔" in screen(after), 30)
        tmux("send-keys", "-t", after, "3")  # the Output tab
        log_seen = wait_for(lambda: "step finished cleanly" in screen(after), 15)
        result["shown"] = bool(seen and log_seen)
        tmux("kill-session", "-t", after)
    except Exception as exc:  # a benchmark reports, it does not crash half-way
        result["error"] = f"{type(exc).__name__}: {exc}"
    finally:
        tmux("kill-session", "-t", session)
    return result


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--trials", type=int, default=20)
    ap.add_argument("--duration", type=float, default=20.0)
    ap.add_argument("--parallel", type=int, default=5)
    args = ap.parse_args()
    if not shutil.which("tmux"):
        print("tmux is needed for this benchmark", file=sys.stderr)
        return 2
    root = Path(tempfile.mkdtemp(prefix="ec-fault-"))
    t0 = time.monotonic()
    with ThreadPoolExecutor(max_workers=args.parallel) as pool:
        results = list(pool.map(lambda n: trial(n, args.duration, root), range(args.trials)))
    for r in results:
        flag = "ok  " if not r["lost_run"] and not r["lost_events"] and r["shown"] else "FAIL"
        print(f"{flag} trial {r['trial']:2d} ({r['mode']:7s}): lost run={r['lost_run']} "
              f"lost events={r['lost_events']} shown after={r['shown']} {r['error'] or ''}")
    lost_runs = sum(r["lost_run"] for r in results)
    lost_events = sum(r["lost_events"] for r in results)
    not_shown = sum(not r["shown"] for r in results)
    print(f"\n{args.trials} trials of a {args.duration:g}s step in {time.monotonic() - t0:.0f}s: "
          f"{lost_runs} lost runs, {lost_events} lost journal events, {not_shown} not shown by a new console")
    shutil.rmtree(root, ignore_errors=True)
    return 0 if lost_runs == lost_events == not_shown == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
