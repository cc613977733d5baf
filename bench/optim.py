#!/usr/bin/env python3
"""Optimizer step time and memory on one GPU: FLAME's FlatAdamW, FlatAdamW8bit and FlatAdafactor (and its
update in plain PyTorch, as it was before its Triton kernels) against
torch.optim.AdamW(fused=True) and transformers' Adafactor (relative_step/scale_parameter/warmup_init off) — peers
that need no bitsandbytes — on the same tensors, in one run; bitsandbytes' and torchao's AdamW8bit join when they are
installed. The tensors are one stream of a Flux double block (qkv, proj, two MLP matrices and their biases: 113M fp32
parameters). A step is what a trainer runs, the same for every row: the global gradient norm (read back to the host, as a
trainer logs it), scaling to 1.0 when above it, then the update. Time: median of timed steps
after warm-up (flame.kernels.core.bench: triton's do_bench, CUDA events). State: the storage of the optimizer's own
state after a step (moments, factors, scales: not parameters or gradients). Temporaries: max_memory_allocated during
a step above what was allocated before it. Prints a table, writes JSON.

    python bench/optim.py --out bench/results/optim.json
    python bench/optim.py --smoke --out /tmp/optim.json      # the same run on 110K parameters
"""
import argparse, datetime, gc, json, math, sys
from pathlib import Path
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch
from flame.io import atomic_write
from flame.kernels.core import backend, bench
from flame.optim import make_optimizer, optim_results_table
from flame.tensor import storage_bytes

def flux_stream(width=3072, mlp=4):
    "Parameter shapes of one stream of a Flux double block: qkv, proj, MLP in and out, each with its bias."
    return [(3 * width, width), (3 * width,), (width, width), (width,), (mlp * width, width), (mlp * width,), (width, mlp * width), (width,)]

FULL = dict(width=3072)
SMOKE = dict(width=96)
HP = dict(lr=1e-4, weight_decay=1e-2)

def _tensors(shapes, device, seed=0):
    "Fresh fp32 parameters with gradients (the same numbers for every optimizer)."
    g = torch.Generator(device).manual_seed(seed)
    ps = [torch.nn.Parameter(torch.randn(s, device=device, generator=g) * 0.02) for s in shapes]
    for p in ps: p.grad = torch.randn(p.shape, device=device, generator=g) * 1e-3
    return ps

def _flame(name, reference=False):
    "`reference`: its update in plain PyTorch (flame.kernels.backend), not its Triton kernels: what they gain, in the same run."
    def make(ps):
        opt = make_optimizer(name, ps, max_grad_norm=1.0, **HP)          # takes the parameters' values and their .grad
        def step():
            with backend("reference" if reference else "auto"): opt.step()
        return opt, step, lambda: storage_bytes(*opt.named_state.values())
    return make

def _peer(cls, **kw):
    def make(ps):
        opt = cls(ps, **kw)
        def step():                                             # what FlatOptimizer.step does around the update
            norm = torch.nn.utils.get_total_norm([p.grad for p in ps])   # (a tensor: torch 2.11's clip_grads_with_norm_ takes no float)
            if norm.item() > 1.0: torch.nn.utils.clip_grads_with_norm_(ps, 1.0, norm)
            opt.step()
        return opt, step, lambda: storage_bytes(*[v for st in opt.state.values() for v in st.values() if isinstance(v, torch.Tensor)])
    return make

def peers():
    "name -> maker(params) -> (optimizer, step, state bytes); and the peers that could not be imported, with why."
    from transformers.optimization import Adafactor
    makers = {"flame adamw": _flame("adamw"), "flame adamw8bit": _flame("adamw8bit"), "flame adafactor": _flame("adafactor"),
              "flame adafactor (reference)": _flame("adafactor", reference=True),
              "torch AdamW fused": _peer(torch.optim.AdamW, **HP, fused=True),
              "transformers Adafactor": _peer(Adafactor, **HP, relative_step=False, scale_parameter=False, warmup_init=False)}
    skipped = {}
    for name, mod, attr in (("bitsandbytes AdamW8bit", "bitsandbytes.optim", "AdamW8bit"), ("torchao AdamW8bit", "torchao.optim", "AdamW8bit")):
        try: makers[name] = _peer(getattr(__import__(mod, fromlist=[attr]), attr), **HP)
        except Exception as e: skipped[name] = f"{type(e).__name__}: {str(e)[:120]}"
    return makers, skipped

def measure(make, shapes, device):
    "One optimizer on fresh tensors: median step ms, state bytes, temporaries of a step."
    ps = _tensors(shapes, device)
    opt, step, state = make(ps)
    step()                                                    # state allocated (lazily, for torch's and the peers')
    if device.type == "cuda": torch.cuda.synchronize(); torch.cuda.reset_peak_memory_stats()
    base = torch.cuda.memory_allocated() if device.type == "cuda" else 0
    step()
    temp = torch.cuda.max_memory_allocated() - base if device.type == "cuda" else 0
    ms = bench(step, device=device)
    n = sum(p.numel() for p in ps)
    return {"ms": ms, "state_bytes": state(), "state_bytes_per_param": state() / n, "temp_bytes": temp}

def run(shapes, device, save=lambda res: None):
    makers, skipped = peers()
    res = {"n_params": sum(math.prod(s) for s in shapes), "shapes": [list(s) for s in shapes], "rows": [], "skipped": skipped}
    for name, make in makers.items():
        try: r = {"optimizer": name, **measure(make, shapes, device)}
        except Exception as e:                                # a peer that fails here (a version it does not support) is reported, not fatal
            if name.startswith("flame"): raise
            res["skipped"][name] = f"{type(e).__name__}: {str(e)[:120]}"; continue
        res["rows"].append(r); save(res)
        print(f"{name:24s} {r['ms']:8.3f} ms  state {r['state_bytes_per_param']:6.3f} B/param  temporaries {r['temp_bytes'] / 2**20:8.1f} MiB", flush=True)
        gc.collect()
        if device.type == "cuda": torch.cuda.empty_cache()
    ref = next((r["ms"] for r in res["rows"] if r["optimizer"] == "torch AdamW fused"), float("nan"))
    for r in res["rows"]: r["x_torch_fused"] = ref / r["ms"]
    return res

def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", help="the JSON file (default bench/results/optim.json; required with --smoke)")
    ap.add_argument("--smoke", action="store_true", help=f"the same run at tiny sizes ({SMOKE})")
    a = ap.parse_args()
    if a.smoke and not a.out: ap.error("--smoke needs --out (smoke results never go to bench/results/)")
    if not torch.cuda.is_available(): ap.exit(2, "bench/optim.py needs a CUDA GPU\n")
    import triton
    out = Path(a.out or "bench/results/optim.json")
    out.parent.mkdir(parents=True, exist_ok=True)
    head = {"device": torch.cuda.get_device_name(), "date": datetime.date.today().isoformat(), "torch": torch.__version__,
            "triton": triton.__version__, "hyperparameters": HP, "max_grad_norm": 1.0,
            "step": "global grad norm (.item()), scale to 1.0 if above, update"}
    save = lambda res: atomic_write(out, json.dumps({**head, **res}, indent=1))      # after every row: a cut-off run keeps what it measured
    res = {**head, **run(flux_stream(**(SMOKE if a.smoke else FULL)), torch.device("cuda"), save)}
    save(res)
    print(optim_results_table(res))

if __name__ == "__main__": main()
