"""`eagle-console demo` when its terminal goes away (SIGHUP: the ssh window closed, the tmux session killed)
or it is told to stop (SIGTERM): it stops its simulated processes and says so, as on `q`. It died of the
signal at once (exit -1) and left its two orphaned workers running (found by hand); the multi-node demo
already handled both (test_multinode_demo). Real processes and signals; stdout is a pipe, not a terminal,
but for the last test's pty."""

from __future__ import annotations

import signal
import subprocess
import sys
import time

import pytest

from eagle_console.sim import gpustate


@pytest.mark.parametrize(("sig", "after"), [("SIGHUP", 1.5), ("SIGTERM", 1.5), ("SIGHUP", 0.0)],
                         ids=["hangup-console-up", "term-console-up", "hangup-as-it-opens"])
def test_the_demo_stops_its_simulated_processes_on_hangup(tmp_path, sig, after):
    root = tmp_path / "demo"
    proc = subprocess.Popen([sys.executable, "-m", "eagle_console", "demo", "--dir", str(root)],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, text=True)
    try:
        deadline = time.monotonic() + 60
        while len(gpustate.holders(root / "sim")) < 2:  # built: its two orphans hold their memory
            assert proc.poll() is None and time.monotonic() < deadline, proc.stdout.read()
            time.sleep(0.1)
        time.sleep(after)  # the console up, or still opening
        proc.send_signal(getattr(signal, sig))
        out, _ = proc.communicate(timeout=60)
        held = [h.pid for h in gpustate.holders(root / "sim")]
    finally:
        if proc.poll() is None:
            proc.kill()
        for holder in gpustate.holders(root / "sim"):  # never left to the rest of the suite
            subprocess.run(["kill", "-9", str(holder.pid)], check=False)
    assert proc.returncode == 128 + getattr(signal, sig), out[-500:]
    assert held == [], out[-500:]
    assert f"stopped 2 simulated processes of the demo; its files stay in {root}" in out, out[-500:]


def test_a_console_whose_terminal_went_away_quits_and_stops_the_demo(tmp_path):
    """The terminal gone while the console draws (a log it follows growing) and no SIGHUP reaching the
    console (here the pty is not its controlling terminal): Textual's output thread died of EIO at its next
    write, 30 writes later the console waited for ever in the next one, and it then ignored SIGTERM too; the
    demo's simulated processes ran on. A killed tmux session did the same through Textual's resume on the
    SIGCONT after the hang-up: three demos stuck after three suite runs (cli/terminal_out.py)."""
    import glob
    import os
    import pty
    import select
    import struct
    import threading
    from fcntl import ioctl
    from termios import TIOCSWINSZ

    root = tmp_path / "demo"
    terminal, side = pty.openpty()
    ioctl(side, TIOCSWINSZ, struct.pack("HHHH", 30, 100, 0, 0))
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    proc = subprocess.Popen([sys.executable, "-m", "eagle_console", "demo", "--dir", str(root)], stdin=side,
                            stdout=side, stderr=side, env={**env, "TERM": "xterm-256color"}, start_new_session=True)
    os.close(side)
    screen, fed = b"", threading.Event()

    def read_until(what: bytes, seconds: float) -> None:
        nonlocal screen
        deadline = time.monotonic() + seconds
        while what not in screen:
            assert proc.poll() is None and time.monotonic() < deadline, (what, screen[-2000:])
            if select.select([terminal], [], [], 0.1)[0]:
                screen += os.read(terminal, 65536)

    def feed(log: str) -> None:  # the Output pane follows this log: the console draws again and again
        with open(log, "a") as out:
            while not fed.is_set():
                out.write("a line the console follows " + "x" * 40 + "\n")
                out.flush()
                time.sleep(0.005)

    try:
        read_until(b"Quick Probe", 60)
        os.write(terminal, b"n")  # run 0.1 (it kills the demo's two orphans): its log in the Output pane
        read_until(b"Enter confirm", 30)
        os.write(terminal, b"\r")
        read_until(b"freed_mib_gpu5", 60)
        subprocess.run([sys.executable, "-m", "eagle_console.sim.orphans", "leave", "--sim", str(root / "sim"),
                        "--count", "1"], check=True, timeout=60)  # one for the demo to stop on its way out
        assert len(gpustate.holders(root / "sim")) == 1
        threading.Thread(target=feed, args=glob.glob(f"{root}/plans/.eagle-console/demo/logs/0.1-*.log"),
                         daemon=True).start()
        time.sleep(1.0)
        os.close(terminal)  # the terminal goes away
        terminal = -1
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.send_signal(signal.SIGTERM)  # what an operator tries next
            with pytest.raises(subprocess.TimeoutExpired):
                proc.wait(10)
            raise AssertionError("the console stayed after its terminal went away, and after SIGTERM") from None
        held = [h.pid for h in gpustate.holders(root / "sim")]
    finally:
        fed.set()
        if terminal >= 0:
            os.close(terminal)
        if proc.poll() is None:
            proc.kill()
        for holder in gpustate.holders(root / "sim"):  # never left to the rest of the suite
            subprocess.run(["kill", "-9", str(holder.pid)], check=False)
    assert held == []  # the demo stopped what it had started, as on `q`
