#!/usr/bin/env python3
"""fp8 matmul benchmark (issue 17): FLAME's `fp8_linear` (e4m3fn weight, per-channel fp32 scale) as dispatched — each
shape timed once between the W8A16 Triton kernel and FLAME's fused dequantize + cuBLAS, the faster kept (the `path`
column) — against the Triton kernel alone, cuBLAS bf16 (`F.linear` on a bf16 weight) and PyTorch's dequantize (three
passes) + `F.linear`, at the shapes Flux-dev's linears run for one 1024² image (a double block's image stream on 4096
tokens and its text stream on 512, each with qkv, proj and the MLP; a single block's two on all 4608), forward and forward + dgrad (the
gradient w.r.t. x only: the frozen weight gets none). GPU time through CUDA graphs (flame.kernels.core.bench), median
after warm-up, all in one run; each row also records FLAME's forward error against the fp32 reference. Prints a
table, writes JSON.

    python bench/fp8.py --out bench/results/fp8.json
    python bench/fp8.py --smoke --out /tmp/fp8.json      # two tiny shapes, same code path
"""
import argparse, datetime, json, sys
from pathlib import Path
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

IMG, TXT = 4096, 512                                   # a 1024² image's tokens, and T5's 512
DOUBLE = {"qkv 3072→9216": (3072, 9216), "proj 3072→3072": (3072, 3072), "mlp in 3072→12288": (3072, 12288), "mlp out 12288→3072": (12288, 3072)}
SHAPES = {f"{stream} {name}": (m, *kn) for stream, m in (("img", IMG), ("txt", TXT)) for name, kn in DOUBLE.items()}
SHAPES |= {"single in 3072→21504": (IMG + TXT, 3072, 21504), "single out 15360→3072": (IMG + TXT, 15360, 3072)}
SMOKE_SHAPES = {"tiny": (256, 256, 384), "ragged": (333, 192, 200)}

def impls(x, w, s, b):
    "name -> callable(x) for the four ways to compute y."
    import torch, torch.nn.functional as F
    from flame.kernels.fp8_matmul import fp8_linear, dequantize_fp8
    w16 = dequantize_fp8(w, s, torch.bfloat16)
    return {"flame fp8": lambda x: fp8_linear(x, w, s, b), "cuBLAS bf16": lambda x: F.linear(x, w16, b),
            "dequant+cuBLAS": lambda x: F.linear(x, dequantize_fp8(w, s, torch.bfloat16), b)}

def triton_only(x, w, s, b, dy):
    "(forward, forward + dgrad) through the Triton kernel alone, its tiles timed among themselves (no autograd around it)."
    from flame.kernels.fp8_matmul import _fp8_mm, _mm_candidates, _CUBLAS
    tiles = [c for c in _mm_candidates(x.shape[0], w.shape[0]) if c is not _CUBLAS]
    fwd = lambda: _fp8_mm(x, w, s, b, w.shape[0], True, tiles)
    return fwd, lambda: (fwd(), _fp8_mm(dy, w, s, None, w.shape[1], False, tiles))

def path(M, K, N, transpose_w) -> str:
    "The path `fp8_linear` kept for this problem (after it ran once)."
    import torch
    from flame.kernels.core import _TUNED
    from flame.kernels.fp8_matmul import _mm_key
    n, k = (N, K) if transpose_w else (K, N)
    cfg = _TUNED.get(("fp8_mm", _mm_key(M, n, k, torch.bfloat16, transpose_w, per_tensor=False)), {})
    return "dequant+cuBLAS" if cfg.get("cublas") else f"triton {cfg}"

def case(name, shape, kw):
    import torch
    from flame.kernels.core import bench, rel_err
    from flame.kernels.fp8_matmul import fp8_linear_reference, quantize_fp8
    Mr, K, N = shape
    w, s = quantize_fp8(torch.randn(N, K, device="cuda") / K ** 0.5)
    x = torch.randn(Mr, K, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(N, device="cuda", dtype=torch.bfloat16)
    fns = impls(x, w, s, b)
    row = {"case": name, "shape": [Mr, K, N], "flops_fwd": 2 * Mr * K * N,
           "fwd_rel_err": rel_err(fns["flame fp8"](x), fp8_linear_reference(x.float(), w, s, b.float()))}
    xg, dy = x.detach().requires_grad_(), torch.randn(Mr, N, device="cuda", dtype=torch.bfloat16)
    for impl, fn in fns.items():
        row[f"{impl} fwd ms"] = bench(lambda: fn(x), graph=True, **kw)
        row[f"{impl} fwd+dgrad ms"] = bench(lambda: torch.autograd.grad(fn(xg), xg, dy), graph=True, **kw)
    for p, fn in zip(("fwd", "fwd+dgrad"), triton_only(x, w, s, b, dy)): row[f"triton {p} ms"] = bench(fn, graph=True, **kw)
    row["path fwd"], row["path dgrad"] = path(Mr, K, N, True), path(Mr, K, N, False)
    for p in ("fwd", "fwd+dgrad"):
        row[f"x cuBLAS {p}"] = row[f"cuBLAS bf16 {p} ms"] / row[f"flame fp8 {p} ms"]
        row[f"x dequant {p}"] = row[f"dequant+cuBLAS {p} ms"] / row[f"flame fp8 {p} ms"]
    row["flame fp8 fwd TFLOPs"] = row["flops_fwd"] / row["flame fp8 fwd ms"] / 1e9
    return row

def table(res) -> str:
    lines = [f"{res['device']}, {res['date']} (torch {res['torch']}, triton {res['triton']}); x = peer ms / FLAME ms",
             "| case | pass | FLAME fp8 ms | path (fwd; dgrad) | Triton kernel ms | cuBLAS bf16 ms | PyTorch dequant+cuBLAS ms | × cuBLAS | × dequant |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in res["rows"]:
        for p in ("fwd", "fwd+dgrad"):
            paths = r["path fwd"] if p == "fwd" else f"{r['path fwd']}; {r['path dgrad']}"
            lines.append(f"| {r['case']} | {p} | {r[f'flame fp8 {p} ms']:.3f} | {paths} | {r[f'triton {p} ms']:.3f} | {r[f'cuBLAS bf16 {p} ms']:.3f} | "
                         f"{r[f'dequant+cuBLAS {p} ms']:.3f} | {r[f'x cuBLAS {p}']:.2f} | {r[f'x dequant {p}']:.2f} |")
    return "\n".join(lines)

def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", help="the JSON file (default bench/results/fp8.json; required with --smoke)")
    ap.add_argument("--smoke", action="store_true", help=f"the same run on {SMOKE_SHAPES}; --out required")
    a = ap.parse_args()
    if a.smoke and not a.out: ap.error("--smoke needs --out (smoke results never go to bench/results/)")
    import torch, triton
    if not torch.cuda.is_available(): ap.exit(2, "bench/fp8.py needs a CUDA GPU\n")
    shapes, kw = (SMOKE_SHAPES, dict(warmup=1, rep=3)) if a.smoke else (SHAPES, dict(warmup=10, rep=50))
    res = {"device": torch.cuda.get_device_name(), "date": datetime.date.today().isoformat(), "torch": torch.__version__,
           "triton": triton.__version__, "dtype": "bfloat16", "weight": "float8_e4m3fn, per-channel fp32 scale", "rows": []}
    for name, shape in shapes.items():
        res["rows"].append(case(name, shape, kw)); print(f"{name}: done", flush=True)
    print(table(res))
    out = Path(a.out or Path(__file__).parent / "results" / "fp8.json")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(res, indent=1))
    print(f"wrote {out}")

if __name__ == "__main__":
    main()
