"""The service process of a multi-node `sglang.server`: starts one rank per node, watches them, stops them.

    python -m eagle_console.sglang.multinode_run --launch JSON

The supervisor runs this in place of a single server (the built-in execs it), so rollback's SIGTERM of
the service reaches it: it then stops every rank through the NodeRunner. Rank 0's output is copied to
stdout (the step log: the server pane and `ready.log` read it); every rank's output is in its own file,
listed with the ranks in `<artifacts>/ranks.json` (undo stops them from that record if this process was
killed before it could). When one rank ends by itself, the others are stopped and this exits 1: SGLang's
rank 0 does not exit when another node's rank dies (sglang#3099), it would keep answering /health.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import threading
from dataclasses import replace
from pathlib import Path

from eagle_console.sglang.noderunner import NodeRunner, RankProcess, runner_from_env

RANKS_FILE = "ranks.json"
STOP_GRACE_S = 10.0
POLL_S = 0.25
CHUNK = 1 << 20  # bytes of rank 0's log copied per poll at most


def say(message: str) -> None:
    print(f"[eagle-console] {message}", flush=True)


def save_ranks(artifacts: Path, ranks: list[RankProcess]) -> None:
    from eagle_console.statedir import private_dirs, write_private

    private_dirs(artifacts)
    tmp = artifacts / f".{RANKS_FILE}.tmp"
    tmp.unlink(missing_ok=True)
    write_private(tmp, json.dumps([r.to_json() for r in ranks]))
    tmp.replace(artifacts / RANKS_FILE)


def load_ranks(artifacts: Path) -> list[RankProcess]:
    from eagle_console.inputfile import STATE_CAP, load_json

    try:  # bounded, regular file only (InputFileError is a ValueError): a FIFO planted here cannot hang a reader
        return [RankProcess.from_json(r) for r in load_json(artifacts / RANKS_FILE, STATE_CAP)]
    except (ValueError, KeyError, TypeError):
        return []


def record_sessions(runner: NodeRunner, ranks: list[RankProcess]) -> bool:
    """Put each rank's session ({"pid", "ctime"} of its leader on its node) in its `ref` once the runner knows
    it (a Ray rank: from its job's log; the local runner's ref has it from the start): the console tracks the
    rank's processes on its node by that session (node/tracked.py). True when a rank gained one."""
    changed = False
    for i, r in enumerate(ranks):
        if r.ref.get("pid"):
            continue
        found = runner.session(r)
        if found:
            ranks[i] = replace(r, ref={**r.ref, "pid": found["pid"], "ctime": found.get("ctime")})
            changed = True
    return changed


def stop_all(runner: NodeRunner, ranks: list[RankProcess], grace_s: float) -> None:
    """Stop every rank at once (one thread each): a rank stopped late holds the others in their collectives."""
    threads = [threading.Thread(target=runner.stop, args=(r, grace_s)) for r in ranks]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


class LogCopy:
    """Copies what a rank's log file gained since the last call to our stdout."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.offset = 0

    def pump(self) -> None:
        try:
            with open(self.path, "rb") as f:
                f.seek(self.offset)
                data = f.read(CHUNK)
        except OSError:
            return
        if data:
            self.offset += len(data)
            sys.stdout.buffer.write(data)
            sys.stdout.buffer.flush()


def watch(runner: NodeRunner, ranks: list[RankProcess], artifacts: Path, stop: threading.Event,
          copy: LogCopy) -> tuple[RankProcess, int] | None:
    """Until a rank ends (that rank and its code) or `stop` is set (None). While the runner cannot ask about
    the ranks (the Ray head unreachable) they are not taken for ended: it is said once, and once more when
    the runner can ask again."""
    unwatched = False  # said on a change only: the problem's text names whichever rank was asked last
    while not stop.wait(POLL_S):
        copy.pump()
        for r in ranks:
            code = runner.poll(r)
            if code is not None:
                return r, code
        if (runner.problem is not None) != unwatched:
            unwatched = runner.problem is not None
            if unwatched:
                say(f"RANKS_UNWATCHED: {runner.problem}; the ranks run on as far as anyone knows: "
                    "not taken for ended, rank 0's log not copied, until the cluster answers")
            else:
                say("the cluster answers again: the ranks are watched")
        if record_sessions(runner, ranks):
            save_ranks(artifacts, ranks)
    return None


def run(launches: list[dict], artifacts: Path, grace_s: float, runner: NodeRunner) -> int:
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    ranks: list[RankProcess] = []
    logs_dir = artifacts / "ranks"
    for launch in sorted(launches, key=lambda r: r["rank"]):  # rank 0 first: it hosts the dist-init address
        node, rank = launch["node"], int(launch["rank"])
        say(f"rank {rank} on node {node}: {' '.join(launch['argv'])}")
        ranks.append(runner.start(node, rank, launch["argv"], {}, logs_dir / f"rank{rank}-{node}.log"))
        save_ranks(artifacts, ranks)
        if stop.is_set():
            break
    copy = LogCopy(Path(ranks[0].log))
    ended = watch(runner, ranks, artifacts, stop, copy)
    copy.pump()
    if ended is None:
        say(f"stopping {len(ranks)} ranks on nodes {', '.join(r.node for r in ranks)}")
        stop_all(runner, ranks, grace_s)
        copy.pump()
        unknown = [r for r in ranks if runner.poll(r) is None and runner.problem]
        if unknown:  # the rollback's undo asks again and fails while it cannot tell
            say(f"not known to have stopped: {', '.join(f'rank {r.rank} on node {r.node}' for r in unknown)} "
                f"({runner.problem})")
        return 0
    dead, code = ended
    say(f"RANK_EXITED: rank {dead.rank} on node {dead.node} exited ({code}); stopping the other ranks — "
        "SGLang's rank 0 does not exit when another node's rank dies (sglang#3099)")
    stop_all(runner, ranks, grace_s)  # the dead rank's too: its schedulers outlive their launcher
    copy.pump()
    return 1


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="eagle_console.sglang.multinode_run")
    ap.add_argument("--launch", required=True, help="JSON: {launches: [{node, rank, argv}], artifacts, grace_s}")
    args = ap.parse_args(argv)
    from eagle_console.pyenv import forget_own_entry

    forget_own_entry()  # the ranks get the operator's PYTHONPATH, not ours
    spec = json.loads(args.launch)
    try:
        runner = runner_from_env()
    except Exception as exc:  # the runner's own failure (a cluster unreachable): one clear line
        say(f"no node runner: {exc}")
        return 1
    return run(spec["launches"], Path(spec["artifacts"]), float(spec.get("grace_s", STOP_GRACE_S)), runner)


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    sys.exit(main())
