"""The rank×rank transport matrix of an NCCL summary, as a grid and as text (the console and `nccl --matrix`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from eagle_console.parse.nccl import NcclSummary

TRANSPORT_CODES = {"P2P": "P", "SHM": "S", "NET": "N", "COLLNET": "C"}


def transport_matrix(summary: NcclSummary) -> tuple[list[int], list[list[str | None]]]:
    """Rank×rank grid for the console: cell [src][dst] is the transport name ('P2P', 'SHM+P2P' when
    channels differ) or None when the pair has no connection. Ranks from 0 to the highest seen."""
    n = summary.get("ranks") or 0
    seen: dict[tuple[int, int], set[str]] = {}
    for p in summary.get("pairs", []):
        seen.setdefault((p["src"], p["dst"]), set()).add(p["transport"])
        n = max(n, p["src"] + 1, p["dst"] + 1)
    ranks = list(range(n))
    grid: list[list[str | None]] = [[None] * n for _ in ranks]
    for (src, dst), kinds in seen.items():
        grid[src][dst] = "+".join(sorted(kinds))
    return ranks, grid


def format_matrix(summary: NcclSummary, max_ranks: int = 32) -> list[str]:
    """Text rendering of `transport_matrix`: P=P2P S=SHM N=NET C=COLLNET, '.' none, '-' self."""
    ranks, grid = transport_matrix(summary)
    if not ranks:
        return []
    ranks = ranks[:max_ranks]
    width = max(2, len(str(ranks[-1])) + 1)
    rows = ["src\\dst" + "".join(f"{r:>{width}}" for r in ranks)]
    for src in ranks:
        cells = []
        for dst in ranks:
            kinds = grid[src][dst]
            if src == dst:
                cells.append("-")
            elif kinds is None:
                cells.append(".")
            else:
                cells.append("".join(TRANSPORT_CODES.get(k, k[:1]) for k in kinds.split("+")))
        rows.append(f"{src:>7}" + "".join(f"{c:>{width}}" for c in cells))
    return rows
