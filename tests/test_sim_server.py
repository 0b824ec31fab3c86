"""The simulated SGLang server: real processes, real signals, real HTTP on 127.0.0.1, real sim GPU state."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import httpkit
import psutil
import pytest

from eagle_console.ports import free_port
from eagle_console.processes import open_live
from eagle_console.sglang.client import SglangClient, accept_length_from_info
from eagle_console.sim import gpustate
from eagle_console.sim.server_logs import nccl_lines

SPEC_FLAGS = ["--speculative-algorithm", "EAGLE3", "--speculative-draft-model-path", "/models/k25-eagle3",
              "--speculative-num-steps", "3", "--speculative-eagle-topk", "1", "--speculative-num-draft-tokens", "4"]



@dataclass
class SimServer:
    proc: subprocess.Popen
    url: str
    log: Path
    sim: Path

    def text(self) -> str:
        return self.log.read_text()

    def session_pids(self) -> list[int]:
        out = []
        for p in psutil.process_iter():
            try:
                if os.getsid(p.pid) == self.proc.pid:
                    out.append(p.pid)
            except OSError:
                continue
        return out

    def cleanup(self) -> None:
        """Kill every process of the server's session (launcher, schedulers, orphans) and reap them."""
        procs = open_live(self.session_pids())
        for proc in procs:
            try:
                proc.send_signal(signal.SIGKILL)
            except psutil.NoSuchProcess:
                pass
        if self.proc.poll() is None:
            self.proc.wait(timeout=10)
        psutil.wait_procs(procs, timeout=10)


def start_server(tmp: Path, tp: int = 2, spec: bool = True, extra: list[str] | None = None,
                 env: dict[str, str] | None = None) -> SimServer:
    sim = tmp / "sim"
    if not (sim / "node.json").exists():
        gpustate.create_node(sim)
    port = free_port()
    log = tmp / f"server-{port}.log"
    argv = [sys.executable, "-m", "eagle_console.sim.sglang_server", "-m", "sglang.launch_server",
            "--model-path", "/models/Kimi-K2.5", "--tp-size", str(tp), "--port", str(port),
            "--trust-remote-code", "--disable-custom-all-reduce", "--decode-log-interval", "5",
            *(SPEC_FLAGS if spec else []), *(extra or [])]
    full_env = {**os.environ, "EAGLE_CONSOLE_SIM": str(sim), "EAGLE_SIM_STARTUP_S": "0.6"}
    if tp < 8:  # Kimi-K2.5 does not fit 2 cards: a smaller model for the small-tp tests
        full_env["EAGLE_SIM_WEIGHTS_GIB"] = "100"
    full_env.update(env or {})
    with open(log, "wb") as out:
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, env=full_env, start_new_session=True)
    return SimServer(proc, f"http://127.0.0.1:{port}", log, sim)


def wait_ready(server: SimServer, limit_s: float = 60.0) -> list[int | None]:
    """Poll /health until 200; returns the statuses seen (None: nothing listening yet)."""
    seen: list[int | None] = []
    client = SglangClient(server.url, timeout=5)
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        status = client.health()
        if not seen or seen[-1] != status:
            seen.append(status)
        if status == 200:
            return seen
        assert server.proc.poll() is None, server.text()
        time.sleep(0.05)
    raise AssertionError(f"server not ready; statuses {seen}\n{server.text()}")


def wait_gone(pids: list[int], limit_s: float = 20.0) -> None:
    procs = open_live(pids)
    _gone, alive = psutil.wait_procs(procs, timeout=limit_s)
    alive = [p for p in alive if p.status() != psutil.STATUS_ZOMBIE]
    assert not alive, f"still running: {alive}"


@pytest.fixture(scope="module")
def tp8(tmp_path_factory):
    server = start_server(tmp_path_factory.mktemp("tp8"), tp=8)
    try:
        statuses = wait_ready(server)
        server.statuses = statuses  # type: ignore[attr-defined]
        yield server
    finally:
        server.cleanup()


def test_http_is_closed_until_the_schedulers_are_ready_then_200(tp8):
    # SGLang starts uvicorn only once every scheduler reported ready: until then, connection refused
    assert tp8.statuses[0] is None and tp8.statuses[-1] == 200
    assert set(tp8.statuses) <= {None, 503, 200}


def test_processes_titles_group_and_gpu_memory(tp8):
    launcher = psutil.Process(tp8.proc.pid)
    children = launcher.children()
    titles = sorted(c.cmdline()[0] for c in children)
    assert titles == sorted([f"sglang::scheduler_TP{r}" for r in range(8)] + ["sglang::detokenizer"])
    assert {os.getpgid(c.pid) for c in children} == {os.getpgid(launcher.pid)}
    held = {h.pid: h for h in gpustate.holders(tp8.sim)}
    schedulers = [c for c in children if "scheduler" in c.cmdline()[0]]
    assert sorted(held) == sorted(c.pid for c in schedulers)  # the detokenizer holds nothing
    gpus = sorted(g for h in held.values() for g in h.mib)
    assert gpus == list(range(8))
    for h in held.values():
        (mib,) = h.mib.values()
        assert 70_000 < mib < 85_000  # ≈78 GB of weights + KV cache + graphs on a 96 GB card
        assert h.command.startswith("sglang::scheduler_TP")


def test_log_has_sglang_and_nccl_lines_for_every_rank(tp8):
    # SGLang marks the server Up before it logs "fired up" (http_server._wait_and_warmup): /health can
    # answer 200 an instant before the line is written, so wait for it rather than read at once
    deadline = time.monotonic() + 10
    while "The server is fired up" not in tp8.text() and time.monotonic() < deadline:
        time.sleep(0.05)
    text = tp8.text()
    # SGLang 0.5.23's dump is a dict (entrypoints/engine.py:311), with its per-phase CUDA-graph fields
    assert "server_args={'model_path': '/models/Kimi-K2.5'" in text and "'cuda_graph_max_bs_decode': None" in text
    assert text.count("- Init COMPLETE") == 8
    assert text.count("NCCL version 2.28.9+cuda13.0") == 8
    for rank in range(8):
        assert "ncclCommInitRankConfig comm 0x" in text and f" rank {rank} nranks 8 cudaDev {rank}" in text
        assert f"[{rank}] NCCL INFO comm " in text and f"localRanks 8 localRank {rank} MNNVL 0" in text
    # PCIe node: P2P inside a switch pair, SHM across the host bridge
    assert "Channel 00/0 : 0[0] -> 1[1] via P2P/IPC" in text
    assert "Channel 00 : 1[1] -> 2[2] via SHM/direct/direct" in text
    assert "NCCL_CUMEM_ENABLE set by environment to 0" in text
    for stage in ("Load weight end.", "KV Cache is allocated. dtype: torch.bfloat16, #tokens:",
                  "Capture target verify CUDA graph begin. backend=full", "Capture target verify CUDA graph end. bs=",
                  "Loading safetensors checkpoint shards: 100% Completed | 64/64",
                  "Uvicorn running on http://127.0.0.1:", "The server is fired up and ready to roll!"):
        assert stage in text, stage
    assert text.index("Capture target verify CUDA graph end.") < text.index("The server is fired up and ready to roll!")
    from eagle_console.parse.sglang_log import summarize  # the parser reads the 0.5.23 format it writes

    names = [s["name"] for s in summarize(text.splitlines())["stages"]]
    assert {"KV cache", "CUDA graph capture begin", "CUDA graph capture", "ready"} <= set(names)
    assert "[2026" in text or "[20" in text
    assert "-m sglang.launch_server" not in text.split("server_args=", 1)[0]
    assert "flags with no effect here: --trust-remote-code" not in text  # a flag the sim does read


def test_log_has_no_python_tracebacks_after_client_traffic(tp8):
    from eagle_console.sglang.bench import run_bench

    run_bench(tp8.url, requests=2, max_new_tokens=8)
    assert "Traceback" not in tp8.text()


def test_generate_plain_and_streamed(tp8):
    with SglangClient(tp8.url) as c:
        plain = c.generate("The capital city of France is", max_new_tokens=24)
        chunks = list(c.stream_generate("Count to ten:", max_new_tokens=30))
    meta = plain["meta_info"]
    assert meta["completion_tokens"] == 24 == len(plain["output_ids"])
    assert meta["prompt_tokens"] > 0 and meta["finish_reason"]["type"] == "length"
    assert 1 <= meta["spec_verify_ct"] < 24
    assert len(chunks) >= 2
    counts = [ch.completion_tokens for ch in chunks]
    assert counts == sorted(counts) and counts[-1] == 30
    assert len(chunks[-1].data["output_ids"]) == 30  # cumulative
    assert "spec_verify_ct" in chunks[-1].meta and "spec_verify_ct" not in chunks[0].meta
    assert chunks[-1].data["text"].startswith(chunks[0].data["text"])
    # the raw stream is SSE ending in [DONE]
    body = {"text": "hi", "stream": True, "sampling_params": {"max_new_tokens": 5}}
    raw = httpkit.post(f"{tp8.url}/generate", json=body, timeout=30).text
    events = [e for e in raw.split("\n\n") if e]
    assert all(e.startswith("data: ") for e in events) and events[-1] == "data: [DONE]"


def test_info_endpoints_and_decode_lines(tp8):
    with SglangClient(tp8.url) as c:
        c.generate("warm", max_new_tokens=40)
        info = c.server_info()
        model = c.model_info()
        assert c.flush_cache()
    accept = accept_length_from_info(info)
    assert accept is not None and 1.0 <= accept <= 4.0  # includes the bonus token: 1..num_steps+1
    assert info["internal_states"][0]["avg_spec_accept_length"] == accept
    assert info["tp_size"] == 8 and info["speculative_algorithm"] == "EAGLE3"
    assert model["model_path"] == "/models/Kimi-K2.5" and model["is_generation"] is True
    models = httpkit.get(f"{tp8.url}/v1/models").json()
    assert models["data"][0]["id"] == "/models/Kimi-K2.5"
    assert httpkit.get(f"{tp8.url}/nope").status_code == 404
    decode = [ln for ln in tp8.text().splitlines() if "Decode batch" in ln]
    assert decode and all(" TP0] Decode batch, #running-req: " in ln and "accept len: " in ln for ln in decode)
    assert "gen throughput (token/s): " in decode[-1]
    from eagle_console.parse.sglang_log import SglangLogParser

    parser = SglangLogParser()
    parser.feed(tp8.text().splitlines())
    assert "bonus token excluded" in parser.accept_rate_definition()  # 0.5.23's definition, read as such
    assert 0.0 <= parser.decode.accept_rate <= 1.0


def test_without_speculation_no_accept_length(tmp_path):
    server = start_server(tmp_path, tp=2, spec=False)
    try:
        wait_ready(server)
        with SglangClient(server.url) as c:
            out = c.generate("hello", max_new_tokens=12)
            assert c.accept_length() is None
        assert out["meta_info"]["completion_tokens"] == 12 and "spec_verify_ct" not in out["meta_info"]
        decode = [ln for ln in server.text().splitlines() if "Decode batch" in ln]
        assert decode and not any("accept len" in ln for ln in decode)
        assert "[2" in decode[0] and " TP0] " in decode[0]
    finally:
        server.cleanup()


def test_sigkill_of_launcher_leaves_schedulers_holding_memory(tmp_path):
    server = start_server(tmp_path, tp=2)
    try:
        wait_ready(server)
        launcher = psutil.Process(server.proc.pid)
        schedulers = [c.pid for c in launcher.children() if "scheduler" in c.cmdline()[0]]
        assert len(schedulers) == 2
        os.kill(launcher.pid, signal.SIGKILL)
        server.proc.wait(timeout=10)
        for pid in schedulers:
            p = psutil.Process(pid)
            assert p.is_running() and p.status() != psutil.STATUS_ZOMBIE
            assert p.ppid() != launcher.pid  # reparented to PID 1 or the subreaper
        held = {h.pid for h in gpustate.holders(server.sim)}
        assert set(schedulers) <= held
        # the group still reaches them: SIGTERM of the group frees all their memory
        os.killpg(os.getpgid(schedulers[0]), signal.SIGTERM)
        wait_gone(schedulers)
        assert not gpustate.holders(server.sim)
    finally:
        server.cleanup()


def test_sigterm_of_launcher_stops_children_and_frees_memory(tmp_path):
    server = start_server(tmp_path, tp=2)
    try:
        wait_ready(server)
        children = [c.pid for c in psutil.Process(server.proc.pid).children()]
        assert len(children) == 3
        server.proc.send_signal(signal.SIGTERM)
        assert server.proc.wait(timeout=20) == 0
        wait_gone(children)
        assert not gpustate.holders(server.sim)
    finally:
        server.cleanup()


def test_model_too_big_for_the_cards_fails_like_sglang(tmp_path):
    server = start_server(tmp_path, tp=1, spec=False, env={"EAGLE_SIM_WEIGHTS_GIB": "580"})
    try:
        assert server.proc.wait(timeout=30) == 1
        text = server.text()
        assert "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static." in text
        assert "Received sigquit from a child process." in text
    finally:
        server.cleanup()


def test_nccl_env_overrides_pick_transports():
    devs = list(range(8))
    default = "\n".join(nccl_lines(3, 8, devs, {"NCCL_CUMEM_ENABLE": "0"}, "0x1", "0x2"))
    assert "3[3] -> 4[4] via SHM/direct/direct" in default
    off = "\n".join(ln for r in range(8) for ln in nccl_lines(r, 8, devs, {"NCCL_P2P_DISABLE": "1",
                                                                          "NCCL_PROTO": "Simple"}, "0x1", "0x2"))
    assert "via P2P" not in off and off.count("via SHM/direct/direct") == 16
    assert "NCCL_P2P_DISABLE set by environment to 1" in off and "NCCL_PROTO set by environment to Simple" in off
    sys_level = "\n".join(ln for r in range(8) for ln in nccl_lines(r, 8, devs, {"NCCL_P2P_LEVEL": "SYS",
                                                                                "NCCL_CUMEM_ENABLE": "1"}, "0x1", "0x2"))
    assert "via SHM" not in sys_level and sys_level.count("via P2P/CUMEM") == 16
    assert sys_level.count("Channel 00/02 : 0 1 2 3 4 5 6 7") == 1  # the ring, printed by rank 0 only


def test_nccl_lines_match_nccl_prefix_format():
    # the generic line regex of reference/nccl-logs.md (from nccl:src/debug.cc)
    import re

    rx = re.compile(r"^(?:\[(?P<ts>[^\]]*)\] )?(?P<host>[^:\s]+):(?P<pid>\d+):(?P<tid>\d+) (?:\[(?P<dev>\d+)\] )?"
                    r"(?:(?P<file>\S+):(?P<line>\d+) (?:\((?P<func>[^)]*)\) )?)?NCCL (?P<lvl>INFO|WARN|TRACE|CALL) "
                    r"(?P<msg>.*)$")
    lines = nccl_lines(5, 8, list(range(8)), {}, "0x1", "0x2")
    assert all(rx.match(ln) and rx.match(ln)["dev"] == "5" for ln in lines)
    assert any(ln.endswith("busId 9c000 commId 0x2 - Init COMPLETE") for ln in lines)


def test_bad_flag_value_is_one_line_and_exit_2():
    out = subprocess.run([sys.executable, "-m", "eagle_console.sim.sglang_server", "--tp-size", "x"],
                         capture_output=True, text=True, timeout=30)
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert out.stderr.strip().splitlines() == [
        "sglang_server (simulated): bad arguments: argument --tp-size/--tensor-parallel-size/--tp: "
        "invalid int value: 'x'"]


def test_unknown_flag_is_refused_and_abbreviations_are_accepted_as_argparse_does(tmp_path):
    from eagle_console.sim.server_config import parse_server_args

    out = subprocess.run([sys.executable, "-m", "eagle_console.sim.sglang_server", "--model-path", "m",
                          "--no-such-flag", "1"], capture_output=True, text=True, timeout=30)
    assert out.returncode == 2 and "unrecognized arguments: --no-such-flag 1" in out.stderr
    cfg = parse_server_args(["-m", "sglang.launch_server", "--model-p", "/m", "--por", "30001", "--tp", "4",
                             "--speculative-algo", "EAGLE3", "--num-continuous-decode-steps", "4"])
    assert (cfg.model_path, cfg.port, cfg.tp_size, cfg.speculative_algorithm) == ("/m", 30001, 4, "EAGLE3")
    assert cfg.ignored == ["--num-continuous-decode-steps"]
    with pytest.raises(ValueError, match="ambiguous option: --speculative-num"):
        parse_server_args(["--speculative-num", "3"])
    with pytest.raises(ValueError, match="need --speculative-num-steps"):
        parse_server_args(["--speculative-algorithm", "EAGLE3", "--speculative-eagle-topk", "1"])


def test_eagle_with_an_eagle3_drafter_accepts_nothing(tmp_path):
    draft = tmp_path / "k25-eagle3"
    draft.mkdir()
    (draft / "config.json").write_text('{"architectures": ["LlamaForCausalLMEagle3"], "eagle_config": {}}')
    flags = ["--speculative-algorithm", "EAGLE", "--speculative-draft-model-path", str(draft),
             "--speculative-num-steps", "3", "--speculative-eagle-topk", "1", "--speculative-num-draft-tokens", "4"]
    server = start_server(tmp_path, tp=2, spec=False, extra=flags)
    try:
        wait_ready(server)
        with SglangClient(server.url) as c:
            out = c.generate("hello", max_new_tokens=20)
            assert c.accept_length() == 1.0
        assert out["meta_info"]["spec_verify_ct"] == 19  # every verify step keeps only its bonus token
    finally:
        server.cleanup()


def test_continuous_decode_steps_change_nothing(tmp_path):
    from eagle_console.sim.server_config import parse_server_args
    from eagle_console.sim.server_http import SimEngine

    plain = SimEngine(parse_server_args(["--model-path", "m"]), None, [0])
    tuned = SimEngine(parse_server_args(["--model-path", "m", "--num-continuous-decode-steps", "4"]), None, [0])
    plain.rng.seed(7)
    tuned.rng.seed(7)
    assert [plain.step_time() for _ in range(5)] == [tuned.step_time() for _ in range(5)]


def test_port_refuses_connections_while_the_schedulers_load(tmp_path):
    server = start_server(tmp_path, tp=2, spec=False, env={"EAGLE_SIM_STARTUP_S": "4"})
    try:
        deadline = time.monotonic() + 30
        while "Load weight begin" not in server.text():
            assert time.monotonic() < deadline and server.proc.poll() is None, server.text()
            time.sleep(0.05)
        assert SglangClient(server.url, timeout=5).health() is None  # not 503: nothing listens yet
        assert wait_ready(server)[-1] == 200
    finally:
        server.cleanup()
