"""SHM_FALLBACK read the way NCCL decides (graph/paths.cc ncclTopoCheckP2p): the P2P level by environment, the
NCCL version and the CPU vendor. The channel lines are the real nccl-tests#166 log (tests/data/nccl/SOURCE.md);
the env and CPU lines are NCCL's own format strings filled in (`"%s set by environment to %s"` in paths.cc
ncclGetLevel, which prints the level's name; `"%s/%lx-%lx (%d/%d/%d)"` in topo.cc ncclTopoPrintRec), the CPU
line exactly as the project's H200 reading printed it (tests/data/nccl/h200_single_rank_2.28.9.txt: Intel).
"""

from __future__ import annotations

from pathlib import Path

from eagle_console.parse.nccl import summarize

DATA = Path(__file__).parent / "data" / "nccl"
SHM_LOG = (DATA / "nccltests166_shm_net.txt").read_text(encoding="utf-8").splitlines()
INTEL_CPU = "ubuntu:9621:9621 [0] NCCL INFO CPU/0-ffffffffffffff (1/1/4)"  # x86 / Intel / ERP (graph.h)
AMD_CPU = "ubuntu:9621:9621 [0] NCCL INFO CPU/0-ffffffffffffff (1/2/0)"  # x86 / AMD


def shm(*extra: str) -> dict:
    s = summarize([*extra, *SHM_LOG])
    return next(f for f in s["findings"] if f["code"] == "SHM_FALLBACK")


def test_shm_despite_p2p_level_sys_points_at_acs() -> None:
    f = shm("NCCL version 2.27.3+cuda12.9", "ubuntu:9621:9621 [0] NCCL INFO NCCL_P2P_LEVEL set by environment to SYS")
    assert f["severity"] == "warning"
    assert "NVML reports P2P as not OK" in f["message"] and "ACS" in f["message"] and "Normal" not in f["message"]


def test_shm_despite_p2p_level_phb_mentions_sockets() -> None:
    f = shm("ubuntu:9621:9621 [0] NCCL INFO NCCL_P2P_LEVEL set by environment to PHB")
    assert f["severity"] == "warning" and "across sockets" in f["message"] and "ACS" in f["message"]


def test_narrow_p2p_level_makes_shm_expected() -> None:
    f = shm("NCCL version 2.18.1+cuda12.1", "ubuntu:9621:9621 [0] NCCL INFO NCCL_P2P_LEVEL set by environment to PIX")
    assert f["severity"] == "info" and "NCCL_P2P_LEVEL=PIX" in f["message"]


def test_pre_2_23_on_intel_is_the_pxb_default() -> None:
    f = shm("NCCL version 2.18.1+cuda12.1", INTEL_CPU)
    assert f["severity"] == "info" and "Intel" in f["message"] and "PXB" in f["message"]
    assert "NCCL_P2P_LEVEL=SYS" in f["message"]


def test_pre_2_23_on_amd_still_suggests_p2p_unavailable() -> None:
    f = shm("NCCL version 2.18.1+cuda12.1", AMD_CPU)
    assert f["severity"] == "warning" and "not OK" in f["message"]


def test_pre_2_23_without_cpu_says_it_depends_on_the_cpu() -> None:
    f = shm("NCCL version 2.18.1+cuda12.1")
    assert f["severity"] == "warning" and "Intel" in f["message"] and "AMD" in f["message"]
    assert "normally used across the host bridge" not in f["message"]


def test_new_nccl_default_gives_the_tuning_hint() -> None:
    f = shm("NCCL version 2.27.3+cuda12.9")
    assert f["severity"] == "info" and "NCCL_P2P_LEVEL=SYS" in f["message"] and "PEX890" in f["message"]
