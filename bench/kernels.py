#!/usr/bin/env python3
"""Fused-kernel benchmark: FLAME's Triton adaLN LayerNorm, QK RMSNorm and RoPE at Flux shapes, forward and
forward+backward, against the eager PyTorch reference and torch.compile of that reference, all in one run;
and AdamW on 100M parameters against torch.optim.AdamW(fused=True). GB/s counts the bytes each op must move
(inputs read once, outputs written once); the copy roof is measured in the same run. Prints a table, writes JSON.

    python bench/kernels.py --out bench/results/kernels.json
    python bench/kernels.py --smoke --out /tmp/kernels.json    # each op at one shape of 256 tokens, AdamW on 1M: same code path
"""
import argparse, datetime, json, sys
from pathlib import Path
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch, triton
# importing any module of flame.kernels registers every op in OPS (each op module registers itself)
from flame.kernels.core import OPS, bench, device_ceilings, measure_op, op_cost, op_inputs, results_table
from flame.kernels.adamw import adamw_, adamw_results_table

FULL = dict(tokens=None, adamw_n=100_000_000, ceilings={})   # every op at all its Flux shapes
# --smoke: each op at its first shape cut to 256 tokens (the second-to-last dim), AdamW on 1M parameters, small roofs
SMOKE = dict(tokens=256, adamw_n=1_000_000, ceilings=dict(nbytes=1 << 26, gemm=2048))

def kernel_rows(dtype, rows, save, tokens=None):
    """Each registered op at its Flux shapes (`tokens`: the first only, cut to that many tokens), forward and forward + backward:
    FLAME vs eager vs torch.compile."""
    for op, k in OPS.items():
        compiled = torch.compile(k.reference)
        for shape in k.shapes if tokens is None else [(*s[:-2], min(s[-2], tokens), s[-1]) for s in k.shapes[:1]]:
            for backward in (False, True):
                r = measure_op(op, shape, dtype, backward)
                r["eager_ms"] = measure_op(op, shape, dtype, backward, impl="eager")["ms"]
                try: r["compile_ms"] = measure_op(op, shape, dtype, backward, impl=compiled)["ms"]
                except Exception as e: r["compile_ms"], r["compile_error"] = float("nan"), f"{type(e).__name__}: {str(e)[:200]}"
                r["x_eager"], r["x_compile"] = r["eager_ms"] / r["ms"], r["compile_ms"] / r["ms"]
                rows.append(r); save(); print(f"{op:22s} {str(tuple(shape)):20s} {r['pass']:8s} {r['ms']:.3f} ms "
                                      f"{r['GBps']:.0f} GB/s  x{r['x_eager']:.2f} eager  x{r['x_compile']:.2f} compile", flush=True)
                torch.cuda.empty_cache()

def adamw_step(n, dtype, sr, hp):
    "One AdamW step on n params: FLAME's flat kernel vs torch.optim.AdamW(fused=True) on the same flat tensor."
    p, g, m, v = op_inputs("adamw_", (n,), dtype)
    step = [0]
    def ours():
        step[0] += 1
        adamw_(p, g, m, v, step=step[0], **hp, stochastic_rounding=sr)
    ms = bench(ours)
    tp = torch.nn.Parameter(p.detach().clone()); tp.grad = g.to(dtype)
    opt = torch.optim.AdamW([tp], **hp, fused=True)  # bf16 params: torch keeps bf16 state (not comparable bytes)
    torch_ms = bench(opt.step)
    nbytes, _ = op_cost("adamw_", [p, g, m, v])
    return {"n": n, "ms": ms, "GBps": nbytes / ms / 1e6, "torch_fused_ms": torch_ms, "x_torch_fused": torch_ms / ms}

def adamw_rows(rows, save, n=100_000_000):
    "fp32, bf16 and bf16 with stochastic rounding parameters: one AdamW step each (buffers freed between them)."
    hp = dict(lr=1e-4, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2)
    for label, dtype, sr in (("fp32", torch.float32, False), ("bf16", torch.bfloat16, False), ("bf16+SR", torch.bfloat16, True)):
        r = {"params": label, **adamw_step(n, dtype, sr, hp)}
        rows.append(r)
        save()
        print(f"adamw_ {label:8s} n={n:,}: {r['ms']:.3f} ms {r['GBps']:.0f} GB/s; torch fused {r['torch_fused_ms']:.3f} ms "
              f"(x{r['x_torch_fused']:.2f})", flush=True)
        torch.cuda.empty_cache()

if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", help="the JSON file (default bench/results/kernels.json; required with --smoke)")
    ap.add_argument("--dtype", default="bfloat16")
    ap.add_argument("--smoke", action="store_true", help=f"the same run at tiny sizes ({SMOKE})")
    args = ap.parse_args()
    if args.smoke and not args.out: ap.error("--smoke needs --out (smoke results never go to bench/results/)")
    if not torch.cuda.is_available(): ap.exit(2, "bench/kernels.py needs a CUDA GPU\n")
    size = SMOKE if args.smoke else FULL
    out = Path(args.out or "bench/results/kernels.json")
    ceilings = device_ceilings(**size["ceilings"])
    print(f"ceilings: {ceilings}", flush=True)
    res = {"device": torch.cuda.get_device_name(), "date": datetime.date.today().isoformat(),
           "torch": torch.__version__, "triton": triton.__version__, "ceilings": ceilings, "rows": [], "adamw": []}
    out.parent.mkdir(parents=True, exist_ok=True)
    save = lambda: out.write_text(json.dumps(res, indent=1))  # after every row: a cut-off run keeps what it measured
    adamw_rows(res["adamw"], save, size["adamw_n"])
    kernel_rows(getattr(torch, args.dtype), res["rows"], save, size["tokens"])
    print(results_table(res))
    print(adamw_results_table(res))
