"""No secret of a plan on a command line another user can read (ps, /proc/*/cmdline), nor in the step log:
a real detached supervisor and a real built-in, read by a real second local user (docs/security-secrets.md)."""

from __future__ import annotations

import os
import signal

from enginekit import engine_for, wait_for, write_plan
from secretkit import command_lines_seen_by, leaks, mode, other_user

from eagle_console.ports import free_port
from eagle_console.processes import alive

HF_TOKEN = "hf_secretTOKENa8c1d9e4f7"
PASSWORD = "pw-secret-7Qz9xK"


def _plan(tmp_path):
    # http.wait on a port nobody answers: the supervisor and the built-in stay up while we look
    return write_plan(tmp_path, f"""
        [env]
        HF_TOKEN = "{HF_TOKEN}"

        [[phase]]
        id = "0"
        title = "P"
          [[phase.step]]
          id = "0.1"
          title = "wait on a URL with a password"
          uses = "http.wait"
          with = {{ url = "http://admin:{PASSWORD}@127.0.0.1:{free_port()}/health", timeout = "300s" }}
          timeout = "600s"
        """)


def test_no_secret_on_any_command_line_of_a_local_run(tmp_path):
    engine = engine_for(_plan(tmp_path))
    run_id = engine.start("0.1")
    run = wait_for(lambda: (r := engine.journal.run(run_id)) and r.pid and r)
    log = engine.log_path(engine.plan.step("0.1"), run_id)
    try:
        wait_for(lambda: log.exists() and "waiting up to" in log.read_text())
        with other_user() as user:
            seen = command_lines_seen_by(user)
        # the run's processes were there to be seen: the scan cannot pass for want of them
        assert "eagle_console.engine.supervise" in seen and "eagle_console.engine.action" in seen, seen[-2000:]
        for secret in (HF_TOKEN, PASSWORD):
            assert leaks(seen, secret) == [], f"{secret} on a command line: {leaks(seen, secret)}"
        # the step log is the operator's (0600) and says the URL without its password
        assert leaks(log.read_text(), PASSWORD) == [], log.read_text()
        state = engine.plan.state_dir
        spec = state / "runs" / f"{run_id}.json"
        assert (mode(state), mode(state / "runs"), mode(spec), mode(log)) == (0o700, 0o700, 0o600, 0o600)
        assert HF_TOKEN in spec.read_text()  # the spec (0600) is where the run's env travels
    finally:
        os.kill(run.supervisor_pid, signal.SIGTERM)  # it stops the action's session and records the end
        wait_for(lambda: not alive(run.supervisor_pid, run.supervisor_ctime), timeout=60)
