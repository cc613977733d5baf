"""Streaming benchmark: a Flux-dev-size model (flame.models.flux.Flux, FluxConfig.dev(), random bf16 weights),
1024x1024 (4096 image + 512 text tokens), batch 1, LoRA-like step (frozen base, gradients through all
activations) with checkpointing. Resident vs streamed under 8 GB and 24 GB budgets, forward-only all
streamed vs the copy floor, predicted (plan) vs measured. Prints a table, writes JSON.

With --base-dtype fp8 (issue 17) the resident bf16 step is measured first, then the model's linear weights become
e4m3fn (flame.models.fp8.to_fp8, Flux's skip list) and the same rows follow on the fp8 base; each row then also
gives its ratio to the resident *bf16* step and the host RSS after it. --modulation bf16 | fp8 keeps the blocks'
modulation in bf16 (FLUX_SKIP_MODULATION) or puts it in fp8 too (FLUX_SKIP); by default Flux.fp8_skip decides, as in
`flame train`. The resident fp8 step is also timed dequantizing per layer once per pass and per matmul
(flame.models.fp8.dequantize_weights(m, "layer" | "matmul")), against the default of a block's weights in one launch per
checkpointed pass; the first budget's row is also timed per layer.

    python3 bench/streaming.py --out bench/results/streaming.json
    python3 bench/streaming.py --base-dtype fp8 --budgets 8GB,4GB --out bench/results/streaming_fp8.json
    python3 bench/streaming.py --smoke --out /tmp/s.json    # tiny Flux, 64 + 8 tokens, budgets just above the minimum
"""
import argparse, dataclasses, datetime, json, time
import torch
from flux import parse
from flame.models.flux import Flux, FluxConfig
from flame.streaming import stream, plan, replan, record, Plan, _aligned
from flame.io import format_bytes, atomic_write
from flame.tensor import MemoryTimeline, CATEGORIES

# --smoke: the same run on the tiny Flux, under budgets just above the planner's minimum (8 GB would hold it whole):
# every block streamed, then one resident. The JSON keys stay the real run's (plan_8GB, trace_8GB, memory_8GB: the
# first budget's); each row says its budget.
SMOKE = dict(size="tiny", tokens=64, txt=8, budgets="min+1,min+1.5", warmup=1, reps=2)

def build(device, size="dev"):
    "Flux-dev (or tiny) on meta, materialized on `device` in bf16 with N(0, 0.02) weights, all frozen."
    with torch.device("meta"): m = Flux(FluxConfig.dev() if size == "dev" else FluxConfig.tiny())
    m = m.to_empty(device=device).to(torch.bfloat16)
    g = torch.Generator(device=device).manual_seed(0)
    with torch.no_grad():
        for p in m.parameters(): p.normal_(0, 0.02, generator=g)
    m.requires_grad_(False)
    m.checkpointing = True
    return m

def inputs(device, c: FluxConfig, tokens=4096, txt=512):
    g = torch.Generator(device=device).manual_seed(1)
    r = lambda *s: torch.randn(*s, device=device, dtype=torch.bfloat16, generator=g)
    ids = lambda n: torch.zeros(1, n, 3, device=device, dtype=torch.bfloat16)
    img = r(1, tokens, c.in_channels).requires_grad_()
    return (img, ids(tokens), r(1, txt, c.context_in_dim), ids(txt), torch.full((1,), 0.5, device=device, dtype=torch.bfloat16),
            r(1, c.vec_in_dim), torch.full((1,), 3.5, device=device, dtype=torch.bfloat16))

def step(m, x):
    out = m(*x)
    out.float().square().mean().backward()
    x[0].grad = None

def forward(m, x):
    with torch.no_grad(): m(*x)

def timed(fn, warmup=2, reps=5):
    "Median seconds of fn() over `reps` after `warmup`, CUDA events; the peak allocated bytes; each rep's milliseconds."
    for _ in range(warmup): fn()
    torch.cuda.synchronize(); torch.cuda.reset_peak_memory_stats()
    ts = []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record(); fn(); b.record(); torch.cuda.synchronize()
        ts.append(a.elapsed_time(b) / 1e3)
    return sorted(ts)[len(ts) // 2], torch.cuda.max_memory_allocated(), [t * 1e3 for t in ts]

def series(tl, n=1500):
    "Downsampled (t, bytes per category) of a MemoryTimeline."
    ev, cur, rows = tl.events, dict.fromkeys(CATEGORIES, 0), []
    for e in ev:
        cur[e.category] += e.bytes
        rows.append([e.t] + [cur[c] for c in CATEGORIES])
    step_ = max(1, len(rows) // n)
    return {"categories": list(CATEGORIES), "rows": rows[::step_] + rows[-1:]}

def rss() -> int:
    "This process's resident host memory now (bytes; pinned pages count)."
    return int(next(l for l in open("/proc/self/status") if l.startswith("VmRSS")).split()[1]) * 1024

def blocks_to_host(model):
    "The weights of `model`'s stream units moved to host memory (stream() packs them into its pinned pool), the device's cache emptied."
    for u in model.stream_units():
        for p in u.parameters(): p.data = p.data.cpu()
    if torch.cuda.is_available(): torch.cuda.empty_cache()

def budget_plan(measured: Plan, budget: str) -> Plan:
    "The plan under `budget`: a size ('8GB'), or 'min+N': the planner's minimum plus N (may be fractional) largest blocks."
    if budget.startswith("min+"): return replan(measured, measured.min_budget + int(float(budget[4:]) * max(measured.unit_bytes)))
    return replan(measured, budget)

def main(out, size="dev", tokens=4096, txt=512, budgets=("8GB", "24GB"), warmup=2, reps=5, base_dtype="bf16",
         modulation=None):
    dev = torch.device("cuda")
    res = {"device": torch.cuda.get_device_name(), "torch": torch.__version__, "date": str(datetime.date.today()),
           "model": f"flame.models.flux.Flux(FluxConfig.{size}()), random bf16 weights", "tokens": f"{tokens} image + {txt} text, batch 1",
           "step": "LoRA-like: frozen base, input requires grad, checkpointing, loss = out^2 mean"}
    t0 = time.time()
    m = build(dev, size); x = inputs(dev, m.config, tokens, txt)
    res["weights_bytes"] = sum(p.numel() * 2 for p in m.parameters())
    t_res, peak_res, steps = timed(lambda: step(m, x), warmup, reps)
    t_fwd_res, _, _ = timed(lambda: forward(m, x), warmup, reps)
    res["resident"] = {"step_ms": t_res * 1e3, "peak_bytes": peak_res, "forward_ms": t_fwd_res * 1e3, "rss_bytes": rss(), "steps_ms": steps}
    print(f"resident: step {t_res * 1e3:.0f} ms, peak {format_bytes(peak_res)}, forward {t_fwd_res * 1e3:.0f} ms  [{time.time() - t0:.0f}s]", flush=True)
    t_bf16, res["base_dtype"] = t_res, base_dtype
    if base_dtype == "fp8":     # the bf16 rows above stay as the reference; every row below runs on the fp8 base
        from flame.models.fp8 import to_fp8, host_bytes, dequantize_weights, FLUX_SKIP_MODULATION, FLUX_SKIP
        res["resident_bf16"] = res.pop("resident")
        skip = {"bf16": FLUX_SKIP_MODULATION, "fp8": FLUX_SKIP, None: Flux.fp8_skip}[modulation]
        res["fp8_skip"] = list(skip)
        to_fp8(m, skip); torch.cuda.empty_cache()
        res["weights_bytes"] = host_bytes(m)
        t_res, peak_res, steps = timed(lambda: step(m, x), warmup, reps)
        t_fwd_res, _, _ = timed(lambda: forward(m, x), warmup, reps)
        res["resident"] = {"step_ms": t_res * 1e3, "peak_bytes": peak_res, "forward_ms": t_fwd_res * 1e3, "rss_bytes": rss(),
                           "ratio_to_resident_bf16": t_res / t_bf16, "steps_ms": steps}
        print(f"resident fp8: step {t_res * 1e3:.0f} ms, peak {format_bytes(peak_res)}, forward {t_fwd_res * 1e3:.0f} ms  [{time.time() - t0:.0f}s]", flush=True)
        for how in ("layer", "matmul"):                  # the same step dequantizing each layer once per pass, or per matmul
            dequantize_weights(m, how)
            t_how, peak_how, steps = timed(lambda: step(m, x), warmup, reps)
            res[f"resident_per_{how}"] = {"step_ms": t_how * 1e3, "peak_bytes": peak_how, "ratio_to_resident_bf16": t_how / t_bf16, "steps_ms": steps}
            print(f"resident fp8, dequantized per {how}: step {t_how * 1e3:.0f} ms, peak {format_bytes(peak_how)}  [{time.time() - t0:.0f}s]", flush=True)
        dequantize_weights(m, "block")
    blocks_to_host(m)                                        # stream() packs them into one pinned pool and frees them
    res["budgets"] = []
    measured = plan(m, "auto", x, device="cuda", step=step)    # the probe's measurements; each budget then picks a plan
    p8 = budget_plan(measured, budgets[0])
    res["bandwidth"] = p8.bandwidth
    res["pinned"] = m._flame_streaming.pinned
    res["plan_8GB"] = dataclasses.asdict(p8)
    print(f"probe + plan [{time.time() - t0:.0f}s]: {p8}", flush=True)
    for name in budgets:
        p = budget_plan(measured, name)
        stream(m, "cuda", plan=p)
        torch.cuda.empty_cache()
        e = m._flame_streaming
        moved0 = e.bytes_moved
        t, peak, steps = timed(lambda: step(m, x), warmup, reps)
        moved = (e.bytes_moved - moved0) / (warmup + reps)
        floor = max(t_res, moved / p.bandwidth)
        row = {"budget": name, "plan": repr(p), "resident_units": len(p.resident), "slots": p.slots, "depth": p.depth,
               "predicted_ms": p.predicted * 1e3, "measured_ms": t * 1e3, "peak_bytes": peak, "moved_bytes": moved,
               "floor_ms": floor * 1e3, "ratio_to_floor": t / floor, "ratio_to_resident": t / t_res,
               "ratio_to_resident_bf16": t / t_bf16, "rss_bytes": rss(), "steps_ms": steps}
        if name == budgets[0] and base_dtype == "fp8":     # the same budget dequantizing each layer on its own, for comparison
            dequantize_weights(m, "layer")
            t_layer, _, steps = timed(lambda: step(m, x), warmup, reps)
            dequantize_weights(m, "block")
            row["measured_ms_per_layer"], row["steps_ms_per_layer"] = t_layer * 1e3, steps
        if name == budgets[0]:
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
    t, peak, _ = timed(lambda: forward(m, x), warmup, reps)
    floor = sum(sizes) / p8.bandwidth
    res["forward_streamed"] = {"measured_ms": t * 1e3, "predicted_ms": pf.predicted_forward * 1e3, "peak_bytes": peak,
                               "floor_ms": floor * 1e3, "ratio_to_floor": t / floor,
                               "diffusers": "compared in the same run by bench/offload_vs_diffusers.py"}
    print(f"forward streamed: {res['forward_streamed']}", flush=True)
    res["wall_s"] = time.time() - t0
    atomic_write(out, json.dumps(res, indent=1))
    print()
    print(f"{'case':<22}{'step ms':>9}{'pred ms':>9}{'floor ms':>9}{'× bf16':>8}{'peak':>12}{'moved/step':>13}{'host RSS':>12}")
    if "resident_bf16" in res:
        print(f"{'resident, bf16 base':<22}{t_bf16 * 1e3:>9.0f}{'':>9}{'':>9}{1:>8.2f}{format_bytes(res['resident_bf16']['peak_bytes']):>12}"
              f"{'':>13}{format_bytes(res['resident_bf16']['rss_bytes']):>12}")
    for how in ("matmul", "layer"):
        if (r := res.get(f"resident_per_{how}")) is not None:
            print(f"{'resident, per ' + how:<22}{r['step_ms']:>9.0f}{'':>9}{'':>9}{r['ratio_to_resident_bf16']:>8.2f}{format_bytes(r['peak_bytes']):>12}")
    print(f"{'resident':<22}{t_res * 1e3:>9.0f}{'':>9}{'':>9}{t_res / t_bf16:>8.2f}{format_bytes(peak_res):>12}{'':>13}"
          f"{format_bytes(res['resident']['rss_bytes']):>12}")
    for r in res["budgets"]:
        if "measured_ms_per_layer" in r:
            print(f"{'budget ' + r['budget'] + ', per layer':<22}{r['measured_ms_per_layer']:>9.0f}{'':>9}{'':>9}{r['measured_ms_per_layer'] / (t_bf16 * 1e3):>8.2f}")
        print(f"{'budget ' + r['budget']:<22}{r['measured_ms']:>9.0f}{r['predicted_ms']:>9.0f}{r['floor_ms']:>9.0f}{r['ratio_to_resident_bf16']:>8.2f}"
              f"{format_bytes(r['peak_bytes']):>12}{format_bytes(r['moved_bytes']):>13}{format_bytes(r['rss_bytes']):>12}")
    f = res["forward_streamed"]
    print(f"{'forward, all streamed':<22}{f['measured_ms']:>9.0f}{f['predicted_ms']:>9.0f}{f['floor_ms']:>9.0f}{format_bytes(f['peak_bytes']):>12}")
    print(f"bandwidth {res['bandwidth'] / 1e9:.1f} GB/s, pinned {res['pinned']}, {res['device']}")

if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--size", choices=["dev", "tiny"], default="dev")
    ap.add_argument("--tokens", type=int, default=4096, help="image tokens")
    ap.add_argument("--txt", type=int, default=512, help="text tokens")
    ap.add_argument("--budgets", help="device budgets of the streamed steps ('min+N': the planner's minimum + N blocks; "
                                      "default 8GB,24GB, with --base-dtype fp8 8GB,4GB)")
    ap.add_argument("--base-dtype", choices=["bf16", "fp8"], default="bf16", help="fp8: the rows on an e4m3fn base, after the resident bf16 step")
    ap.add_argument("--modulation", choices=["bf16", "fp8"], help="with --base-dtype fp8: the blocks' modulation kept in bf16 "
                                                                  "(FLUX_SKIP_MODULATION) or in fp8 too (FLUX_SKIP); default Flux.fp8_skip")
    a = parse(ap, SMOKE, "bench/results/streaming.json")
    if a.base_dtype == "fp8" and a.out == "bench/results/streaming.json": a.out = "bench/results/streaming_fp8.json"
    a.budgets = a.budgets or ("8GB,4GB" if a.base_dtype == "fp8" else "8GB,24GB")
    if not torch.cuda.is_available(): ap.exit(2, "bench/streaming.py needs a CUDA GPU\n")
    if a.modulation and a.base_dtype != "fp8": ap.error("--modulation goes with --base-dtype fp8")
    main(a.out, a.size, a.tokens, a.txt, a.budgets.split(","), a.warmup, a.reps, a.base_dtype, a.modulation)
