#!/usr/bin/env python3
"""GroupNorm benchmark: FLAME's Triton GroupNorm (SiLU fused, as SDXL's ResBlocks call it, and plain, as its
transformers' input norm does) at SDXL's shapes — 1024² images, 128² latents — forward and forward+backward,
against eager `F.group_norm` (+ `F.silu`) in the input's dtype, as diffusers runs it, and `torch.compile` of that,
all in one run. Times are GPU time through CUDA graphs (flame.kernels.core.bench), median after warm-up; GB/s counts
the bytes the op must move (x and y once, forward; x, dy and dx, backward); the copy roof is measured in the same
run. Each row also records FLAME's forward error against the fp32 reference. Prints a table, writes JSON (the
format of kernels.json: the notebook 16_group_norm shows it).

    python bench/group_norm.py --out bench/results/group_norm.json
    python bench/group_norm.py --device cpu --no-compile               # CPU smoke run (tiny shapes, /tmp)
"""
import argparse, datetime, json, platform, sys
from functools import partial
from pathlib import Path
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch
import torch.nn.functional as F
from flame.kernels.core import triton, device_ceilings, measure_op, op_inputs, rel_err, results_table
from flame.kernels.group_norm import group_norm, group_norm_reference   # registers "group_norm" in OPS

# SDXL UNet at 1024² (128² latents), batch 1 unless stated: where GroupNorm(32) runs. Input blocks 320 @ 128²,
# 640 @ 64², 1280 @ 32²; output blocks on the concatenated skips: 2560 and 1920 @ 32², 1920 and 960 @ 64², 960 and
# 640 @ 128²; a batch of 2. The transformers' GroupNorm (no SiLU, eps 1e-6) runs at 640 @ 64² and 1280 @ 32².
SILU_SHAPES = [(1, 320, 128, 128), (1, 640, 64, 64), (1, 1280, 32, 32), (1, 2560, 32, 32), (1, 1920, 64, 64),
               (1, 960, 128, 128), (2, 320, 128, 128)]
PLAIN_SHAPES = [(1, 640, 64, 64), (1, 1280, 32, 32)]
CPU_SHAPES = [(1, 64, 16, 16), (2, 96, 8, 8)]
GROUPS = 32

# torch.compile keeps one compiled graph per shape (dynamic=False) on eager's code object: allow all of them, or
# dynamo would fall back to eager after its default 8 and the compile column would time eager
for _limit in ("recompile_limit", "cache_size_limit"):
    if hasattr(torch._dynamo.config, _limit): setattr(torch._dynamo.config, _limit, 64)

def eager(x, weight, bias, eps, silu):
    "The peer: PyTorch's GroupNorm (and SiLU) in x's dtype."
    y = F.group_norm(x, GROUPS, weight, bias, eps)
    return F.silu(y) if silu else y

def case_rows(shape, silu, dtype, device, compile_, kw):
    "FLAME vs eager vs torch.compile at one shape, forward and forward + backward: two rows."
    eps = 1e-5 if silu else 1e-6
    flame = partial(group_norm, num_groups=GROUPS, eps=eps, silu=silu)
    peer = partial(eager, eps=eps, silu=silu)
    compiled = torch.compile(peer, dynamic=False) if compile_ else None   # specialised to the shape, as the kernel
    x, w, b = op_inputs("group_norm", shape, dtype, device)
    ref = group_norm_reference(x.float(), w.float(), b.float(), GROUPS, eps, silu)
    err = rel_err(flame(x, w, b), ref)
    rows = []
    for backward in (False, True):
        r = measure_op("group_norm", shape, dtype, backward, impl=flame, device=device, **kw)
        r.update(op="group_norm+silu" if silu else "group_norm", impl="flame", fwd_rel_err=err)
        r["eager_ms"] = measure_op("group_norm", shape, dtype, backward, impl=peer, device=device, **kw)["ms"]
        r["compile_ms"] = float("nan")
        if compiled is not None:
            try: r["compile_ms"] = measure_op("group_norm", shape, dtype, backward, impl=compiled, device=device, **kw)["ms"]
            except Exception as e: r["compile_error"] = f"{type(e).__name__}: {str(e)[:200]}"
        r["x_eager"], r["x_compile"] = r["eager_ms"] / r["ms"], r["compile_ms"] / r["ms"]
        rows.append(r)
        print(f"{r['op']:16s} {str(tuple(shape)):20s} {r['pass']:8s} {r['ms']:.4f} ms {r['GBps']:6.0f} GB/s  "
              f"x{r['x_eager']:.2f} eager  x{r['x_compile']:.2f} compile  (fwd rel err {err:.1e})", flush=True)
    return rows

def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", help="JSON file (default: bench/results/group_norm.json on CUDA, /tmp on CPU)")
    ap.add_argument("--dtype", choices=["bfloat16", "float16", "float32"], help="default: bfloat16 on CUDA, float32 on CPU")
    ap.add_argument("--device", default="cuda", choices=["cuda", "cpu"])
    ap.add_argument("--no-compile", dest="compile", action="store_false", help="skip the torch.compile peer")
    ap.add_argument("--quick", "--smoke", dest="quick", action="store_true", help="one shape each, few timed runs (a smoke run; make test-gpu's)")
    a = ap.parse_args()
    if a.device == "cuda" and not torch.cuda.is_available(): sys.exit("bench/group_norm.py: no CUDA GPU (--device cpu runs a smoke run)")
    cpu = a.device == "cpu"
    dtype = getattr(torch, a.dtype or ("float32" if cpu else "bfloat16"))
    out = Path(a.out or ("/tmp/flame_group_norm_cpu.json" if cpu else "bench/results/group_norm.json"))
    silu_shapes, plain_shapes = (CPU_SHAPES, CPU_SHAPES[:1]) if cpu else (SILU_SHAPES, PLAIN_SHAPES)
    if a.quick: silu_shapes, plain_shapes = silu_shapes[:1], plain_shapes[:1]
    kw = dict(warmup=1, rep=3) if cpu or a.quick else {}
    ceilings = device_ceilings(a.device, nbytes=1 << 24) if cpu else device_ceilings()
    print(f"ceilings: {ceilings}", flush=True)
    res = {"device": (platform.processor() or "cpu") if cpu else torch.cuda.get_device_name(),
           "date": datetime.date.today().isoformat(), "torch": torch.__version__,
           "triton": triton.__version__ if triton else "none", "dtype": str(dtype).replace("torch.", ""), "ceilings": ceilings, "rows": []}
    out.parent.mkdir(parents=True, exist_ok=True)
    for silu, shapes in ((True, silu_shapes), (False, plain_shapes)):
        for shape in shapes:
            res["rows"] += case_rows(shape, silu, dtype, a.device, a.compile, kw)
            out.write_text(json.dumps(res, indent=1))    # after every case: a cut-off run keeps what it measured
            if not cpu: torch.cuda.empty_cache()
    print(results_table(res))
    print(f"wrote {out}")

if __name__ == "__main__":
    main()
