"""Hostile files (issue #18): FIFOs, /dev/zero and /dev/urandom behind a log path, escape sequences in a
log, a log that keeps growing under a one-shot read, NCCL logs with very many host names. Real FIFOs,
real device symlinks, real supervisors and CLI subprocesses. Whatever could hang on a broken build runs in
a subprocess under GUARD_S, a deadline against a hung test, not a timing assertion."""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from enginekit import engine_for, write_plan

from eagle_console.node.tail import LogFollower, read_lines
from eagle_console.parse.nccl import NcclParser

GUARD_S = 60
ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True)
def _short_grace(monkeypatch):
    monkeypatch.setenv("EAGLE_CONSOLE_KILL_GRACE", "1")


def run_py(code: str, *args: str) -> subprocess.CompletedProcess[str]:
    """Run `code` in a fresh interpreter; a hang shows up as TimeoutExpired, not as a stuck test run."""
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code), *args], capture_output=True, text=True,
                          timeout=GUARD_S, cwd=ROOT)


def device_link(tmp_path: Path, name: str, target: str) -> Path:
    link = tmp_path / name
    link.symlink_to(target)
    return link


# ---- the follower (Output / Server / NCCL panes) --------------------------------------------------------

FOLLOW_FIFO = """
    import json, os, sys
    from eagle_console.node.tail import LogFollower
    path = sys.argv[1]
    f = LogFollower(path, start="end", last_lines=100)
    first, second = f.read_new(), f.read_new()
    os.unlink(path)
    with open(path, "w") as out:
        out.write("a regular file now\\n")
    third = f.read_new()
    print(json.dumps([first, second, third, f.refused]))
"""


def test_follower_refuses_a_fifo_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "step.log"
    os.mkfifo(fifo)
    r = run_py(FOLLOW_FIFO, str(fifo))  # the old follower blocked in open() until a writer came
    assert r.returncode == 0, r.stderr
    first, second, third, refused = json.loads(r.stdout)
    assert len(first) == 1 and str(fifo) in first[0] and "a FIFO, not a regular file" in first[0]
    assert second == []  # said once, not on every poll
    assert third == ["a regular file now"] and refused is None  # a regular file in its place is followed


@pytest.mark.parametrize("device", ["/dev/zero", "/dev/urandom"])
def test_follower_refuses_device_symlinks(tmp_path: Path, device: str) -> None:
    link = device_link(tmp_path, "server.log", device)
    kind = "a character device"
    for start in ("begin", "end"):
        with LogFollower(link, start=start, last_lines=10) as f:
            got = f.read_new()
            assert got == [f"[eagle-console] {link} is {kind}, not a regular file: refused "
                           "(only regular files are read)"]
            assert f.read_new() == [] and not f.more and f.position == 0
            assert f.refused and str(link) in f.refused


def test_escape_sequences_are_shown_escaped(tmp_path: Path) -> None:
    log = tmp_path / "step.log"
    log.write_bytes(b"\x1b]0;pwned\x07\x1b[2J\x1b[31mred\x1b[0m [bold]not markup[/bold] \xc2\x9b1m caf\xc3\xa9\n")
    with LogFollower(log) as f:
        (line,) = f.read_new()
    assert line == "\\x1b]0;pwned\\x07\\x1b[2J\\x1b[31mred\\x1b[0m [bold]not markup[/bold] \\x9b1m café"


def test_a_poll_reads_at_most_one_mebibyte(tmp_path: Path) -> None:
    log = tmp_path / "big.log"
    log.write_bytes(b"x" * 100 + b"\n" * (8 << 20))
    with LogFollower(log) as f:
        got = f.read_new()
        assert f.more and f.position <= 1 << 20 and len(got) < 1 << 20


# ---- one-shot reads (server-log, nccl, log) -------------------------------------------------------------

READ_LINES = """
    import itertools, sys
    from eagle_console.node.tail import NotRegularFile, read_lines
    try:
        lines = list(itertools.islice(read_lines(sys.argv[1]), 10))
    except NotRegularFile as exc:
        print("refused:", exc)
    else:
        print("read", len(lines), "lines")
"""


@pytest.mark.parametrize("target", ["fifo", "/dev/zero", "/dev/urandom"])
def test_read_lines_refuses_fifo_and_devices(tmp_path: Path, target: str) -> None:
    path = tmp_path / "server.log"
    if target == "fifo":
        os.mkfifo(path)
    else:
        path.symlink_to(target)
    r = run_py(READ_LINES, str(path))  # old: blocked (FIFO) or read the device forever
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith(f"refused: {path} is a ") and "not a regular file" in r.stdout


def test_one_shot_read_stops_at_the_size_it_started_with(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    log.write_text("".join(f"line {i}\n" for i in range(50)))
    got = []
    with open(log, "a") as writer:  # a writer that appends a line for every line read
        for line in itertools.islice(read_lines(log), 200):
            got.append(line)
            writer.write(f"later {len(got)}\n")
            writer.flush()
    assert got == [f"line {i}" for i in range(50)]


def test_read_lines_until_keeps_reading_then_stops(tmp_path: Path) -> None:
    log = tmp_path / "step.log"
    log.write_text("one\n")
    polls = []

    def until() -> bool:
        polls.append(1)
        if len(polls) == 1:
            with open(log, "a") as f:
                f.write("two\nthree")  # written while following, last line without newline
            return False
        return True

    assert list(read_lines(log, until=until, sleep=lambda s: None)) == ["one", "two", "three"]
    with pytest.raises(FileNotFoundError):
        list(read_lines(tmp_path / "missing.log"))
    with pytest.raises(OSError, match="a directory, not a regular file"):
        list(read_lines(tmp_path))


# ---- real supervisors ------------------------------------------------------------------------------------

def _plan_with_log(tmp_path: Path, log: Path, run: str, timeout: str = "") -> Path:
    extra = f'timeout = "{timeout}"' if timeout else ""
    return write_plan(tmp_path, f"""
        [[phase]]
        id = "0"
        title = "P"
          [[phase.step]]
          id = "0.1"
          title = "hostile log"
          run = "{run}"
          log = "{log}"
          {extra}
    """)


def _supervisor_log(tmp_path: Path) -> str:
    return "".join(p.read_text(errors="replace") for p in tmp_path.rglob("*.supervisor.log"))


def test_supervisor_with_a_fifo_log_still_times_out_and_is_journaled(tmp_path: Path) -> None:
    fifo = tmp_path / "step.fifo"
    os.mkfifo(fifo)
    eng = engine_for(_plan_with_log(tmp_path, fifo, "sleep 300", timeout="1s"))
    run_id = eng.start("0.1")
    try:
        run = eng.wait(run_id, timeout=GUARD_S)
        assert run.finished and run.outcome == "timeout" and "timed out" in run.reason
        assert eng.journal.statuses()["0.1"] == "failed"
        assert f"{fifo} is a FIFO, not a regular file" in _supervisor_log(tmp_path)
    finally:  # a supervisor stuck in open() of the FIFO (the old code) gets its reader, then ends
        fd = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
        os.close(fd)


def test_supervisor_with_a_dev_zero_log_refuses_it(tmp_path: Path) -> None:
    link = device_link(tmp_path, "step.log", "/dev/zero")
    eng = engine_for(_plan_with_log(tmp_path, link, "echo hello"))
    run = eng.wait(eng.start("0.1"), timeout=GUARD_S)
    assert run.finished and run.outcome == "completed"
    assert f"{link} is a character device, not a regular file" in _supervisor_log(tmp_path)


# ---- the `log` command -----------------------------------------------------------------------------------

def _cli(*args: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-m", "eagle_console", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, cwd=ROOT)


def _ran_step_with_log(tmp_path: Path) -> tuple[Path, Path]:
    log = tmp_path / "step.log"
    plan = _plan_with_log(tmp_path, log, "echo hello")
    eng = engine_for(plan)
    assert eng.wait(eng.start("0.1"), timeout=GUARD_S).outcome == "completed"
    return plan, log


@pytest.mark.parametrize("target", ["fifo", "/dev/zero", "/dev/urandom"])
def test_log_command_refuses_fifo_and_devices(tmp_path: Path, target: str) -> None:
    plan, log = _ran_step_with_log(tmp_path)
    log.unlink()
    if target == "fifo":
        os.mkfifo(log)
    else:
        log.symlink_to(target)
    # `| head -c 1M`: the old command printed a device for ever (it ends on SIGPIPE here) or hung on a FIFO
    script = 'set -o pipefail; "$0" -m eagle_console log "$1" 0.1 | head -c 1048576'
    try:
        r = subprocess.run(["bash", "-c", script, sys.executable, str(plan)], capture_output=True,
                           timeout=GUARD_S, cwd=ROOT)
    finally:
        if target == "fifo":  # a reader stuck in open() (the old code) gets a writer and EOF
            try:
                os.close(os.open(log, os.O_WRONLY | os.O_NONBLOCK))
            except OSError:
                pass
    assert r.returncode == 1 and r.stdout == b""
    err = r.stderr.decode()
    assert f"{log} is a " in err and "not a regular file" in err


def test_log_command_shows_control_bytes_escaped(tmp_path: Path) -> None:
    plan, log = _ran_step_with_log(tmp_path)
    log.write_bytes(b"before\n\x1b[2J\x1b]0;title\x07 \xff binary\nafter\n")
    proc = _cli("log", str(plan), "0.1")
    out, err = proc.communicate(timeout=GUARD_S)
    assert proc.returncode == 0, err
    assert out.decode().splitlines() == ["before", "\\x1b[2J\\x1b]0;title\\x07 \\xff binary", "after"]


# ---- NCCL: linear in host names --------------------------------------------------------------------------

def test_nccl_host_lookups_do_not_scan_all_hosts() -> None:
    """100k lines from 100k hosts took 54 s: every line scanned the list of hosts seen so far. Count the
    host entries compared instead of timing: a set-like lookup compares one, a list scan all of them."""
    n = 5000
    parser = NcclParser()
    compared = [0]
    base = type(parser.hosts)

    class Counted(base):  # type: ignore[misc, valid-type]
        def __contains__(self, item: object) -> bool:
            compared[0] += len(self) if isinstance(self, list) else 1
            return base.__contains__(self, item)

        def index(self, *args: object) -> int:  # a list scan by another name
            compared[0] += len(self)
            return base.index(self, *args)  # type: ignore[attr-defined]

    parser.hosts = Counted(parser.hosts)
    parser.feed(f"node{i}:{100 + i}:{200 + i} [0] NCCL INFO Channel 00/0 : {i % 8}[{i % 8}] -> "
                f"{(i + 1) % 8}[{(i + 1) % 8}] via P2P/CUMEM/read" for i in range(n))
    assert compared[0] <= 2 * n
    summary = parser.summary()
    assert summary["hosts"][:3] == ["node0", "node1", "node2"] and len(summary["hosts"]) == n


def plant(path: Path, kind: str) -> None:
    """What another user may leave where a JSON file is expected (a shared model folder, a --sim folder)."""
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "dev-zero":
        path.symlink_to("/dev/zero")
    else:
        path.write_text("[" * 100_000 + "]" * 100_000)


def run_limited(argv: list[str]) -> subprocess.CompletedProcess[str]:
    """A child under GUARD_S and 1 GiB of address space: on a broken build /dev/zero fails there, not here."""
    def limit() -> None:
        import resource

        resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))

    return subprocess.run(argv, capture_output=True, text=True, timeout=GUARD_S, cwd=ROOT, preexec_fn=limit,
                          stdin=subprocess.DEVNULL)


REFUSED = {"fifo": "is a FIFO (named pipe), not a regular file: refused",
           "dev-zero": "is a character device, not a regular file: refused",
           "deep": "JSON nested too deeply to read: refused"}


@pytest.mark.parametrize("kind", sorted(REFUSED))
def test_a_planted_drafter_config_is_refused_with_its_path(tmp_path: Path, kind: str) -> None:
    """A checkpoint's config.json: before, a FIFO hung `drafter check`, /dev/zero read until memory ran out,
    deep nesting was an internal RecursionError."""
    plant(tmp_path / "config.json", kind)
    out = run_limited([sys.executable, "-c", textwrap.dedent("""
        import sys
        from pathlib import Path
        from eagle_console.drafter.checkpoint import CheckpointError, read_json
        try:
            read_json(Path(sys.argv[1]))
        except CheckpointError as exc:
            print(exc.code, exc)
    """), str(tmp_path / "config.json")])
    assert out.stdout.strip() == f"CONFIG_INVALID {tmp_path / 'config.json'}: {REFUSED[kind]}", out.stderr


@pytest.mark.parametrize("kind", sorted(REFUSED))
def test_a_planted_sim_node_or_ranks_file_is_refused_not_read(tmp_path: Path, kind: str) -> None:
    """`--sim DIR` whose node.json is planted: one line, exit 2 (before: a FIFO hung `gpus`); a multi-node
    server's ranks.json in its artifacts: read as no ranks (before: a FIFO hung the reader)."""
    sim = tmp_path / "sim"
    sim.mkdir()
    plant(sim / "node.json", kind)
    out = run_limited([sys.executable, "-m", "eagle_console", "gpus", "--json", "--sim", str(sim)])
    assert out.returncode == 2 and out.stdout == ""
    assert out.stderr == f"eagle-console: --sim {sim}: not a simulated node (node.json: {REFUSED[kind]})\n"
    from eagle_console.sglang.multinode_run import RANKS_FILE

    plant(tmp_path / RANKS_FILE, kind)
    out = run_limited([sys.executable, "-c", "import sys; from pathlib import Path; from eagle_console.sglang."
                       "multinode_run import load_ranks; print(load_ranks(Path(sys.argv[1])))", str(tmp_path)])
    assert out.stdout.strip() == "[]", out.stderr
