"""The user's kept Ray driver (cluster/keptdriver.py, cluster/driver.py): a second fresh `gpus --cluster` is
answered by the driver the first one started, another uid is refused, a killed or stopped driver is
replaced, an idle one exits. Real Ray (the session's local cluster, tests/clusterkit.py), real processes, a
real second uid; each test keeps its drivers in a runtime dir of its own and stops them after."""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil
import pytest
from clusterkit import cli, needs_ray, running

from eagle_console.cluster.keptdriver import DRIVER_MODULE, kept_drivers, stop_kept

pytestmark = needs_ray
NOBODY = 65534


_AGENTS_STARTED: set[str] = set()  # the clusters whose agents a first read started


@pytest.fixture
def cluster(ray_cluster):
    """The session's cluster with its node agents started (a first call starts their workers: ~1.3 s, past
    the CLI's 2 s read on a loaded machine)."""
    from eagle_console.ops.nodes import read_nodes

    if ray_cluster.address not in _AGENTS_STARTED:
        read_nodes(ray_cluster.address, timeout=30)
        _AGENTS_STARTED.add(ray_cluster.address)
    return ray_cluster


@pytest.fixture
def runtime():
    """An XDG_RUNTIME_DIR of this test's (short: a socket path is at most 107 bytes); its drivers stopped."""
    folder = Path(tempfile.mkdtemp(prefix="eck-", dir="/tmp"))
    try:
        yield folder
    finally:
        stop_kept(folder / "eagle-console")
        shutil.rmtree(folder, ignore_errors=True)


def _gpus(cluster, runtime: Path, **env: str) -> subprocess.CompletedProcess:
    """`gpus --cluster ADDR --json` from a fresh process; both nodes must answer."""
    r = cli("gpus", "--cluster", cluster.address, "--json", env={"XDG_RUNTIME_DIR": str(runtime), **env})
    assert r.returncode == 0, r.stdout + r.stderr
    assert {n["name"]: n["reachable"] for n in json.loads(r.stdout)["nodes"]} == {"a": True, "b": True}, r.stdout
    return r


def _kept(runtime: Path) -> list[tuple[int, Path]]:
    return kept_drivers(runtime / "eagle-console")


def _ask(sock_path: Path, op: str) -> dict:
    """One request on the driver's socket, as cluster/link.py sends it: its lines until the answer."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(30)
        s.connect(str(sock_path))
        s.sendall((json.dumps({"id": 1, "op": op, "timeout": 10, "args": {}}) + "\n").encode())
        for raw in s.makefile("rb"):
            msg = json.loads(raw)
            if msg["id"] == 1:
                return msg
    raise AssertionError("the driver closed without answering")


def _until_gone(pid: int, what: str, within: float = 60.0) -> None:
    deadline = time.monotonic() + within  # a hang guard, not a timing
    while running(pid):
        assert time.monotonic() < deadline, f"{what}: pid {pid} still runs"
        time.sleep(0.2)


def test_a_second_fresh_gpus_is_answered_by_the_driver_the_first_started(cluster, runtime):
    """Old: each fresh `gpus --cluster` started its own driver (`import ray` 0.44 s + `ray.init`)."""
    _gpus(cluster, runtime)
    found = _kept(runtime)
    assert len(found) == 1, f"no kept driver's socket in {runtime}: {found}"
    pid, sock = found[0]
    folder = sock.parent
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700 and folder.stat().st_uid == os.getuid()
    assert stat.S_IMODE(sock.stat().st_mode) == 0o600
    before = _ask(sock, "about")["ok"]
    assert before["pid"] == pid and before["address"] == cluster.address
    argv = psutil.Process(pid).cmdline()  # every user's to read: the token is not there
    assert argv[1:] == ["-m", DRIVER_MODULE, cluster.address, "--socket", str(sock), "--keep", "300"], argv
    token = Path(os.environ["RAY_AUTH_TOKEN_PATH"]).read_text().strip()
    assert token and token not in " ".join(argv) and token not in sock.name

    # every Python process of the second call says what it imports; a driver's stderr is its log
    second = _gpus(cluster, runtime, PYTHONPROFILEIMPORTTIME="1")
    assert "import time:" in second.stderr  # the CLI's own imports: the observable works
    assert not re.search(r"\|\s+ray(\.\S+)?\s*$", second.stderr, re.M)
    assert "import time:" not in sock.with_suffix(".log").read_text(), "the second call started a driver"
    after = _ask(sock, "about")["ok"]
    assert after["pid"] == pid
    assert after["accepted"] == before["accepted"] + 2  # the second `gpus` and this question
    assert _kept(runtime) == [(pid, sock)]


def _as_other_uid(sock_path: Path) -> list[dict]:
    """What a process of another uid gets from the socket: a forked child that drops to NOBODY, connects,
    asks for the node table and reads until the driver closes."""
    rfd, wfd = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: nothing of pytest's from here, and out by os._exit
        try:
            os.close(rfd)
            os.setgroups([])
            os.setgid(NOBODY)
            os.setuid(NOBODY)
            lines = []
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
                s.settimeout(20)
                s.connect(str(sock_path))
                with contextlib.suppress(OSError):
                    s.sendall(b'{"id": 1, "op": "nodes", "timeout": 5, "args": {}}\n')
                with contextlib.suppress(OSError):
                    lines = [json.loads(raw) for raw in s.makefile("rb")]
            os.write(wfd, json.dumps(lines).encode())
            os._exit(0)
        except BaseException as exc:  # noqa: BLE001 - said to the parent
            os.write(wfd, json.dumps([{"child": repr(exc)}]).encode())
            os._exit(1)
    os.close(wfd)
    with os.fdopen(rfd, "rb") as r:
        out = r.read()
    os.waitpid(pid, 0)
    return json.loads(out)


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to run a peer as another uid")
def test_another_uid_is_refused_by_the_driver(cluster, runtime):
    """The folder (0700) and the socket (0600) keep other users out; opened here to reach the last wall, the
    driver's SO_PEERCRED check. Old: no driver socket at all."""
    _gpus(cluster, runtime)
    [(pid, sock)] = _kept(runtime)
    for path, mode in ((runtime, 0o711), (sock.parent, 0o711), (sock, 0o666)):
        path.chmod(mode)
    lines = _as_other_uid(sock)
    assert len(lines) == 1, lines  # no hello, no answer: one refusal, then closed
    assert lines[0]["kinds"] == ["PeerRefused"] and f"not uid {NOBODY}" in lines[0]["error"], lines
    assert f"refused a connection from uid {NOBODY}" in sock.with_suffix(".log").read_text()
    assert _ask(sock, "about")["ok"]["pid"] == pid  # its own user is still served


def test_a_killed_or_stopped_driver_is_replaced(cluster, runtime):
    """Killed: its socket is left behind, and the next call starts a fresh driver, which removes it. Stopped
    (SIGSTOP): it never says its first line; the next call ends it and starts another."""
    _gpus(cluster, runtime)
    [(first, sock)] = _kept(runtime)
    os.kill(first, signal.SIGKILL)
    _until_gone(first, "the killed driver")
    assert sock.exists()
    _gpus(cluster, runtime)
    [(second, sock2)] = _kept(runtime)
    assert second != first and sock2 == sock

    os.kill(second, signal.SIGSTOP)
    try:
        _gpus(cluster, runtime)
        [(third, _)] = _kept(runtime)
        assert third != second
        _until_gone(second, "the stopped driver")
    finally:
        if running(second):
            os.kill(second, signal.SIGKILL)


def test_a_driver_stopped_under_an_open_connection_is_replaced_not_a_head_down(cluster, runtime, monkeypatch):
    """A console holds its connection for hours; the operator stops the kept driver (`keptdriver stop`) or
    another command replaces it. The console's next question goes to a fresh driver, and the head is not
    said unreachable: only a driver that lost its head (its GCS gone, Ray's minute) says that."""
    from eagle_console.cluster import link
    from eagle_console.cluster.connect import cluster_nodes

    link.shutdown()  # this process's connections: from here on, in this test's runtime dir
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime))
    try:
        assert {n.name for n in cluster_nodes(cluster.address) if n.alive} == {"a", "b"}
        [(first, _)] = _kept(runtime)
        assert stop_kept(runtime / "eagle-console") == [first]
        assert {n.name for n in cluster_nodes(cluster.address) if n.alive} == {"a", "b"}
        assert link.head_down(cluster.address) is None
        [(second, _)] = _kept(runtime)
        assert second != first
    finally:
        link.shutdown()


def _fd_drivers(address: str) -> list[int]:
    """Drivers of `address` that serve one asker (EAGLE_CONSOLE_RAY_KEEP_S=0)."""
    out = []
    for p in psutil.process_iter(["pid", "cmdline"]):
        cmd = p.info["cmdline"] or []
        if DRIVER_MODULE in cmd and address in cmd and "--fd" in cmd and running(p.info["pid"]):
            out.append(p.info["pid"])
    return out


def test_an_idle_driver_exits_and_keep_0_keeps_none(cluster, runtime):
    """EAGLE_CONSOLE_RAY_KEEP_S: a driver with no asker for that long exits and removes its socket; 0: the
    driver is the asker's own and ends with it (the behaviour before kept drivers)."""
    _gpus(cluster, runtime, EAGLE_CONSOLE_RAY_KEEP_S="2")
    [(pid, sock)] = _kept(runtime)
    _until_gone(pid, "the idle driver")
    assert not sock.exists()
    assert "driver exits: no asker for 2s" in sock.with_suffix(".log").read_text()

    _gpus(cluster, runtime, EAGLE_CONSOLE_RAY_KEEP_S="0")
    assert _kept(runtime) == []
    deadline = time.monotonic() + 30
    while _fd_drivers(cluster.address):
        assert time.monotonic() < deadline, "the asker's own driver outlived it"
        time.sleep(0.2)


def test_single_node_commands_start_no_driver(tmp_path, runtime):
    """Nothing single-node reaches for a driver: no folder for one is even made."""
    from eagle_console.sim import gpustate

    sim = tmp_path / "sim"
    gpustate.create_node(sim, gpus=1)
    plan = tmp_path / "plan.toml"
    plan.write_text('[plan]\nid = "one"\ntitle = "one node"\n\n[[phase]]\nid = "0"\ntitle = "P"\n'
                    '  [[phase.step]]\n  id = "0.1"\n  title = "t"\n  run = "echo hi"\n')
    env = {"XDG_RUNTIME_DIR": str(runtime)}
    for argv in (["gpus", "--sim", sim, "--json"], ["run", plan, "0.1", "--yes", "--wait"],
                 ["status", plan, "--json"], ["orphans", plan, "--sim", sim, "--json"]):
        r = cli(*argv, env=env)
        assert r.returncode == 0, (argv, r.stderr)
    assert not (runtime / "eagle-console").exists()


HOME_OF = "from eagle_console.cluster.keptdriver import home; print(home())"


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to plant a folder owned by another uid")
def test_a_planted_or_linked_folder_is_not_used(cluster, tmp_path):
    """Another user who made /tmp/eagle-console-UID first (or a symlink there) gets no socket of ours in it:
    no driver is kept, and the command still answers with a driver of its own."""
    me = os.getuid()
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    env.pop("XDG_RUNTIME_DIR")
    planted = tmp_path / f"eagle-console-{me}"
    planted.mkdir(mode=0o700)
    os.chown(planted, NOBODY, NOBODY)
    home = subprocess.run([sys.executable, "-c", HOME_OF], capture_output=True, text=True, env=env, timeout=60)
    assert home.stdout.strip() == "None", home.stdout + home.stderr
    r = cli("gpus", "--cluster", cluster.address, "--json", env={"TMPDIR": str(tmp_path), "XDG_RUNTIME_DIR": ""})
    assert r.returncode == 0 and all(n["reachable"] for n in json.loads(r.stdout)["nodes"]), r.stdout + r.stderr
    assert list(planted.iterdir()) == []

    planted.rmdir()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir(mode=0o700)
    planted.symlink_to(elsewhere)
    home = subprocess.run([sys.executable, "-c", HOME_OF], capture_output=True, text=True, env=env, timeout=60)
    assert home.stdout.strip() == "None", home.stdout + home.stderr

    planted.unlink()  # and one of our own is made 0700 and used
    home = subprocess.run([sys.executable, "-c", HOME_OF], capture_output=True, text=True, env=env, timeout=60)
    assert home.stdout.strip() == str(planted) and stat.S_IMODE(planted.stat().st_mode) == 0o700
