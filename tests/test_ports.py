"""free_port picks where no outgoing connection can take the port before the server binds it.

CI failed once on `test_model_too_big_for_the_cards_fails_like_sglang`: the sim server found its port
("Address already in use") taken between the test's pick (bind port 0) and its own bind; the kernel hands
out the local ports of outgoing connections from the same range as bind(0), and six test workers make
many."""

from __future__ import annotations

import os
import secrets
import socket
import threading
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import clikit
import pytest
from conftest import bound, worker_ports

from eagle_console import ports


@pytest.fixture(autouse=True)
def _default_range(monkeypatch):
    """The default draw: the suite gives each worker a range of its own (conftest.worker_ports)."""
    monkeypatch.delenv(ports.ENV, raising=False)


def _this_workers_slice() -> tuple[int, int]:
    """This xdist worker's own ports (conftest.worker_ports; the whole default range without xdist)."""
    given = worker_ports(os.environ.get("PYTEST_XDIST_WORKER"), os.environ.get("PYTEST_XDIST_WORKER_COUNT"))
    low, high = given.split("-")
    return int(low), int(high)


@pytest.fixture
def own_floor(monkeypatch) -> int:
    """free_port's floor moved to the start of this worker's own slice: a test's range of a few ports above
    the floor is then no other worker's (20000-20060 is the first worker's, whose servers listen there and
    leave ports in TIME_WAIT)."""
    low = _this_workers_slice()[0]
    monkeypatch.setattr(ports, "FLOOR", low)
    return low


def test_the_port_is_free_and_outside_the_kernels_range_for_outgoing_connections():
    low, high = ports.ephemeral_range()
    picked = {ports.free_port() for _ in range(50)}
    assert all(ports.FLOOR <= p < low for p in picked), sorted(picked)
    assert len(picked) > 40  # drawn at random: two pickers at one moment rarely agree
    bound(picked.pop()).close()  # free: a server can bind it


def test_an_outgoing_connection_never_gets_a_picked_port():
    """What took the port in CI: the local port of a connection lies in the ephemeral range."""
    low, high = ports.ephemeral_range()
    with bound(ports.free_port()) as server:
        server.listen(8)
        clients = [socket.create_connection(server.getsockname()) for _ in range(8)]
        try:
            local = [c.getsockname()[1] for c in clients]
        finally:
            for c in clients:
                c.close()
    assert all(low <= p <= high for p in local), local


def test_a_taken_port_is_not_picked(tmp_path: Path, own_floor: int):
    """A range that leaves one candidate, taken by a listener: the pick falls back to the kernel's."""
    range_file = tmp_path / "range"
    with bound(ports.FLOOR) as taken:
        taken.listen(1)
        range_file.write_text(f"{ports.FLOOR + 1}\t60999\n")
        port = ports.free_port(range_file)
    assert port != ports.FLOOR
    assert port >= ports.FLOOR + 1


def test_a_host_with_no_room_below_its_range_gets_the_kernels_pick(tmp_path: Path):
    range_file = tmp_path / "range"
    range_file.write_text("1024\t65535\n")
    bound(ports.free_port(range_file)).close()


def test_an_unreadable_range_is_linuxs_default(tmp_path: Path):
    assert ports.ephemeral_range(tmp_path / "missing") == (32768, 60999)
    (tmp_path / "bad").write_text("not numbers\n")
    assert ports.ephemeral_range(tmp_path / "bad") == (32768, 60999)


def test_a_process_never_gets_one_port_twice(tmp_path: Path, own_floor: int):
    """A local Ray cluster's start picks 16 ports (two nodes) before `ray start` binds any: independent draws
    from ~12,700 could give one port twice in up to ~1 % of starts, and that node failed to start. Here a
    range of 60 ports and 40 picks, nothing bound in between (independent draws: all distinct ~1 in 10^7)."""
    range_file = tmp_path / "range"
    range_file.write_text(f"{ports.FLOOR + 60}\t60999\n")
    picked = [ports.free_port(range_file) for _ in range(40)]
    assert len(set(picked)) == len(picked), sorted(picked)
    for port in picked:  # each still free: drawn from the range, or the kernel's pick once it is used up
        bound(port).close()


def _four_free_ports_of_this_worker(monkeypatch) -> int:
    """The first of four free ports in a row from this worker's own slice, this process's memory of what
    it picked cleared. A range inside the kernel's (41000-41003 once) failed CI: another worker's outgoing
    connection, or its 60 s TIME_WAIT, held one of the four."""
    monkeypatch.setattr(ports, "_given", set())
    low, high = _this_workers_slice()
    for first in range(low + secrets.randbelow(high - low - 3), high - 3):
        if all(ports._bindable(p) for p in range(first, first + 4)):
            return first
    raise AssertionError(f"no four free ports in a row in {low}-{high}")


def test_the_operators_range_confines_every_pick(monkeypatch):
    first = _four_free_ports_of_this_worker(monkeypatch)
    chosen = f"{first}-{first + 3}"
    monkeypatch.setenv(ports.ENV, chosen)
    picked = [ports.free_port() for _ in range(4)]
    assert sorted(picked) == list(range(first, first + 4))  # distinct, and every one of them in the range
    with pytest.raises(OSError, match=f"no free port in EAGLE_CONSOLE_PORTS={chosen}"):
        ports.free_port()  # never a port outside it


def test_a_range_inside_the_kernels_never_gives_a_port_an_outgoing_connection_holds(monkeypatch):
    """What made the old test fail: the local port of a connection, live or in TIME_WAIT, is not free."""
    with bound(ports.free_port()) as server:
        server.listen(1)
        client = socket.create_connection(server.getsockname())
        held = client.getsockname()[1]
        monkeypatch.setenv(ports.ENV, f"{held}-{held}")
        with pytest.raises(OSError, match="no free port"):
            ports.free_port()
        client.close()  # closed first: the port stays held (FIN-WAIT-2, then TIME_WAIT for 60 s)
        with pytest.raises(OSError, match="no free port"):
            ports.free_port()


def test_a_port_its_last_server_closed_connections_on_is_free_to_the_next(monkeypatch):
    """An operator's one-port range, the demo's server restarted within a minute: the old server closed
    its connections first, they wait out TIME_WAIT on its port; a server binding as SGLang and our
    simulated one do (SO_REUSEADDR) takes the port, so free_port must give it, not "no free port"."""
    first = _four_free_ports_of_this_worker(monkeypatch)
    old = ThreadingHTTPServer(("127.0.0.1", first), SimpleHTTPRequestHandler)  # allow_reuse_address
    threading.Thread(target=old.serve_forever, daemon=True).start()
    with socket.create_connection(("127.0.0.1", first)) as c:  # HTTP/1.0: the server closes first
        c.sendall(b"HEAD / HTTP/1.0\r\n\r\n")
        while c.recv(4096):
            pass
    old.shutdown()
    old.server_close()
    monkeypatch.setenv(ports.ENV, f"{first}-{first}")
    assert ports.free_port() == first
    ThreadingHTTPServer(("127.0.0.1", first), SimpleHTTPRequestHandler).server_close()  # and it binds


def test_a_range_that_is_not_low_high_is_said_and_ignored(monkeypatch, capsys):
    for bad in ("41000", "41003-41000", "80-90", "a-b"):
        monkeypatch.setenv(ports.ENV, bad)
        low, _high = ports.ephemeral_range()
        assert ports.FLOOR <= ports.free_port() < low
        assert f"EAGLE_CONSOLE_PORTS='{bad}' is not LOW-HIGH" in capsys.readouterr().err


def test_each_test_worker_draws_from_a_range_of_its_own():
    """Two workers' servers never draw one port: the slices do not overlap and stay below the kernel's
    range."""
    slices = [tuple(map(int, worker_ports(f"gw{i}", "6").split("-"))) for i in range(6)]
    assert all(slices[i][1] < slices[i + 1][0] for i in range(len(slices) - 1)), slices
    assert slices[0][0] == ports.FLOOR and slices[-1][1] < ports.ephemeral_range()[0]
    assert worker_ports(None, None) == f"{ports.FLOOR}-32767"


def test_a_demo_whose_range_is_all_taken_says_so_and_builds_nothing(monkeypatch, tmp_path: Path):
    """Every port of the operator's range listened on (a demo's server still up): said with what to do,
    exit 1, and before anything of the demo exists — it was "internal error: OSError", exit 2, after the
    node's GPUs, drafters and model were built."""
    first = _four_free_ports_of_this_worker(monkeypatch)
    with bound(first) as taken:
        taken.listen(1)
        env = {**os.environ, ports.ENV: f"{first}-{first}"}
        done = clikit.run(["demo", "--dir", tmp_path / "demo", "--no-tui"], env=env, timeout=60)
    assert done.returncode == 1, done.stderr
    assert f"no free port in EAGLE_CONSOLE_PORTS={first}-{first}" in done.stderr
    assert "ss -tanp" in done.stderr and "internal error" not in done.stderr
    assert not (tmp_path / "demo").exists()
