#!/usr/bin/env python3
"""Flash attention benchmark: FLAME vs every SDPA backend (flash, cuDNN, efficient), bf16, on the shapes the
models use, with contiguous and with transposed (B, L, H, D) -> (B, H, L, D) inputs; plus peak memory of
naive vs flash attention at growing L.

Each implementation runs in its own subprocess, one case after another. A CUDA error such as an illegal
memory access poisons the process's CUDA context, so the worker records it as "crash" and exits; the parent
starts a fresh worker at the next case. Prints a table, writes JSON.

    python bench/attention.py --out bench/results/attention.json
    python bench/attention.py --smoke --out /tmp/attention.json    # two small shapes, same code path
"""
import argparse, datetime, json, os, subprocess, sys, tempfile
from pathlib import Path

SHAPES = {"Flux 1024²": (1, 24, 4608, 128), "Flux 512² b4": (4, 24, 1536, 128), "SD3.5-L": (1, 38, 4429, 64),
          "SDXL": (2, 10, 4096, 64), "long 16k": (1, 24, 16384, 128)}
IMPLS = ["flame", "flash", "cudnn", "efficient"]
LAYOUTS = ["contiguous", "transposed"]
MEMORY_LS = [1024, 2048, 4096, 8192, 16384]
# --smoke: every implementation and layout on two small shapes (head dims 128 and 64, a ragged L), two memory points
SMOKE_SHAPES = {"small b2": (2, 4, 256, 128), "ragged L": (1, 4, 333, 64)}
SMOKE_MEMORY_LS = [512, 1024]

def _log(path, rec):
    with open(path, "a") as f: f.write(json.dumps(rec) + "\n"); f.flush(); os.fsync(f.fileno())

def _fatal(e):  # errors after which this process's CUDA context is unusable
    return any(s in str(e) for s in ("illegal memory access", "CUDA error", "unspecified launch failure", "misaligned address"))

def worker(impl, cases, log):
    import torch
    from flame.kernels.attention import time_attention, attention
    for shape, layout in cases:
        _log(log, {"case": [shape, layout], "status": "start"})
        rec = {"case": [shape, layout]}
        try:
            rec |= {"status": "ok", **time_attention(impl, SHAPES[shape], transposed=layout == "transposed")}
            if impl == "flame":  # and the result is right: compare with SDPA's efficient kernel (fp32 accumulation)
                from flame.kernels.attention import attention_impl
                B, H, L, D = SHAPES[shape]
                q, k, v = (torch.randn(B, L, H, D, dtype=torch.bfloat16, device="cuda").transpose(1, 2) for _ in range(3))
                ref = attention_impl("efficient")(q, k, v).float()
                rec["max_rel_err"] = ((attention(q, k, v).float() - ref).abs().max() / ref.abs().max()).item()
                A = sys.modules["flame.kernels.attention"]  # the module (flame.kernels.attention is also the function)
                rec["configs"] = {n: str(getattr(A, n).best_config) for n in ("_fwd", "_dkdv", "_dq")}  # the autotuner's pick
            torch.cuda.synchronize()
        except Exception as e:
            if _fatal(e):
                _log(log, {"case": [shape, layout], "status": "crash", "error": f"{type(e).__name__}: {str(e)[:300]}"}); os._exit(3)
            rec = {"case": [shape, layout], "status": "error", "error": f"{type(e).__name__}: {str(e)[:300]}"}
        _log(log, rec)
        torch.cuda.empty_cache()

def memory_worker(log):
    "Peak CUDA memory beyond the inputs of one forward + backward, naive (reference) vs flash, bf16 H=24 D=128."
    import torch
    from flame.kernels.attention import attention, attention_reference
    for L in MEMORY_LS:
        rec = {"L": L}
        for name, fn in (("naive", attention_reference), ("flash", attention)):
            q, k, v = (torch.randn(1, 24, L, 128, dtype=torch.bfloat16, device="cuda", requires_grad=True) for _ in range(3))
            if name == "flash": torch.autograd.grad(fn(q, k, v).sum(), (q, k, v))  # tune first: not attention's bytes
            torch.cuda.synchronize(); torch.cuda.reset_peak_memory_stats(); base = torch.cuda.memory_allocated()
            try:
                o = fn(q, k, v); torch.autograd.grad(o, (q, k, v), torch.ones_like(o)); torch.cuda.synchronize()
                rec[name] = torch.cuda.max_memory_allocated() - base
            except torch.OutOfMemoryError: rec[name] = None
            del q, k, v; o = None; torch.cuda.empty_cache()
        _log(log, rec)

def run_impl(impl, timeout, flags=()):
    "All cases of one implementation, in as many fresh subprocesses as crashes require (`flags`: passed on, e.g. --smoke)."
    todo = [(s, l) for s in SHAPES for l in LAYOUTS]
    done = {}
    while todo:
        log = tempfile.mktemp(suffix=".jsonl")
        try:
            p = subprocess.run([sys.executable, __file__, "--worker", impl, "--cases", json.dumps(todo), "--log", log, *flags],
                               capture_output=True, text=True, timeout=timeout)
            tail = (p.stdout + p.stderr)[-400:]
        except subprocess.TimeoutExpired: tail = "timeout"
        recs = [json.loads(l) for l in Path(log).read_text().splitlines()] if Path(log).exists() else []
        started = None
        for r in recs:
            key = tuple(r["case"])
            if r["status"] == "start": started = key
            else: done[key] = r; started = None
        if started is not None: done[started] = {"case": list(started), "status": "crash", "error": tail}
        rest = [c for c in todo if c not in done]
        if rest == todo:  # the worker got nowhere: record the failure for all that is left
            for c in rest: done[c] = {"case": list(c), "status": "error", "error": tail}
            rest = []
        todo = rest
    return [{"impl": impl, "shape": s, "layout": l, "dims": SHAPES[s], **{k: v for k, v in done[(s, l)].items() if k != "case"}}
            for s in SHAPES for l in LAYOUTS]

def table(results, key):
    by = {(r["shape"], r["layout"], r["impl"]): r for r in results}
    lines = [f"{'shape':14} {'layout':10} " + " ".join(f"{i:>9}" for i in IMPLS) + "   /flash  /cudnn"]
    for s in SHAPES:
        for l in LAYOUTS:
            val = lambda i: by.get((s, l, i), {}).get(key) if by.get((s, l, i), {}).get("status") == "ok" else None
            cells = " ".join(f"{val(i):9.0f}" if val(i) else f"{by.get((s, l, i), {}).get('status', '-'):>9}" for i in IMPLS)
            ratio = lambda b: f"{val('flame') / val(b):7.2f}" if val("flame") and val(b) else "      -"
            lines.append(f"{s:14} {l:10} {cells}  {ratio('flash')} {ratio('cudnn')}")
    return "\n".join(lines)

def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", help="the JSON file (default bench/results/attention.json; required with --smoke)")
    ap.add_argument("--impls", default=",".join(IMPLS))
    ap.add_argument("--timeout", type=int, default=240, help="seconds per worker process")
    ap.add_argument("--smoke", action="store_true", help=f"the same run on {SMOKE_SHAPES} and L in {SMOKE_MEMORY_LS}; --out required")
    ap.add_argument("--worker"); ap.add_argument("--cases"); ap.add_argument("--log")
    a = ap.parse_args()
    if a.smoke:
        if not (a.out or a.worker): ap.error("--smoke needs --out (smoke results never go to bench/results/)")
        SHAPES.clear(); SHAPES.update(SMOKE_SHAPES); MEMORY_LS[:] = SMOKE_MEMORY_LS
    flags = ["--smoke"] if a.smoke else []
    if a.worker == "memory": return memory_worker(a.log)
    if a.worker: return worker(a.worker, [tuple(c) for c in json.loads(a.cases)], a.log)
    import torch, triton
    if not torch.cuda.is_available(): ap.exit(2, "bench/attention.py needs a CUDA GPU\n")
    res = {"device": torch.cuda.get_device_name(), "date": datetime.date.today().isoformat(), "torch": torch.__version__,
           "triton": triton.__version__, "dtype": "bfloat16", "shapes": SHAPES, "results": []}
    out = Path(a.out or "bench/results/attention.json"); out.parent.mkdir(parents=True, exist_ok=True)
    for impl in a.impls.split(","):
        res["results"] += run_impl(impl, a.timeout, flags)
        out.write_text(json.dumps(res, indent=1))  # keep what we have if a later part is cut short
        print(f"{impl} done", flush=True)
    log = tempfile.mktemp(suffix=".jsonl")
    subprocess.run([sys.executable, __file__, "--worker", "memory", "--log", log, *flags], timeout=a.timeout)
    rows = [json.loads(l) for l in Path(log).read_text().splitlines()] if Path(log).exists() else []
    res["memory"] = {"device": res["device"], "dtype": "bfloat16", "H": 24, "D": 128, "rows": rows}
    out.write_text(json.dumps(res, indent=1))
    print(f"\n{res['device']}  {res['date']}  torch {res['torch']}  triton {res['triton']}  bf16")
    print("\nforward TFLOP/s\n" + table(res["results"], "fwd_tflops"))
    print("\nforward + backward TFLOP/s\n" + table(res["results"], "fwdbwd_tflops"))
    errs = [f"{r['shape']}/{r['layout']}: {r['max_rel_err']:.1e}" for r in res["results"] if "max_rel_err" in r]
    print("\nFLAME max rel err vs SDPA efficient: " + ", ".join(errs))
    for r in res["results"]:
        if "configs" in r: print(f"{r['shape']:14} {r['layout']:10} {r['configs']}")
    for r in res["results"]:
        if r["status"] != "ok": print(f"{r['impl']} {r['shape']} {r['layout']}: {r['status']} {r.get('error', '')[:160]}")
    print("\npeak memory beyond inputs (GiB), H=24 D=128 fwd+bwd: " + ", ".join(
        f"L={m['L']}: naive {m['naive'] / 2**30 if m['naive'] else float('nan'):.2f} flash {m['flash'] / 2**30:.3f}" for m in rows if m.get("flash")))

if __name__ == "__main__": main()
