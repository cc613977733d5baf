"""Streaming benchmark: a Flux-dev-size model (flame.models.flux.Flux, FluxConfig.dev(), random bf16 weights),
1024x1024 (4096 image + 512 text tokens), batch 1, LoRA-like step (frozen base, gradients through all
activations) with checkpointing. Resident vs streamed under 8 GB and 24 GB budgets, forward-only all
streamed vs the copy floor, predicted (plan) vs measured. Prints a table, writes JSON.

    python3 bench/streaming.py --out bench/results/streaming.json
"""
import argparse, dataclasses, datetime, json, time
import torch
from flame.models.flux import Flux, FluxConfig
from flame.streaming import stream, plan, replan, record, Plan, _ALIGN, _aligned
from flame.io import format_bytes, atomic_write
from flame.tensor import MemoryTimeline, CATEGORIES

def build(device):
    "Flux-dev on meta, materialized on `device` in bf16 with N(0, 0.02) weights, all frozen."
    with torch.device("meta"): m = Flux(FluxConfig.dev())
    m = m.to_empty(device=device).to(torch.bfloat16)
    g = torch.Generator(device=device).manual_seed(0)
    with torch.no_grad():
        for p in m.parameters(): p.normal_(0, 0.02, generator=g)
    m.requires_grad_(False)
    m.checkpointing = True
    return m

def inputs(device):
    g = torch.Generator(device=device).manual_seed(1)
    r = lambda *s: torch.randn(*s, device=device, dtype=torch.bfloat16, generator=g)
    ids = lambda n: torch.zeros(1, n, 3, device=device, dtype=torch.bfloat16)
    img = r(1, 4096, 64).requires_grad_()
    return (img, ids(4096), r(1, 512, 4096), ids(512), torch.full((1,), 0.5, device=device, dtype=torch.bfloat16),
            r(1, 768), torch.full((1,), 3.5, device=device, dtype=torch.bfloat16))

def step(m, x):
    out = m(*x)
    out.float().square().mean().backward()
    x[0].grad = None

def forward(m, x):
    with torch.no_grad(): m(*x)

def timed(fn, warmup=2, reps=5):
    "Median seconds of fn() over `reps` after `warmup`, CUDA events; and the peak allocated bytes."
    for _ in range(warmup): fn()
    torch.cuda.synchronize(); torch.cuda.reset_peak_memory_stats()
    ts = []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record(); fn(); b.record(); torch.cuda.synchronize()
        ts.append(a.elapsed_time(b) / 1e3)
    return sorted(ts)[len(ts) // 2], torch.cuda.max_memory_allocated()

def series(tl, n=1500):
    "Downsampled (t, bytes per category) of a MemoryTimeline."
    ev, cur, rows = tl.events, dict.fromkeys(CATEGORIES, 0), []
    for e in ev:
        cur[e.category] += e.bytes
        rows.append([e.t] + [cur[c] for c in CATEGORIES])
    step_ = max(1, len(rows) // n)
    return {"categories": list(CATEGORIES), "rows": rows[::step_] + rows[-1:]}

def main(out):
    dev = torch.device("cuda")
    res = {"device": torch.cuda.get_device_name(), "torch": torch.__version__, "date": str(datetime.date.today()),
           "model": "flame.models.flux.Flux(FluxConfig.dev()), random bf16 weights", "tokens": "4096 image + 512 text, batch 1",
           "step": "LoRA-like: frozen base, input requires grad, checkpointing, loss = out^2 mean"}
    t0 = time.time()
    m = build(dev); x = inputs(dev)
    res["weights_bytes"] = sum(p.numel() * 2 for p in m.parameters())
    t_res, peak_res = timed(lambda: step(m, x))
    t_fwd_res, _ = timed(lambda: forward(m, x))
    res["resident"] = {"step_ms": t_res * 1e3, "peak_bytes": peak_res, "forward_ms": t_fwd_res * 1e3}
    print(f"resident: step {t_res * 1e3:.0f} ms, peak {format_bytes(peak_res)}, forward {t_fwd_res * 1e3:.0f} ms  [{time.time() - t0:.0f}s]", flush=True)
    # the blocks' weights go to host memory; stream() packs them into one pinned pool and frees them
    for u in m.stream_units():
        for p in u.parameters(): p.data = p.data.cpu()
    torch.cuda.empty_cache()
    res["budgets"] = []
    p8 = plan(m, "8GB", x, device="cuda", step=step)
    res["bandwidth"] = p8.bandwidth
    res["pinned"] = m._flame_streaming.pinned
    res["plan_8GB"] = dataclasses.asdict(p8)
    print(f"probe + plan [{time.time() - t0:.0f}s]: {p8}", flush=True)
    for name, p in (("8GB", p8), ("24GB", replan(p8, "24GB"))):
        stream(m, "cuda", plan=p)
        torch.cuda.empty_cache()
        e = m._flame_streaming
        moved0 = e.bytes_moved
        t, peak = timed(lambda: step(m, x), warmup=2, reps=4)
        moved = (e.bytes_moved - moved0) / 6
        floor = max(t_res, moved / p.bandwidth)
        row = {"budget": name, "plan": repr(p), "resident_units": len(p.resident), "slots": p.slots, "depth": p.depth,
               "predicted_ms": p.predicted * 1e3, "measured_ms": t * 1e3, "peak_bytes": peak, "moved_bytes": moved,
               "floor_ms": floor * 1e3, "ratio_to_floor": t / floor, "ratio_to_resident": t / t_res}
        if name == "8GB":
            with record(m) as rec: step(m, x); torch.cuda.synchronize()
            res["trace_8GB"] = rec.result.to_dict()
            try:
                with MemoryTimeline(device=dev) as tl: step(m, x); torch.cuda.synchronize()
                res["memory_8GB"] = series(tl)
            except Exception as err: res["memory_8GB_error"] = repr(err)
        res["budgets"].append(row)
        print(f"{name}: {row}  [{time.time() - t0:.0f}s]", flush=True)
    # forward only, every block streamed through a 3-slot ring, prefetch depth 2
    sizes = p8.unit_bytes
    pf = Plan(0, sizes, [], 3, _aligned(max(sizes)), 2, True, 3 * _aligned(max(sizes)), 0, p8.bandwidth, p8.fwd, p8.bwd,
              p8.other, True, 0.0, 0.0, 0, 0.0, "cuda")
    pf = dataclasses.replace(pf, predicted_forward=pf.simulate(train=False)["time"])
    stream(m, "cuda", plan=pf)
    torch.cuda.empty_cache()
    t, peak = timed(lambda: forward(m, x), warmup=2, reps=5)
    floor = sum(sizes) / p8.bandwidth
    res["forward_streamed"] = {"measured_ms": t * 1e3, "predicted_ms": pf.predicted_forward * 1e3, "peak_bytes": peak,
                               "floor_ms": floor * 1e3, "ratio_to_floor": t / floor,
                               "diffusers": "compared in the same run by bench/offload_vs_diffusers.py"}
    print(f"forward streamed: {res['forward_streamed']}", flush=True)
    res["wall_s"] = time.time() - t0
    atomic_write(out, json.dumps(res, indent=1))
    print()
    print(f"{'case':<22}{'step ms':>9}{'pred ms':>9}{'floor ms':>9}{'peak':>12}{'moved/step':>13}")
    print(f"{'resident':<22}{t_res * 1e3:>9.0f}{'':>9}{'':>9}{format_bytes(peak_res):>12}{'':>13}")
    for r in res["budgets"]:
        print(f"{'budget ' + r['budget']:<22}{r['measured_ms']:>9.0f}{r['predicted_ms']:>9.0f}{r['floor_ms']:>9.0f}"
              f"{format_bytes(r['peak_bytes']):>12}{format_bytes(r['moved_bytes']):>13}")
    f = res["forward_streamed"]
    print(f"{'forward, all streamed':<22}{f['measured_ms']:>9.0f}{f['predicted_ms']:>9.0f}{f['floor_ms']:>9.0f}{format_bytes(f['peak_bytes']):>12}")
    print(f"bandwidth {res['bandwidth'] / 1e9:.1f} GB/s, pinned {res['pinned']}, {res['device']}")

if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="bench/results/streaming.json")
    main(ap.parse_args().out)
