"""The Ray driver, out of the console's process (cluster/link.py asks it; cluster/keptdriver.py finds it).

Ray's client ends the process it lives in when it has lost the GCS for `gcs_rpc_server_reconnect_timeout_s`
(60 s: "Failed to connect to GCS within 60 seconds ... The program will terminate", `src/ray/rpc/
rpc_client.h`, Ray 2.60.0), and `ray.nodes()`, `JobSubmissionClient` and `ray.init` itself wait on a dead or
cut-off head without a deadline. So neither the console nor the CLI imports Ray: they ask this process named
questions, one JSON line each way over a Unix socket, each with a deadline kept on their side. Whatever Ray
does to this process (ends it, blocks it) the asker survives and says "head unreachable". Its stderr — Ray's
warnings ("SIGTERM handler is not set", reconnect chatter) — goes to a private log file, never a terminal.

    python -m eagle_console.cluster.driver ADDRESS --socket PATH --keep S
        the user's kept driver (cluster/keptdriver.py): serves every asker of this user that connects to
        PATH (the peer's uid, by SO_PEERCRED, must be ours), and exits after S seconds without one, when its
        head's GCS port refuses (the GCS is gone: a restarted head is a new cluster), when the port has been
        silent for LOST_S, or on SIGTERM — removing its socket first.
    python -m eagle_console.cluster.driver ADDRESS --fd N
        one asker's own driver (EAGLE_CONSOLE_RAY_KEEP_S=0): serves the socket it inherited as fd N and
        exits when that asker closes it.

Lines to an asker: {"id": -1, "pid": PID} at once on connecting (the asker knows this process is alive even
while `ray.init` runs), then {"id": 0, "ok": "ready"} or the connect's error, then one answer per request
{"id": N, "ok": ...} / {"id": N, "error", "kinds"}. Only the operations below are served (no code travels over
the socket). Each request runs in a thread of its own, so a blocked call does not hold the others up; each
Ray call is bounded here too (the request's timeout), so threads do not pile up.
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from eagle_console.cluster import driverserve as serve
from eagle_console.cluster.keptdriver import claim

READY_ID = 0  # {"id": 0, "ok": "ready"} once connected, or the connect's error
_connected = threading.Event()
_tl = threading.local()  # the request's timeout, for the Jobs API's HTTP calls
_server: serve.Server | None = None
_keep_s = 0.0


def _error(exc: BaseException) -> dict[str, Any]:
    """An exception as data: its message and its class names (the asker tells a timeout from a dead actor)."""
    return {"error": str(exc)[-4000:] or type(exc).__name__, "kinds": [c.__name__ for c in type(exc).__mro__]}


def _connect(address: str) -> None:
    import logging

    import ray

    from eagle_console.cluster import NAMESPACE

    # log_to_driver=False: the workers' output (our agents) is nobody's terminal
    ray.init(address=address, namespace=NAMESPACE, include_dashboard=False, log_to_driver=False,
             logging_level=logging.ERROR)


# -- the operations ------------------------------------------------------------------------------------------

def op_nodes(timeout: float) -> list[list[Any]]:
    """[name, node_id, address, alive] per eagle-node:NAME resource of every raylet the GCS knows."""
    import ray

    from eagle_console.cluster import node_names

    return [[name, n["NodeID"], n.get("NodeManagerAddress", "?"), bool(n.get("Alive"))]
            for n in ray.nodes() for name in node_names(n.get("Resources") or {})]


def op_agent(timeout: float, node: str, method: str, args: list[Any]) -> Any:
    """One call on node `node`'s NodeAgent (cluster/agent.py)."""
    import ray

    from eagle_console.cluster.agent import agent

    return ray.get(getattr(agent(node), method).remote(*args), timeout=timeout)


def op_agents(timeout: float, calls: dict[str, list[Any]], answer_s: float | None = None) -> dict[str, dict[str, Any]]:
    """The same question to several nodes' agents at once: node -> {"ok": value} or an error. A running
    agent has `answer_s` to answer (default: all of `timeout`); one this call had to start has all of
    `timeout`, its start included (a Ray worker starting on its node)."""
    import ray

    from eagle_console.cluster.agent import find_or_start

    started = time.monotonic()
    answer_s = timeout if answer_s is None else min(answer_s, timeout)
    out: dict[str, dict[str, Any]] = {}
    pending: dict[Any, str] = {}
    starting: set[str] = set()
    for node, (method, args) in calls.items():
        try:
            handle, started_now = find_or_start(node)
            if started_now:
                starting.add(node)
            pending[getattr(handle, method).remote(*args)] = node
        except Exception as exc:  # noqa: BLE001 - one node's failure is that node's answer
            out[node] = _error(exc)
    ready, _ = ray.wait(list(pending), num_returns=len(pending), timeout=answer_s) if pending else ([], [])
    late = [ref for ref, node in pending.items() if ref not in ready and node in starting]
    if late:  # agents still starting: the rest of the time is theirs
        left = max(0.0, timeout - (time.monotonic() - started))
        ready += ray.wait(late, num_returns=len(late), timeout=left)[0]
    for ref in ready:
        try:
            out[pending[ref]] = {"ok": ray.get(ref, timeout=0)}
        except Exception as exc:  # noqa: BLE001 - ActorDiedError, a worker crash
            out[pending[ref]] = _error(exc)
    for ref, node in pending.items():
        if ref not in ready:
            said = (f"its agent did not start and answer within {timeout:g}s" if node in starting
                    else f"no answer within {answer_s:g}s")
            out[node] = {"error": said, "kinds": ["GetTimeoutError"]}
            ray.cancel(ref, force=False)
    return out


def _jobs(address: str) -> Any:
    global _client
    if _client is None:
        from ray.job_submission import JobSubmissionClient

        class TimedClient(JobSubmissionClient):
            """Every Jobs API request with a deadline: `_do_request` forwards keyword arguments to
            `requests.request` (ray/dashboard/modules/dashboard_sdk.py, 2.60.0); Ray sets none, and a job's
            log served by a cut-off node's agent waited 5 minutes."""

            def _do_request(self, method: str, endpoint: str, **kwargs: Any) -> Any:
                kwargs.setdefault("timeout", getattr(_tl, "timeout", 10.0))
                return super()._do_request(method, endpoint, **kwargs)

        _client = TimedClient(address)
    return _client


_client: Any = None
_address = ""


def op_job(timeout: float, call: str, job_id: str = "", submit: dict[str, Any] | None = None) -> Any:
    """The Jobs API: info, status, logs, stop, submit."""
    client = _jobs(_address)
    if call == "info":
        info = client.get_job_info(job_id)
        return {"status": str(info.status.value), "message": info.message,
                "driver_exit_code": info.driver_exit_code}
    if call == "status":
        return str(client.get_job_status(job_id).value)
    if call == "logs":
        return client.get_job_logs(job_id)
    if call == "stop":
        return client.stop_job(job_id)
    if call == "submit":
        return client.submit_job(**(submit or {}))
    raise ValueError(f"no Jobs API call {call!r}")


def op_about(timeout: float) -> dict[str, Any]:
    """This driver: its pid, how many askers it has served, its address and keep time (tests, benchmarks)."""
    assert _server is not None
    return {"pid": os.getpid(), "accepted": _server.accepted, "address": _address, "keep_s": _keep_s}


OPS: dict[str, Callable[..., Any]] = {"nodes": op_nodes, "agent": op_agent, "agents": op_agents, "job": op_job,
                                      "about": op_about}


def _serve(conn: serve.Conn, request: dict[str, Any]) -> None:
    rid = request.get("id")
    timeout = float(request.get("timeout") or 10.0)
    if not _connected.wait(timeout):
        conn.send({"id": rid, "error": f"not connected to the cluster within {timeout:g}s", "kinds": ["ConnectTimeout"]})
        return
    _tl.timeout = timeout
    try:
        op = OPS[request["op"]]
        conn.send({"id": rid, "ok": op(timeout, **request.get("args", {}))})
    except BaseException as exc:  # noqa: BLE001 - every failure is the asker's answer
        conn.send({"id": rid, **_error(exc)})


def _polite_shutdown() -> None:
    """ray.shutdown, bounded: the GCS marks this driver's job finished (it may wait on a head gone bad)."""
    if not _connected.is_set():
        return
    import ray

    t = threading.Thread(target=ray.shutdown, daemon=True)
    t.start()
    t.join(5.0)


def main(argv: list[str] | None = None) -> int:
    global _address, _server, _keep_s
    ap = argparse.ArgumentParser(prog="python -m eagle_console.cluster.driver")
    ap.add_argument("address")
    way = ap.add_mutually_exclusive_group(required=True)
    way.add_argument("--fd", type=int, help="serve this inherited socket, exit when it closes")
    way.add_argument("--socket", type=Path, help="the kept driver's socket (its .lock and .log beside it)")
    ap.add_argument("--keep", type=float, default=300.0, help="with --socket: exit after this many s without an asker")
    args = ap.parse_args(sys.argv[1:] if argv is None else argv)
    _address, _keep_s = args.address, args.keep
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    sock_path, inode = None, 0

    def leave(why: str, code: int = 0, polite: bool = False) -> None:
        serve.log(serve.EXIT_MARK + why)
        if sock_path is not None:
            serve.remove_socket(sock_path, inode)  # first: a new asker starts a fresh driver instead of waiting on us
        if _server is not None and sock_path is not None:
            _server.close_all()
        if polite:
            _polite_shutdown()
        os._exit(code)  # no interpreter teardown: Ray's atexit hook may wait on a dead head

    if args.socket is not None:
        if claim(args.socket.with_suffix(".lock")) is None:
            return 0  # another driver serves this key: our asker connects to it
        os.ftruncate(2, 0)  # our log (opened O_APPEND by the asker): this driver's life only
        sock_path = args.socket
        listener, inode = serve.listen(sock_path)
        _server = serve.Server(_serve)
        threading.Thread(target=serve.accept, args=(listener, _server), daemon=True, name="accept").start()
        serve.log(f"serving {_address} on {sock_path}, for uid {os.getuid()}, until {_keep_s:g}s without an asker")
    else:
        _server = serve.Server(_serve, on_end=lambda conn: os._exit(0))  # our one asker is gone: so are we
        _server.add(socket.socket(fileno=args.fd))
    signal.signal(signal.SIGTERM, lambda *_: leave("stopped (SIGTERM)", polite=True))
    try:  # in the main thread: Ray sets its signal handlers there
        _connect(_address)
    except BaseException as exc:  # noqa: BLE001 - said to every asker, then this process is done
        _server.connected({"id": READY_ID, **_error(exc)})
        time.sleep(0.2)  # the askers read it before the socket goes
        leave(f"cannot connect: {str(exc).splitlines()[-1][:300] if str(exc) else type(exc).__name__}", 3)
    _connected.set()
    signal.signal(signal.SIGTERM, lambda *_: leave("stopped (SIGTERM)", polite=True))  # ours, not Ray's
    _server.connected({"id": READY_ID, "ok": "ready"})
    if sock_path is None:
        while True:
            time.sleep(3600)  # until our asker closes the socket (or Ray ends this process)
    serve.watch(_server, _address, _keep_s, leave)
    return 0


if __name__ == "__main__":
    sys.exit(main())
