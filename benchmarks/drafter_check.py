"""Header-only `drafter check` of a ~2 GB drafter vs a full `safetensors.numpy.load_file` of the same file.

Writes a float16 drafter (real K2.5 widths: hidden 7168 → fc [7168, 21504], lm_head [32000, 7168]) to a
temp dir, times both, prints the ratio (expected >= 20x), and deletes the file.

    .venv/bin/python benchmarks/drafter_check.py [--gb 2]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import tempfile
import time
from pathlib import Path


def main() -> int:
    import numpy as np
    from safetensors.numpy import load_file, save_file

    from eagle_console.drafter.check import check_drafter
    from eagle_console.sim import drafters as sim

    p = argparse.ArgumentParser()
    p.add_argument("--gb", type=float, default=2.0, help="approximate checkpoint size")
    args = p.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="drafter-bench-"))
    try:
        H = 7168
        # fixed widths of a K2.5 drafter; intermediate_size is sized so the file is about --gb
        fixed = (56 * 128 * 2 * H + 2 * 1024 * 2 * H + H * 56 * 128 + H * 3 * H + 32000 * H) * 2
        inter = max(256, int((args.gb * 1e9 - fixed) / (2 * 3 * H)))
        cfg = sim.draft_config(hidden_size=H, target_hidden_size=H, num_attention_heads=56, num_key_value_heads=8,
                               head_dim=128, intermediate_size=inter)
        ids = sim.k25_target_ids()
        # float16 weights written by the reference library (numpy has no bfloat16)
        shapes = {
            "midlayer.self_attn.q_proj.weight": (56 * 128, 2 * H), "midlayer.self_attn.k_proj.weight": (1024, 2 * H),
            "midlayer.self_attn.v_proj.weight": (1024, 2 * H), "midlayer.self_attn.o_proj.weight": (H, 56 * 128),
            "midlayer.mlp.gate_proj.weight": (cfg["intermediate_size"], H),
            "midlayer.mlp.up_proj.weight": (cfg["intermediate_size"], H),
            "midlayer.mlp.down_proj.weight": (H, cfg["intermediate_size"]),
            "midlayer.hidden_norm.weight": (H,), "midlayer.input_layernorm.weight": (H,),
            "midlayer.post_attention_layernorm.weight": (H,), "fc.weight": (H, 3 * H), "norm.weight": (H,),
            "lm_head.weight": (32000, H),
        }
        tensors = {k: np.full(s, 0.02, dtype=np.float16) for k, s in shapes.items()}  # values do not matter
        tensors["d2t"] = ids - np.arange(32000, dtype=np.int64)
        t2d = np.zeros(163840, dtype=np.bool_)
        t2d[ids] = True
        tensors["t2d"] = t2d
        folder = tmp / "drafter"
        folder.mkdir()
        (folder / "config.json").write_text(json.dumps(cfg))
        save_file(tensors, str(folder / "model.safetensors"))
        del tensors
        size = os.path.getsize(folder / "model.safetensors")
        os.sync()

        t0 = time.perf_counter()
        result = check_drafter(folder)
        t_check = time.perf_counter() - t0
        assert result["ok"], result["findings"]
        t0 = time.perf_counter()
        loaded = load_file(str(folder / "model.safetensors"))
        t_load = time.perf_counter() - t0
        assert len(loaded) == result["tensors"]
        del loaded
        print(f"file {size / 1e9:.2f} GB, {result['tensors']} tensors")
        print(f"drafter check (headers + d2t/t2d): {t_check * 1000:.1f} ms")
        print(f"safetensors.numpy.load_file (reference): {t_load * 1000:.1f} ms")
        print(f"ratio: {t_load / t_check:.0f}x (expected >= 20x)")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
