"""NCCL lines judged by what NCCL means by them (docs/upstream.md, "NCCL"; tags of github:NVIDIA/nccl).

Real lines: zai-org/ImageReward#65 (`NET/IB : Unable to open device`, NCCL then uses the IB devices it
could open), horovod/horovod#685 (`Failed to open libibverbs.so[.1]` as a WARN of an old NCCL; NCCL then
uses sockets), a public NCCL 2.21.5 log's `NCCL_IB_DISABLE set by environment to 1.` (misc/param.cc's
format), and the nccl-tests#166 SHM log of tests/data/nccl for the SHM verdict.
"""

from __future__ import annotations

from pathlib import Path

from eagle_console.parse.nccl import NcclParser, summarize

DATA = Path(__file__).parent / "data" / "nccl"
SHM_LOG = (DATA / "nccltests166_shm_net.txt").read_text(encoding="utf-8").splitlines()

IB_OPEN = [  # zai-org/ImageReward#65
    "65826-86bd789679-2dxbs:80744:80744 [1] misc/ibvwrap.cc:212 NCCL WARN Call to ibv_open_device failed",
    "65826-86bd789679-2dxbs:80746:80746 [3] transport/net_ib.cc:149 NCCL WARN NET/IB : Unable to open device mlx5_59",
    "65826-86bd789679-2dxbs:80746:80746 [3] NCCL INFO NET/IB : Using [0]mlx5_1:1/RoCE [1]mlx5_18:1/RoCE ; "
    "OOB eth0:33.117.221.247<0>",
    "65826-86bd789679-2dxbs:80746:80746 [3] NCCL INFO Using network IB",
]
NO_VERBS = [  # horovod/horovod#685 (NCCL 2.3.7)
    "ml3:32632:32662 [0] misc/ibvwrap.cu:63 NCCL WARN Failed to open libibverbs.so[.1]",
    "ml3:32632:32662 [0] NCCL INFO Using network Socket",
]


def finding(lines: list[str], code: str) -> dict:
    return next(f for f in summarize(lines)["findings"] if f["code"] == code)


def test_ib_device_nccl_skips_is_not_an_error() -> None:
    f = finding(IB_OPEN, "NCCL_WARN")
    assert f["severity"] == "info" and "carries on" in f["message"]


def test_missing_libibverbs_warn_of_old_nccl_is_not_an_error() -> None:
    f = finding(NO_VERBS, "NCCL_WARN")
    assert f["severity"] == "info"


def test_a_real_failure_among_benign_warns_stays_an_error() -> None:
    # NVIDIA/nccl#952: a proxy failure after the connection was closed
    severe = ("<cluster_name>:922:1158 [3] proxy.cc:1519 NCCL WARN [Proxy Service 11] Failed to execute operation "
              "Connect from rank 11, retcode 2")
    assert finding([*IB_OPEN, severe], "NCCL_WARN")["severity"] == "error"


def test_environment_values_lose_nccls_trailing_period() -> None:
    p = NcclParser()
    p.feed(["0fed198eb8ba:528157:528268 [0] NCCL INFO NCCL_IB_DISABLE set by environment to 1.",
            "0fed198eb8ba:528157:528268 [0] NCCL INFO NCCL_P2P_DISABLE set by environment to 1.",
            "0fed198eb8ba:528157:528268 [0] NCCL INFO NCCL_SOCKET_IFNAME set by environment to eth0"])
    assert p.summary()["env"] == {"NCCL_IB_DISABLE": "1", "NCCL_P2P_DISABLE": "1", "NCCL_SOCKET_IFNAME": "eth0"}
    # NCCL_P2P_DISABLE=1 read through param.cc's format makes SHM expected
    p.feed(SHM_LOG)
    shm = next(f for f in p.summary()["findings"] if f["code"] == "SHM_FALLBACK")
    assert shm["severity"] == "info" and "NCCL_P2P_DISABLE=1 is set" in shm["message"]


def test_shm_on_geforce_names_the_card_class_not_acs() -> None:
    p = NcclParser()
    p.feed(["NCCL version 2.27.3+cuda12.9",
            "ubuntu:9621:9621 [0] NCCL INFO NCCL_P2P_LEVEL set by environment to SYS", *SHM_LOG])
    p.gpu_names = ["NVIDIA GeForce RTX 4090"] * 2  # NVML's name, as the GPU reading has it
    shm = next(f for f in p.summary()["findings"] if f["code"] == "SHM_FALLBACK")
    assert "GeForce (NVIDIA GeForce RTX 4090)" in shm["message"] and "no PCIe P2P" in shm["message"]
    assert "not an ACS/IOMMU problem" in shm["message"] and shm["severity"] == "info"


# Lines built from NCCL's own format strings (github:NVIDIA/nccl tags; docs/upstream.md "NCCL"), each of which
# the parser missed or miscounted before (an audit of the parsers against v2.30.7-1).

def split_init_start(rank: int) -> str:
    """init.cc v2.30.7-1:1885-1887: `… color %d key %d- Init START`, no blank before the dash."""
    return (f"node1:20{rank}:20{rank} [{rank}] NCCL INFO ncclCommSplit comm 0x1{rank} rank {rank} nranks 8 "
            f"cudaDev {rank} nvmlDev {rank} busId {rank + 1}000 parent 0x990 childCount 1 color 0 "
            f"key {rank}- Init START")


def test_a_split_communicator_that_never_completes_init_is_reported() -> None:
    s = summarize([split_init_start(r) for r in range(8)])
    assert s["ranks"] == 8 and s["init_complete"] == 0, s  # before: ranks None, no finding
    assert any(f["code"] == "INIT_INCOMPLETE" for f in s["findings"]), s["findings"]


def test_peer_query_failed_is_p2p_disabled() -> None:
    """p2p.cc v2.30.7-1:176: `peer query failed between dev %d(=%lx) and dev %d(=%lx)`."""
    line = "node1:1:1 [0] NCCL INFO peer query failed between dev 0(=1000) and dev 1(=2000)"
    f = finding([line], "P2P_DISABLED")
    assert "GPUs 0-1" in f["message"], f


def test_p2p_disable_as_old_nccl_logs_it_is_p2p_off() -> None:
    """NCCL <= 2.22 (paths.cc v2.22.3-1:218-247, v2.21.5-1:244; torch 2.6 bundles 2.21.5) logs
    NCCL_P2P_DISABLE=1 only as `NCCL_P2P_LEVEL set by environment to LOC`."""
    lines = ["node1:1:1 [0] NCCL INFO NCCL version 2.21.5+cuda12.4",
             "node1:1:1 [0] NCCL INFO NCCL_P2P_LEVEL set by environment to LOC",
             "node1:1:1 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via SHM/direct/direct",
             "node1:2:2 [1] NCCL INFO Channel 00/0 : 1[1] -> 0[0] via SHM/direct/direct"]
    f = finding(lines, "P2P_DISABLED")
    assert "NCCL_P2P_LEVEL=LOC" in f["message"] and f["severity"] == "warning", f
    shm = finding(lines, "SHM_FALLBACK")
    assert shm["severity"] == "info" and "NCCL_P2P_LEVEL=LOC turns P2P off" in shm["message"], shm


def test_a_net_connection_is_counted_once_though_both_ends_log_it() -> None:
    """net.cc v2.30.7-1:324 ([send], the sender's process) and :377 ([receive], the receiver's)."""
    s = summarize(["node1:300:300 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] [send] via NET/Socket/0",
                   "node1:301:301 [1] NCCL INFO Channel 00/0 : 0[0] -> 1[1] [receive] via NET/Socket/0"])
    assert s["transports"]["NET"] == 1 and s["transport_pairs"]["NET"] == 1, s


def test_the_frameworks_nccl_version_line_is_an_nccl_line() -> None:
    """The NCCL pane and the ranks' merge feed nccl_lines(): SGLang's own line named the version they lost."""
    from eagle_console.parse.nccl import nccl_lines

    line = "[2026-06-01 10:00:00 TP0] sglang is using nccl==2.27.3"
    assert nccl_lines([line, "an unrelated line"]) == [line]
    assert summarize(nccl_lines([line]))["version"] == "2.27.3"


def test_a_sub_groups_connections_are_put_on_their_gpus() -> None:
    """Channel lines name their communicator's own ranks (p2p.cc v2.30.7-1:423, shm.cc:116: `rank[nvmlDev]`).
    A server's 8-rank communicator all P2P, and a 2-rank sub-group (SGLang's attention-TP group under DP
    attention, say) on GPUs 0 and 4 through SHM. Before: "SHM … 0→1, 1→0" and the matrix's 0→1 cell `P2P+SHM`,
    while GPUs 0 and 1 were P2P and the SHM pair was GPUs 0 and 4."""
    from eagle_console.parse.nccl_matrix import transport_matrix

    lines = ["node1:1:1 [0] NCCL INFO NCCL version 2.27.3+cuda12.9"]
    for r in range(8):
        head, nxt = f"node1:10{r}:10{r} [{r}] NCCL INFO", (r + 1) % 8
        lines.append(f"{head} comm 0xa{r} rank {r} nranks 8 cudaDev {r} nvmlDev {r} busId {r + 1}000 "
                     "commId 0xabc - Init COMPLETE")
        lines.append(f"{head} Channel 00/0 : {r}[{r}] -> {nxt}[{nxt}] via P2P/CUMEM/read")
    for rank, gpu in ((0, 0), (1, 4)):
        lines.append(f"node1:10{gpu}:10{gpu} [{gpu}] NCCL INFO comm 0xb{gpu} rank {rank} nranks 2 "
                     f"cudaDev {gpu} nvmlDev {gpu} busId {gpu + 1}000 commId 0xdef - Init COMPLETE")
    lines += ["node1:100:100 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[4] via SHM/direct/direct",
              "node1:104:104 [4] NCCL INFO Channel 00/0 : 1[4] -> 0[0] via SHM/direct/direct"]
    s = summarize(lines)
    shm = finding(lines, "SHM_FALLBACK")
    said = "2 GPU pair(s) connect through SHM (host memory) instead of PCIe P2P: 0→4, 4→0"
    assert said in shm["message"], shm
    _ranks, grid = transport_matrix(s)
    assert grid[0][1] == "P2P" and grid[0][4] == "SHM" and grid[4][0] == "SHM", grid
    assert s["transport_pairs"] == {"P2P": 8, "SHM": 2, "NET": 0, "COLLNET": 0}
