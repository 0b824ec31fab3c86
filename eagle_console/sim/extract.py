"""A simulated hidden-state extraction job, shaped like SpecForge's offline capture (reference §3).

Writes one safetensors file per sample under `OUT/rows_{k}-{k+group}/data_{idx}.safetensors` with keys
`input_ids [seq]`, `loss_mask [seq]`, `aux_hidden_state [1, seq, layers*hidden]`, `hidden_state [1, seq,
hidden]` (bfloat16), prints tqdm-style `\\r` progress on stderr and a JSON summary with `total_samples` and
`total_tokens` on stdout, as the real job's log does.

`--bytes-per-sample B` adds a zero-filled `padding` tensor left as a hole in each file (sparse), so every
sample has logical size B without using disk: with `--samples 10000 --bytes-per-sample 100000000` the
projected size (1 TB) exceeds the free space of a normal disk for real, and the watcher says it does not fit.

    python -m eagle_console.sim.extract --out DIR --samples N [--rate 2.0] [--bad 1]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from eagle_console.drafter.safetensors_io import write_file


def _clock(seconds: float) -> str:
    s = int(seconds)
    h, rem = divmod(s, 3600)
    m, s = divmod(rem, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m:02d}:{s:02d}"


def progress_line(desc: str, n: int, total: int, elapsed: float, tokens: int) -> str:
    """One redraw in tqdm's default layout (`{l_bar}{bar}| {n}/{total} [{elapsed}<{remaining}, {rate}]`)."""
    frac = n / total if total else 0.0
    width = 10
    full = int(frac * width)
    bar = "█" * full + (" " * (width - full))
    rate = n / elapsed if elapsed > 0 and n else None
    remaining = _clock((total - n) / rate) if rate else "?"
    rate_s = f"{rate:.2f}it/s" if rate else "?it/s"
    return (f"{desc}: {frac * 100:3.0f}%|{bar}| {n}/{total} [{_clock(elapsed)}<{remaining}, {rate_s}, "
            f"tokens={tokens}]")


def write_sample(path: Path, seq: int, hidden: int, layers: int, rng: object, bad: bool, pad: int) -> None:
    import numpy as np

    def bf16(a: np.ndarray) -> tuple[np.ndarray, str]:
        return ((a.astype(np.float32).view(np.uint32) >> 16).astype(np.uint16), "BF16")

    g = rng  # numpy Generator
    hs = g.standard_normal((1, seq, hidden), dtype=np.float32)  # type: ignore[attr-defined]
    if bad:
        hs[0, seq // 2, 0] = np.nan  # what a failed capture leaves; SpecForge would have skipped the file
    tensors = {
        "input_ids": g.integers(0, 163840, seq, dtype=np.int64),  # type: ignore[attr-defined]
        "loss_mask": np.ones(seq, dtype=np.int64),
        "aux_hidden_state": bf16(g.standard_normal((1, seq, layers * hidden), dtype=np.float32)),  # type: ignore[attr-defined]
        "hidden_state": bf16(hs),
    }
    tmp = path.with_name(f".{path.name}.tmp")
    write_file(tmp, tensors, sparse_tail={"padding": pad} if pad else None)
    tmp.replace(path)  # a watcher never sees half a sample under its final name


def main(argv: list[str] | None = None) -> int:
    import numpy as np

    p = argparse.ArgumentParser(prog="python -m eagle_console.sim.extract", description=__doc__.split("\n")[0])
    p.add_argument("--out", required=True, type=Path)
    p.add_argument("--samples", type=int, required=True)
    p.add_argument("--rate", type=float, default=0.0, help="samples per second (0: as fast as possible)")
    p.add_argument("--hidden-size", type=int, default=16)
    p.add_argument("--layers", type=int, default=3, help="aux layers captured (aux width = layers x hidden)")
    p.add_argument("--seq-min", type=int, default=16)
    p.add_argument("--seq-max", type=int, default=256, help="the last sample always has this length")
    p.add_argument("--bytes-per-sample", type=int, default=0, help="logical size of each file (sparse padding)")
    p.add_argument("--group-size", type=int, default=2000, help="files per rows_* folder")
    p.add_argument("--bad", type=int, default=0, help="write NaNs into this many samples (the longest ones)")
    p.add_argument("--desc", default="Extracting hidden states")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    if args.samples < 0 or args.seq_min < 1 or args.seq_max < args.seq_min:
        print("extract: need --samples >= 0 and 1 <= --seq-min <= --seq-max", file=sys.stderr)
        return 2

    rng = np.random.default_rng(args.seed)
    seqs = rng.integers(args.seq_min, args.seq_max + 1, args.samples)
    if args.samples:
        seqs[-1] = args.seq_max
    bad = set(np.argsort(seqs)[::-1][: args.bad].tolist())
    start = time.monotonic()
    tokens = 0
    sys.stderr.write(progress_line(args.desc, 0, args.samples, 0.0, 0))
    for idx in range(args.samples):
        group = idx // args.group_size * args.group_size
        folder = args.out / f"rows_{group}-{group + args.group_size}"
        folder.mkdir(parents=True, exist_ok=True)
        seq = int(seqs[idx])
        write_sample(folder / f"data_{idx}.safetensors", seq, args.hidden_size, args.layers, rng,
                     idx in bad, args.bytes_per_sample)
        tokens += seq
        if args.rate > 0:  # keep pace: sleep until this sample's slot
            delay = start + (idx + 1) / args.rate - time.monotonic()
            if delay > 0:
                time.sleep(delay)
        sys.stderr.write("\r" + progress_line(args.desc, idx + 1, args.samples, time.monotonic() - start, tokens))
        sys.stderr.flush()
    sys.stderr.write("\n")
    summary = {"total_samples": args.samples, "total_tokens": tokens, "errors": 0,
               "elapsed_s": round(time.monotonic() - start, 3), "output": str(args.out)}
    print(json.dumps(summary), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
