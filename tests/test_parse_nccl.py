"""NCCL log summary on real logs: the H200 fixture and excerpts from public issues (tests/data/nccl/SOURCE.md)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import clikit

from eagle_console.parse.nccl import NcclParser, format_bus_id, nccl_lines, summarize
from eagle_console.parse.nccl_matrix import format_matrix, transport_matrix

DATA = Path(__file__).parent / "data" / "nccl"
SGLANG = Path(__file__).parent / "data" / "sglang"
ROOT = Path(__file__).parent.parent


def lines(name: str) -> list[str]:
    return (DATA / name).read_text(encoding="utf-8").splitlines()


def codes(summary: dict) -> dict[str, str]:
    return {f["code"]: f["severity"] for f in summary["findings"]}


def test_h200_fixture_single_rank() -> None:
    s = summarize(lines("h200_single_rank_2.28.9.txt"))
    assert s["version"] == "2.28.9+cuda13.0"
    assert s["ranks"] == 1 and s["init_complete"] == 1
    assert s["hosts"] == ["vm"]
    # busId 60 printed by NCCL is PCI 0000:00:06.0, the path the same log shows under /sys/devices.
    assert s["devices"] == [{"rank": 0, "cuda_dev": 0, "bus_id": "0000:00:06.0"}]
    assert s["transports"] == {"P2P": 0, "SHM": 0, "NET": 0, "COLLNET": 0}
    assert s["pairs"] == [] and s["warnings"] == [] and s["findings"] == []
    assert set(s) == {"version", "ranks", "init_complete", "hosts", "devices", "transports", "transport_pairs",
                      "pairs", "env", "warnings", "findings"}


def test_old_hex_busid_layout_multi_host() -> None:
    s = summarize(lines("nccl634_multihost_hexbusid.txt"))
    assert s["hosts"] == ["gcn15", "gcn14", "gcn13"]
    # 14 NET lines, 12 connections: ch05 3→4 and 7→8 are logged by both ends ([send] and [receive])
    assert s["transports"]["NET"] == 12
    buses = {d["rank"]: d["bus_id"] for d in s["devices"]}
    assert buses[7] == "0000:e3:00.0" and buses[8] == "0000:31:00.0" and buses[10] == "0000:ca:00.0"
    assert {"src": 7, "dst": 8, "transport": "NET", "detail": "ch05 NET/Socket/0 [receive]"} in s["pairs"]
    # different hosts: NET is the right transport, nothing to report
    assert "NET_INTRA_NODE" not in codes(s)


def test_nvmldev_layout_p2p_ipc_read() -> None:
    s = summarize(lines("nccl952_p2p_ipc_read.txt"))
    assert s["transports"]["P2P"] == 14 and s["transports"]["NET"] == 2
    p = [x for x in s["pairs"] if x["src"] == 8 and x["dst"] == 15]
    assert len(p) == 7 and all(x["detail"].endswith("P2P/IPC/read") for x in p)
    # nvmlDev numbers are not bus ids: no bus id invented
    assert all(d["bus_id"] is None for d in s["devices"])
    # rank 6's host is not in this one-host excerpt: NET 15→6 is not called intra-node
    assert "NET_INTRA_NODE" not in codes(s)


def test_shm_fallback_and_interleaved_processes() -> None:
    s = summarize(lines("nccltests166_shm_net.txt"))
    assert s["transports"] == {"P2P": 0, "SHM": 7, "NET": 8, "COLLNET": 0}
    shm = {(p["src"], p["dst"]) for p in s["pairs"] if p["transport"] == "SHM"}
    assert shm == {(4, 5), (5, 6), (6, 7), (11, 12), (13, 14)}
    # channels above, GPU pairs here: the findings' unit (issue 32: `SHM 7` beside "5 GPU pair(s)")
    assert s["transport_pairs"] == {"P2P": 0, "SHM": 5, "NET": 1, "COLLNET": 0}
    assert codes(s)["SHM_FALLBACK"] == "warning"  # version unknown: cannot call it normal


def test_shm_fallback_is_info_on_new_nccl() -> None:
    text = ["NCCL version 2.27.3+cuda12.9", *lines("nccltests166_shm_net.txt")]
    s = summarize(text)
    f = next(f for f in s["findings"] if f["code"] == "SHM_FALLBACK")
    assert f["severity"] == "info" and "2.23" in f["message"] and "host bridge" in f["message"]
    old = summarize(["NCCL version 2.18.1+cuda12.1", *lines("nccltests166_shm_net.txt")])
    assert codes(old)["SHM_FALLBACK"] == "warning"


def test_cumem_and_ib_with_topology_line() -> None:
    s = summarize(lines("nccl1189_cumem_ib.txt"))
    assert s["ranks"] == 4
    assert s["transports"]["P2P"] == 5 and s["transports"]["NET"] == 9
    assert {p["detail"] for p in s["pairs"] if p["transport"] == "P2P"} >= {"ch00 P2P/CUMEM"}
    ranks, grid = transport_matrix(s)
    assert ranks == [0, 1, 2, 3]
    assert grid[1][0] == "P2P" and grid[0][2] == "NET" and grid[0][1] is None
    # nNodes 2: NET between the two hosts is expected
    assert "NET_INTRA_NODE" not in codes(s)
    assert codes(s)["INIT_INCOMPLETE"] == "warning"


def test_init_complete_new_and_old_forms() -> None:
    s = summarize(lines("nccl1412_init_complete_2.21.txt"))
    assert s["ranks"] == 16 and s["init_complete"] == 5
    assert {d["rank"]: d["bus_id"] for d in s["devices"]}[6] == "0000:c8:00.0"
    assert "5 of 16" in next(f["message"] for f in s["findings"] if f["code"] == "INIT_INCOMPLETE")
    old = summarize(lines("nccl629_init_complete_old.txt"))
    assert old["ranks"] == 16 and old["init_complete"] == 8
    assert set(old["hosts"]) == {"A03-R28-I49-2-6000166", "A03-R28-I49-3-9000018"}
    assert {d["rank"]: d["cuda_dev"] for d in old["devices"]}[15] == 7


def test_logs_of_all_hosts_together_complete_init() -> None:
    """Init COMPLETE of ranks 32..36 only → incomplete; every rank's log fed together → complete."""
    part = lines("nccl1814_init_complete_64ranks.txt")
    p = NcclParser()
    p.feed(part)
    assert p.summary()["init_complete"] == 4
    commid = "0x5ae77eb5ea4ec1ee"
    p.feed(f"hostname-test:{900 + r}:{1200 + r} [{r % 8}] NCCL INFO comm 0x55{r:010x} rank {r} nranks 64 "
           f"cudaDev {r % 8} nvmlDev {r % 8} busId {r % 8}000 commId {commid} - Init COMPLETE"
           for r in range(64) if r not in (32, 34, 35, 36))
    s = p.summary()
    assert s["init_complete"] == 64 and "INIT_INCOMPLETE" not in codes(s)


def test_timestamps_and_init_start_without_complete() -> None:
    s = summarize(lines("nccl1647_timestamps_2.26.txt"))
    assert s["version"] == "2.26.2+cuda12.8"
    assert s["hosts"] == ["nickelpie-job-0"]
    msg = next(f["message"] for f in s["findings"] if f["code"] == "INIT_INCOMPLETE")
    assert "rank(s) 0 logged Init START without Init COMPLETE" in msg
    assert s["devices"] == [{"rank": 0, "cuda_dev": 0, "bus_id": "0019:01:00.0"}]


def test_warn_lines_behind_pdsh_prefix() -> None:
    s = summarize(lines("nccl1029_warn_pdsh.txt"))
    assert s["hosts"] == ["rdma-test-gpu-worker-1", "rdma-test-gpu-worker-0"]
    assert s["warnings"] == [
        "rdma-test-gpu-worker-1:2918 [4] init.cc:263 Cuda failure 'initialization error'",
        "rdma-test-gpu-worker-1:2919 [5] misc/cudawrap.cc:33 Cuda failure 'initialization error'",
        "rdma-test-gpu-worker-1:2914 [0] misc/cudawrap.cc:33 Cuda failure 'initialization error'",
    ]
    assert codes(s)["NCCL_WARN"] == "error"


def test_warn_with_timestamp_and_function_v2_30_7() -> None:
    # the reference's documented 2.30.7 layout: timestamp, then `file:line (func)` before NCCL WARN
    s = summarize(["", "[2026-05-05 06:16:47] node-01:189884:189884 [3] plugin/net.cc:334 (ncclNetInit) "
                   "NCCL WARN Failed to initialize any NET plugin"])
    assert s["warnings"] == ["node-01:189884 [3] plugin/net.cc:334 Failed to initialize any NET plugin"]
    assert s["hosts"] == ["node-01"]


def test_p2p_disabled_messages() -> None:
    s = summarize(lines("pytorch130113_p2p_disabled.txt"))
    f = next(f for f in s["findings"] if f["code"] == "P2P_DISABLED")
    assert "2-1" in f["message"] and "0-2" in f["message"]
    env = summarize(["h:1:1 [0] NCCL INFO NCCL_P2P_DISABLE set by environment to 1",
                     "h:1:1 [0] NCCL INFO NCCL_P2P_LEVEL set by environment to PHB"])
    assert env["env"] == {"NCCL_P2P_DISABLE": "1", "NCCL_P2P_LEVEL": "PHB"}
    assert "P2P_DISABLED" in codes(env)


def test_direct_pointer_single_process_matrix() -> None:
    s = summarize(lines("nccl671_direct_pointer_hexbusid.txt"))
    assert s["transports"]["P2P"] == 16
    assert [d["bus_id"] for d in s["devices"]] == ["0000:06:00.0", "0000:07:00.0", "0000:0a:00.0", "0000:0b:00.0"]
    rows = format_matrix(s)
    assert rows[0].split() == ["src\\dst", "0", "1", "2", "3"]
    assert rows[1].split() == ["0", "-", "P", "P", "."]


def test_net_inside_one_node() -> None:
    # nNodes 1 by NCCL's own topology line, yet a NET connection: SHM or P2P could not be used
    text = ["box:10:11 [0] NCCL INFO comm 0x1 rank 0 nRanks 2 nNodes 1 localRanks 2 localRank 0 MNNVL 0",
            "box:12:13 [1] NCCL INFO comm 0x2 rank 1 nRanks 2 nNodes 1 localRanks 2 localRank 1 MNNVL 0",
            "box:10:11 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] [send] via NET/Socket/0",
            "box:12:13 [1] NCCL INFO Channel 00/0 : 0[0] -> 1[1] [receive] via NET/Socket/0"]
    s = summarize(text)
    assert codes(s)["NET_INTRA_NODE"] == "warning"
    assert s["transports"]["NET"] == 1  # one connection, logged by both ends


def test_possible_hang_needs_silence_and_busy_gpus() -> None:
    p = NcclParser()
    p.feed(lines("h200_single_rank_2.28.9.txt"))
    assert "POSSIBLE_HANG" not in codes(p.summary())
    assert "POSSIBLE_HANG" not in codes(p.summary(seconds_since_last_line=5, gpu_busy=True))
    assert "POSSIBLE_HANG" not in codes(p.summary(seconds_since_last_line=600, gpu_busy=False))
    assert codes(p.summary(seconds_since_last_line=600, gpu_busy=True))["POSSIBLE_HANG"] == "error"
    assert codes(p.summary(seconds_since_last_line=600, gpu_busy=None))["POSSIBLE_HANG"] == "info"
    # not every rank initialised: that is INIT_INCOMPLETE, not a hang after init
    q = NcclParser()
    q.feed(lines("nccl1412_init_complete_2.21.txt"))
    assert "POSSIBLE_HANG" not in codes(q.summary(seconds_since_last_line=600, gpu_busy=True))


def test_ray_prefix_and_broken_lines_do_not_count() -> None:
    s = summarize(lines("ray1672_prefix_split_lines.txt"))
    assert s["hosts"] == ["degamts15"]
    assert s["pairs"] == []  # `CCL INFO Channel 08/0 ...` lost its prefix to an interleaved write


def test_nccl_lines_picks_from_mixed_server_log() -> None:
    mixed = [*lines("nccl1647_timestamps_2.26.txt")[:3],
             *(SGLANG / "sglang11948_eagle3_decode_tp0.txt").read_text().splitlines(),
             "NCCL version 2.21.5+cuda12.4", "plain text mentioning NCCL only"]
    picked = nccl_lines(mixed)
    assert picked == [*lines("nccl1647_timestamps_2.26.txt")[:3], "NCCL version 2.21.5+cuda12.4"]


def test_incremental_feed_equals_one_shot() -> None:
    text = lines("nccltests166_shm_net.txt") + lines("nccl1412_init_complete_2.21.txt")
    p = NcclParser()
    for i in range(0, len(text), 3):
        p.feed(text[i:i + 3])
    assert p.summary() == summarize(text)


def test_framework_version_line_used_when_nccl_silent() -> None:
    s = summarize((SGLANG / "sglang12496_docker_prefix.txt").read_text().splitlines())
    assert s["version"] == "2.27.3"


def test_bus_id_format() -> None:
    assert format_bus_id("e3000") == "0000:e3:00.0"
    assert format_bus_id("1000") == "0000:01:00.0"


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return clikit.run(args, cwd=ROOT, timeout=60)


def test_cli_nccl_json_text_and_errors(tmp_path: Path) -> None:
    r = run_cli("nccl", str(DATA / "nccltests166_shm_net.txt"), str(DATA / "nccl1412_init_complete_2.21.txt"),
                "--json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["ranks"] == 16 and doc["transports"]["SHM"] == 7
    r = run_cli("nccl", str(DATA / "nccl1029_warn_pdsh.txt"))
    assert r.returncode == 1  # a WARN of severity error
    assert "NCCL_WARN" in r.stdout
    r = run_cli("nccl", str(tmp_path / "missing.log"))
    assert r.returncode == 2 and r.stderr.strip().count("\n") == 0 and "no such file" in r.stderr
    assert "Traceback" not in r.stderr


def test_shm_expected_when_p2p_disabled_by_env() -> None:
    text = ["ubuntu:9621:9621 [0] NCCL INFO NCCL_P2P_DISABLE set by environment to 1",
            *lines("nccltests166_shm_net.txt")]
    s = summarize(text)
    assert codes(s)["SHM_FALLBACK"] == "info" and codes(s)["P2P_DISABLED"] == "warning"
    assert "NCCL_P2P_DISABLE=1" in next(f["message"] for f in s["findings"] if f["code"] == "SHM_FALLBACK")
