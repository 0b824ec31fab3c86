"""The Ray driver, out of the console's process: `python -m eagle_console.cluster.driver ADDRESS`.

Ray's client ends the process it lives in when it has lost the GCS for `gcs_rpc_server_reconnect_timeout_s`
(60 s: "Failed to connect to GCS within 60 seconds ... The program will terminate", `src/ray/rpc/
rpc_client.h`, Ray 2.60.0), and `ray.nodes()`, `JobSubmissionClient` and `ray.init` itself wait on a dead or
cut-off head without a deadline. So neither the console nor the CLI imports Ray: they start this process
(cluster/link.py) and ask it named questions, one JSON line each way over its stdin/stdout, each with a
deadline kept on their side. Whatever Ray does to this process (ends it, blocks it) the asker survives and
says "head unreachable". Its stderr — Ray's warnings ("SIGTERM handler is not set", reconnect chatter) — goes
to a private log file, never the terminal of the console.

Only the operations below are served (no code travels over the pipe). Each request runs in a thread of its
own, so a blocked call does not hold the others up; each Ray call is bounded here too (the request's
timeout), so threads do not pile up. When the asker goes away (stdin closed) this process exits at once.
"""

from __future__ import annotations

import json
import os
import sys
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

READY_ID = 0  # the first line: {"id": 0, "ok": "ready"} once connected, or the connect's error
_out_lock = threading.Lock()
_connected = threading.Event()
_tl = threading.local()  # the request's timeout, for the Jobs API's HTTP calls


def _reply(message: dict[str, Any]) -> None:
    line = json.dumps(message, default=str) + "\n"
    with _out_lock:
        sys.stdout.write(line)
        sys.stdout.flush()


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


def op_agents(timeout: float, calls: dict[str, list[Any]]) -> dict[str, dict[str, Any]]:
    """The same question to several nodes' agents at once: node -> {"ok": value} or an error."""
    import ray

    from eagle_console.cluster.agent import agent

    out: dict[str, dict[str, Any]] = {}
    pending: dict[Any, str] = {}
    for node, (method, args) in calls.items():
        try:
            pending[getattr(agent(node), method).remote(*args)] = node
        except Exception as exc:  # noqa: BLE001 - one node's failure is that node's answer
            out[node] = _error(exc)
    ready, _ = ray.wait(list(pending), num_returns=len(pending), timeout=timeout) if pending else ([], [])
    for ref in ready:
        try:
            out[pending[ref]] = {"ok": ray.get(ref, timeout=0)}
        except Exception as exc:  # noqa: BLE001 - ActorDiedError, a worker crash
            out[pending[ref]] = _error(exc)
    for ref, node in pending.items():
        if ref not in ready:
            out[node] = {"error": f"no answer within {timeout:g}s", "kinds": ["GetTimeoutError"]}
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


OPS: dict[str, Callable[..., Any]] = {"nodes": op_nodes, "agent": op_agent, "agents": op_agents, "job": op_job}


def _serve(request: dict[str, Any]) -> None:
    rid = request.get("id")
    timeout = float(request.get("timeout") or 10.0)
    if not _connected.wait(timeout):
        _reply({"id": rid, "error": f"not connected to the cluster within {timeout:g}s", "kinds": ["ConnectTimeout"]})
        return
    _tl.timeout = timeout
    try:
        op = OPS[request["op"]]
        _reply({"id": rid, "ok": op(timeout, **request.get("args", {}))})
    except BaseException as exc:  # noqa: BLE001 - every failure is the asker's answer
        _reply({"id": rid, **_error(exc)})


def main(argv: list[str] | None = None) -> int:
    global _address
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m eagle_console.cluster.driver ADDRESS", file=sys.stderr)
        return 2
    _address = args[0]
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")

    def read_requests() -> None:
        pool = ThreadPoolExecutor(max_workers=16, thread_name_prefix="ask")
        for line in sys.stdin:
            try:
                request = json.loads(line)
            except ValueError:
                continue
            pool.submit(_serve, request)
        os._exit(0)  # the asker is gone: no ray.shutdown, which may itself wait on a dead head

    threading.Thread(target=read_requests, daemon=True, name="requests").start()
    try:  # in the main thread: Ray sets its signal handlers there
        _connect(_address)
    except BaseException as exc:  # noqa: BLE001 - said to the asker, then this process is done
        _reply({"id": READY_ID, **_error(exc)})
        os._exit(3)
    _connected.set()
    _reply({"id": READY_ID, "ok": "ready"})
    threading.Event().wait()  # serve until the asker closes stdin (or Ray ends this process)
    return 0


if __name__ == "__main__":
    sys.exit(main())
