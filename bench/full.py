"""Layer-wise full fine-tune (issue 15): a model of real size with random weights, every weight trained, its weights,
gradients and optimizer state in host memory (flame.layerwise.HostOptimizer), its blocks streamed to the GPU under a budget
as `flame train --mode full` plans it (flame.policy.plan_memory). Per budget and per place the update runs (on the
GPU, range by range, or on the host): s/step (median after warm-up) and the update's share of it, peak GPU memory, peak host RSS (from the optimizer's construction on: the model's random build and packing before it are not
a trainer's), the bytes moved each way, and the floor: the larger of the compute time
(the same forward + recompute + backward with every block resident and no gradient leaving the GPU, measured first in the
same run) and each direction's bytes over its bandwidth (pinned copies, timed in the same run). Prints a table, writes JSON
(with one step's transfer/compute trace and memory timeline under the first budget, which 23_layerwise plots).

    python3 bench/full.py --model sdxl --budgets 8GB --out bench/results/full_sdxl.json
    python3 bench/full.py --model flux-dev --weights-dtype bf16 --optimizer adafactor --budgets 24GB,12GB --out bench/results/full_flux.json
    python3 bench/full.py --model sdxl --budgets 8GB --updates backward,device --profile --out /tmp/p.json   # where a step's time goes
    python3 bench/full.py --model sdxl --budgets 8GB --updates backward,device --cprofile --out /tmp/c.json  # the CPU's side of it
    python3 bench/full.py --model sdxl --budgets 8GB --updates backward,device --timers --out /tmp/t.json    # its host time by function
    python3 bench/full.py --model sdxl --budgets 8GB --updates auto,device,host --out /tmp/a.json   # what `auto` picks, against both
    python3 bench/full.py --model sdxl --budgets 8GB --updates device --accum 2 --keep-grads off,on --out /tmp/k.json   # micro-batches
    python3 bench/full.py --model sdxl --budgets 8GB --updates backward --graphs off,on --out /tmp/g.json   # blocks as CUDA graphs
    python3 bench/full.py --smoke --out /tmp/full.json        # a tiny Flux, 64 + 8 tokens, a budget of 3 blocks
"""
import argparse, datetime, gc, json, statistics, time
import torch
from flux import parse, random_flux
from sdxl import unit_gain
from streaming import inputs as flux_inputs, series
from flame.graphs import BlockGraphs
from flame.io import atomic_write, format_bytes, parse_size
from flame.layerwise import HostOptimizer, layerwise_host_bytes
from flame.models.flux import Flux, FluxConfig
from flame.models.sdxl import SDXLConfig, SDXLUNet, adm_vector, micro_conditioning
from flame.optim import make_optimizer
from flame.policy import Probe, _largest_unit, _outside_bytes, plan_memory
from flame.train import host_available
from flame.streaming import record, stream
from flame.tensor import MemoryTimeline

SMOKE = dict(model="flux-tiny", budgets="3blocks", warmup=1, reps=2, profile=True, cprofile=True, timers=True, graphs="off,on")   # (the GPU suite runs the profiles too)
DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16}


def host_need(name: str, dtype, optimizer: str, in_backward: bool = False) -> int:
    """Host bytes the layer-wise run keeps: weights, gradients and optimizer state (built on meta), and the copy the blocks stream from
    (`in_backward`: without the blocks' gradients)."""
    with torch.device("meta"):
        m = SDXLUNet(SDXLConfig.base() if name == "sdxl" else SDXLConfig.tiny()) if name.startswith("sdxl") else \
            Flux(FluxConfig.dev() if name == "flux-dev" else FluxConfig.tiny())
    return layerwise_host_bytes(m.to(dtype).requires_grad_(True), optimizer, in_backward)


def build(name: str, dtype, device):
    "The model on the CPU (random weights in `dtype`, all trainable, checkpointed) and its loss on fixed inputs on `device`."
    if name.startswith("flux"):
        cfg = FluxConfig.dev() if name == "flux-dev" else FluxConfig.tiny()
        m = random_flux(cfg, device, dtype).cpu()                        # (drawn on the GPU: on the CPU, Flux-dev took 6 minutes)
        torch.cuda.empty_cache()
        x = flux_inputs(device, cfg, *((4096, 512) if name == "flux-dev" else (64, 8)))
        loss = lambda: m(*x).float().square().mean()
    else:
        cfg, side = (SDXLConfig.base(), 128) if name == "sdxl" else (SDXLConfig.tiny(), 16)
        with torch.device("meta"): m = SDXLUNet(cfg)
        m = unit_gain(m, "cpu", dtype)
        g = torch.Generator(device).manual_seed(1)
        r = lambda *s: torch.randn(*s, device=device, dtype=torch.bfloat16, generator=g)
        x, t, ctx = r(1, 4, side, side), torch.full((1,), 700.0, device=device), r(1, 77, cfg.context_dim)
        y = adm_vector(r(1, cfg.adm_in_channels - 6 * 256), micro_conditioning((8 * side, 8 * side), batch=1).to(device, torch.bfloat16))
        loss = lambda: m(x, t, context=ctx, y=y).float().square().mean()
    m.requires_grad_(True).train()
    m.checkpointing = True
    return m, loss


def autocast(loss):
    with torch.autocast("cuda", torch.bfloat16): return loss()


def backward(loss): autocast(loss).backward()


def bandwidth(n: int = 2**30) -> dict:
    "Bytes/s of one pinned host<->device copy of `n` bytes each way (best of 3, CUDA events)."
    h, d, out = torch.empty(n, dtype=torch.uint8).pin_memory(), torch.empty(n, dtype=torch.uint8, device="cuda"), {}
    for name, dst, src in (("h2d", d, h), ("d2h", h, d)):
        best = float("inf")
        for _ in range(3):
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record(); dst.copy_(src, non_blocking=True); b.record(); torch.cuda.synchronize()
            best = min(best, a.elapsed_time(b) / 1e3)
        out[name] = n / best
    h2, d2, streams, best = torch.empty(n, dtype=torch.uint8).pin_memory(), torch.empty_like(d), (torch.cuda.Stream(), torch.cuda.Stream()), float("inf")
    for _ in range(3):                                                 # both ways at once, as a layer-wise step copies
        torch.cuda.synchronize(); t0 = time.perf_counter()
        for s, dst, src in zip(streams, (d, h2), (h, d2)):
            with torch.cuda.stream(s): dst.copy_(src, non_blocking=True)
        torch.cuda.synchronize(); best = min(best, time.perf_counter() - t0)
    out["both"] = n / best                                             # each direction's bytes/s while the other runs too
    return out


def floors(compute: float, h2d: float, d2h: float, bw: dict) -> tuple[float, float]:
    """The issue's floor — the larger of `compute` and each direction's bytes over its bandwidth alone — and the floor with both
    directions at once: the bytes both ways share at the duplex rate, the rest of the larger direction at its own."""
    lo, hi = sorted((h2d, d2h))
    duplex = lo / bw["both"] + (hi - lo) / (bw["h2d"] if h2d >= d2h else bw["d2h"])
    return max(compute, h2d / bw["h2d"], d2h / bw["d2h"]), max(compute, duplex)


def merged(spans: list) -> list:
    "Sorted, non-overlapping [start, end) intervals covering `spans`."
    out = []
    for a, b in sorted(spans):
        if out and a <= out[-1][1]: out[-1][1] = max(out[-1][1], b)
        else: out.append([a, b])
    return out


def overlap(x: list, y: list) -> float:
    "Length of the intersection of two merged interval lists."
    i = j = 0; tot = 0.0
    while i < len(x) and j < len(y):
        tot += max(0.0, min(x[i][1], y[j][1]) - max(x[i][0], y[j][0]))
        if x[i][1] < y[j][1]: i += 1
        else: j += 1
    return tot


def profile_step(loss, opt) -> dict:
    """One whole step under torch.profiler: seconds the GPU computed and each copy direction ran (alone and at once, as unions
    of their intervals), the span of it all and the step's wall time; the kernels that took longest."""
    from torch.autograd import DeviceType
    from torch.profiler import ProfilerActivity, profile
    if opt.fuses: opt.arm()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        t0 = time.perf_counter(); backward(loss); opt.step(); opt.zero_grad(); torch.cuda.synchronize(); wall = time.perf_counter() - t0
    spans, lanes = {"compute": [], "h2d": [], "d2h": []}, []
    for e in prof.events():
        if e.device_type != DeviceType.CUDA: continue
        kind = "h2d" if "HtoD" in e.name else "d2h" if "DtoH" in e.name else None if e.name.startswith(("Memcpy", "Memset")) else "compute"
        if kind: spans[kind].append((e.time_range.start / 1e6, e.time_range.end / 1e6))
        if kind != "compute": lanes.append((kind or "dtod", getattr(e, "device_resource_id", -1), e.time_range.start, e.time_range.end))
    busy = {k: merged(v) for k, v in spans.items()}
    lanes += [("compute", -1, a * 1e6, b * 1e6) for a, b in merged([(a, b + 20e-6) for a, b in spans["compute"]])]   # (kernels 20 µs apart: one)
    allspans = [s for v in busy.values() for s in v]
    ev = sorted((e for e in prof.key_averages() if e.self_device_time_total > 0), key=lambda e: -e.self_device_time_total)
    return {"wall_s": wall, "gpu_span_s": max(b for _, b in allspans) - min(a for a, _ in allspans),
            **{f"{k}_busy_s": sum(b - a for a, b in v) for k, v in busy.items()},
            "copies_at_once_s": overlap(busy["h2d"], busy["d2h"]), "compute_with_a_copy_s": overlap(busy["compute"], merged(busy["h2d"] + busy["d2h"])),
            "top": [{"kernel": e.key[:100], "s": e.self_device_time_total / 1e6, "calls": e.count} for e in ev[:15]],
            "lanes": sorted(lanes, key=lambda l: l[2])}                  # (kind, stream, start and end µs) of every copy; compute merged


def cprofile_step(loss, opt, top: int = 15) -> dict:
    """One whole step under cProfile (the CPU's side): its wall time, when the backward was queued and when the GPU had done it,
    and the functions that took longest themselves (seconds; cProfile slows Python calls, not the GPU)."""
    import cProfile, pstats
    opt.arm(); torch.cuda.synchronize(); pr = cProfile.Profile()
    t0 = time.perf_counter(); pr.enable(); backward(loss); t1 = time.perf_counter(); torch.cuda.synchronize(); t2 = time.perf_counter()
    opt.step(); opt.zero_grad(); torch.cuda.synchronize(); pr.disable()
    st = pstats.Stats(pr).stats                                        # {(file, line, name): (calls, _, own s, cumulative s, _)}
    rows = sorted(((f"{k[0].split('/')[-1]}:{k[1]}({k[2]})", v[2], v[3], v[1]) for k, v in st.items()), key=lambda r: -r[1])[:top]
    return {"wall_s": time.perf_counter() - t0, "backward_queued_s": t1 - t0, "backward_done_s": t2 - t0,
            "top": [{"function": f, "own_s": a, "cumulative_s": b, "calls": n} for f, a, b, n in rows]}


TIMED = [("flame.layerwise", "HostOptimizer", ["_fold", "_update_unit", "_update_ranges", "_send_back", "_step_on_device", "_range_views"]),
         ("flame.layerwise", None, ["_carve", "_placed", "_gather", "group_norm"]),
         ("flame.streaming", "_Engine", ["acquire", "release", "_issue", "_pre", "_recompute", "_unbind"])]   # (module, class, functions)


def timers_step(loss, opt) -> dict:
    """One whole step with the host time of the update's and the engine's functions (`TIMED`, and the optimizer's `_apply`) summed:
    {name: (seconds, calls)}, each call's time with what it calls (a function inside itself counted once), by `perf_counter` around
    each: a microsecond a call, where cProfile slows every Python call. Also the step's wall time and when its backward was queued."""
    import functools, importlib
    spent, calls, inside, saved = {}, {}, set(), []
    def timer(owner, name, tag):
        f = getattr(owner, name)
        @functools.wraps(f)
        def g(*a, **k):
            if tag in inside: return f(*a, **k)
            inside.add(tag); t = time.perf_counter()
            try: return f(*a, **k)
            finally: spent[tag] = spent.get(tag, 0.0) + time.perf_counter() - t; calls[tag] = calls.get(tag, 0) + 1; inside.discard(tag)
        saved.append((owner, name, f)); setattr(owner, name, g)
    for mod, cls, names in TIMED:
        owner = importlib.import_module(mod) if cls is None else getattr(importlib.import_module(mod), cls)
        for n in names:
            if hasattr(owner, n): timer(owner, n, f"{cls or mod}.{n}")   # (absent: an older version of the code)
    timer(type(opt.opt), "_apply", f"{type(opt.opt).__name__}._apply")
    try:
        if opt.fuses: opt.arm()
        torch.cuda.synchronize(); t0 = time.perf_counter(); backward(loss); t1 = time.perf_counter()
        opt.step(); opt.zero_grad(); torch.cuda.synchronize(); wall = time.perf_counter() - t0
    finally:
        for owner, name, f in reversed(saved): setattr(owner, name, f)
    return {"wall_s": wall, "backward_queued_s": t1 - t0, "functions": {k: [spent[k], calls[k]] for k in sorted(spent, key=spent.get, reverse=True)}}


def timed_steps(m, loss, opt, warmup: int, reps: int, accum: int = 1, graphs=None) -> dict:
    """Median seconds of whole steps (`accum` micro-batches' forward and backward, the update) and of an update alone; peak GPU bytes;
    bytes moved each way per step. A step is timed as a trainer runs it — from one backward's end (its loss read) to the next's,
    the update's copies left running as the next forward is queued (`HostOptimizer._hand_on`) — then one more step times its
    update alone, waited for. With `graphs` (a `BlockGraphs`): its captures, those in the timed steps (none expected), and the peak
    reserved, which counts the graphs' memory pool (their allocations are not the allocator's)."""
    e, ends = m._flame_streaming, []
    def fwd_bwd():
        for k in range(accum):
            if k == accum - 1: opt.arm()                               # (the last: blocks updated in it, "backward"; sums handed on)
            backward(loss)
        torch.cuda.synchronize()                                       # (a trainer reads the loss here)
    for i in range(warmup + reps + 1):
        if i == warmup: torch.cuda.synchronize(); torch.cuda.reset_peak_memory_stats(); moved0, opt0 = e.bytes_moved, list(opt.moved); c0 = graphs and graphs.captures
        if i == warmup + reps: moved1, opt1 = e.bytes_moved, list(opt.moved)   # (the timed steps': not the last one's)
        fwd_bwd(); ends.append(time.perf_counter())
        if i < warmup + reps: opt.step(); opt.zero_grad()
    opt.step(); opt.zero_grad(); torch.cuda.synchronize()
    update_s, steps = time.perf_counter() - ends[-1], [b - a for a, b in zip(ends[warmup:], ends[warmup + 1:])]
    resident = sum(u.nbytes for u in e.units if u.index in e.resident) if opt.update == "host" else 0   # write_back copies them in
    fused = sum(hi - lo for i, (lo, hi, *_) in opt._spans.items() if accum == 1 or (e.grad_sums and i in e.resident)) if opt.fuses else 0
    #      (those gradients never leave the GPU: with micro-batches, only the units whose sums are on it)
    kept = sum(t.nbytes for t in e.grad_sums.values()) if opt.accumulate else 0          # (summed on the device: to the host once)
    grads = accum * (opt.opt.grads.flat.nbytes - kept) + kept - fused * opt.opt.grads.flat.element_size()   # into the fp32 host buffer:
    #      each other gradient once a micro-batch
    return {"update": "backward" if opt.fuses else opt.update, "step_s": statistics.median(steps), "update_s": update_s,
            "peak_bytes": torch.cuda.max_memory_allocated(), "h2d_bytes": (moved1 - moved0 + opt1[0] - opt0[0]) / reps + resident,
            "d2h_bytes": grads + (opt1[1] - opt0[1]) / reps, "reserved_peak_bytes": torch.cuda.max_memory_reserved(),
            **({"captures": graphs.captures, "captures_timed": graphs.captures - c0, "graphs_kept": len(graphs.graphs)} if graphs else {})}


def rss(key: str = "VmHWM") -> int:
    "This process's host memory: its peak (since the last `reset_peak_rss`), or `key`'s line of /proc/self/status."
    return int(next(l for l in open("/proc/self/status") if l.startswith(key)).split()[1]) * 1024


def reset_peak_rss(): open("/proc/self/clear_refs", "w").write("5")


def budget_bytes(spec: str, m) -> int:
    "A size ('8GB'), or 'Nblocks': the weights outside the blocks twice (with their gradients), N largest blocks and 128 MiB (cuBLAS workspaces, activations)."
    if not spec.endswith("blocks"): return parse_size(spec, "budget")
    return 2 * _outside_bytes(m) + int(spec[:-6]) * _largest_unit(m, trainable=True) + 2**27


def main(a):
    dev, dtype, t0 = torch.device("cuda"), DTYPES[a.weights_dtype], time.time()
    m, loss = build(a.model, dtype, dev)
    n, weights = sum(p.numel() for p in m.parameters()), sum(p.nbytes for p in m.parameters())
    budgets = [(b, budget_bytes(b, m)) for b in a.budgets.split(",")]
    res = {"device": torch.cuda.get_device_name(), "torch": torch.__version__, "date": str(datetime.date.today()), "model": a.model,
           "params": n, "weights_dtype": a.weights_dtype, "optimizer": a.optimizer, "batch": 1, "warmup": a.warmup, "reps": a.reps,
           "step": "full fine-tune: every weight trains; loss = mean(out²) under bf16 autocast; blocks checkpointed",
           "floor": "max(compute with every block resident, H2D bytes / H2D bandwidth, D2H bytes / D2H bandwidth)",
           "floor_both": "max(compute, the bytes both ways share at the rate each way gets while both run + the rest of the larger way at its own)",
           "bandwidth": bandwidth(), "budgets": []}
    print(f"{a.model}: {n / 1e9:.2f}B parameters, {format_bytes(weights)} of {a.weights_dtype} weights [{time.time() - t0:.0f}s]", flush=True)
    stream(m, dev, weights + 2**31, trainable=True)                    # every block resident; no gradient leaves the GPU
    rest = [p for p in m.parameters() if p.requires_grad and p.numel() and p.device.type == "cuda"]
    def compute(warmup: int) -> float:
        "Median seconds of `a.reps` forward + recompute + backward passes after `warmup` more, no gradient kept."
        ts = []
        for _ in range(warmup + a.reps):
            torch.cuda.synchronize(); s = time.perf_counter()
            backward(loss)
            for p in rest: p.grad = None
            torch.cuda.synchronize(); ts.append(time.perf_counter() - s)
        return statistics.median(ts[warmup:])
    res["compute_s"] = compute(a.warmup)
    print(f"compute (all resident): {res['compute_s'] * 1e3:.0f} ms [{time.time() - t0:.0f}s]", flush=True)
    res["rss_built"] = rss()                                           # (the random model drawn, copied to the host, packed: a trainer loads a file)
    reset_peak_rss()                                                   # the host RSS reported: from the optimizer's construction on
    opt = None
    for keep, update in [(k, u) for k in a.keep_grads.split(",") for u in a.updates.split(",")]:   # "backward": on the device, each block
        if opt is not None: opt.close(); opt = None; gc.collect()                                    #  in its backward (clip by unit)
        m._flame_streaming.keep_grads = keep == "on"                   # (what the planner's streams below count: `flame train`'s choice)
        opt = HostOptimizer(m, lambda ps: make_optimizer(a.optimizer, ps, lr=1e-5, weight_decay=0.01, max_grad_norm=1.0), dtype,
                            update="device" if update == "backward" else update, clip="unit" if update == "backward" else "global",
                            accumulate=update != "backward" or a.accum > 1)   # (one micro-batch: the blocks' gradients never reach the host)
        res.setdefault("rss_after_optimizer", rss())
        for name, b in budgets:
            mp = plan_memory(m, opt, Probe(lambda: autocast(loss), opt), dev, b)
            torch.cuda.empty_cache()
            for graphs in a.graphs.split(","):                         # one plan, timed with eager blocks and with graphed ones
                bg = BlockGraphs([u.module for u in m._flame_streaming.units]) if graphs == "on" else None
                warmup = a.warmup if bg is None else max(a.warmup, 3)  # (graphs: the first steps capture)
                row = {"budget": name, "budget_bytes": b, "policy": mp.policy, "plan": repr(mp.stream), "measured": mp.measured,
                       "accum": a.accum, "keep_grads": keep, "graphs": graphs, **timed_steps(m, loss, opt, warmup, a.reps, a.accum, bg)}
                if update == "auto": row["auto"] = {"chose": opt.update, "predicted_update_s": opt.update_times}   # (None: nothing timed)
                row["rss_peak_bytes"] = rss()
                floor(row, res)
                res["budgets"].append(row)
                print(f"budget {name}, update on the {update}, graphs {graphs}: {row} [{time.time() - t0:.0f}s]", flush=True)
                atomic_write(a.out, json.dumps(res, indent=1))
                if name == budgets[0][0]: extras(a, res, m, loss, opt, update if bg is None else f"{update}+graphs", dev)
                if bg is not None: bg.close(); torch.cuda.empty_cache()
    if "on" in a.graphs.split(","):                                    # the floor's compute again, each block replayed as CUDA graphs:
        opt.close(); opt = None; gc.collect()                          #  measured last, every block resident again (measured first, it
        stream(m, dev, weights + 2**31, trainable=True)                #  left the planner's probe 1.5 GiB more to count: H200, 2026-11-29)
        with BlockGraphs([u.module for u in m._flame_streaming.units]): res["compute_graphed_s"] = compute(max(a.warmup, 2))
        print(f"compute (all resident, blocks as CUDA graphs): {res['compute_graphed_s'] * 1e3:.0f} ms [{time.time() - t0:.0f}s]", flush=True)
        for row in res["budgets"]: floor(row, res)
    res["wall_s"] = time.time() - t0
    atomic_write(a.out, json.dumps(res, indent=1))
    table(res)


def floor(row: dict, res: dict):
    "The row's floors and its ratios to them, from the faster of the compute times measured (eager, blocks as CUDA graphs)."
    compute = min(res["compute_s"], res.get("compute_graphed_s", float("inf")))
    row["floor_s"], row["floor_both_s"] = floors(row["accum"] * compute, row["h2d_bytes"], row["d2h_bytes"], res["bandwidth"])
    row["ratio_to_floor"], row["ratio_to_floor_both"] = row["step_s"] / row["floor_s"], row["step_s"] / row["floor_both_s"]


def extras(a, res, m, loss, opt, update, dev):
    "Under the first budget: one step's trace and memory timeline (once), and the profiles asked for, filed under `update`."
    if "trace" not in res:
        with record(m) as rec: backward(loss); torch.cuda.synchronize()
        res["trace"] = rec.result.to_dict()
        opt.zero_grad()
        if opt.fuses: opt.arm()
        with MemoryTimeline(m, opt, device=dev) as tl: backward(loss); opt.step(); opt.zero_grad(); torch.cuda.synchronize()
        res["memory"] = series(tl)
    if a.cprofile:
        res.setdefault("cprofile", {})[update] = cp = cprofile_step(loss, opt)
        print(f"cprofile ({update}): " + ", ".join(f"{k} {v:.3f}" for k, v in cp.items() if k != "top"), flush=True)
        for k in cp["top"]: print(f"  {k['own_s'] * 1e3:9.1f} ms own {k['cumulative_s'] * 1e3:9.1f} ms with callees {k['calls']:6d}x  {k['function']}")
    if a.timers:
        res.setdefault("timers", {})[update] = tm = timers_step(loss, opt)
        print(f"timers ({update}): step {tm['wall_s']:.3f} s, backward queued at {tm['backward_queued_s']:.3f} s", flush=True)
        for k, (sec, n) in tm["functions"].items(): print(f"  {sec * 1e3:9.1f} ms {n:6d}x {sec / n * 1e6:9.1f} µs a call  {k}")
    if a.profile:
        res.setdefault("profile", {})[update] = prof = profile_step(loss, opt)
        print(f"profile ({update}): " + ", ".join(f"{k} {v:.3f}" for k, v in prof.items() if k not in ("top", "lanes")), flush=True)
        for k in prof["top"]: print(f"  {k['s'] * 1e3:9.1f} ms {k['calls']:6d}x  {k['kernel']}")


def table(res):
    bw = res["bandwidth"]
    print(f"\n{res['model']}, {res['params'] / 1e9:.2f}B parameters, {res['weights_dtype']} weights, {res['optimizer']}; {res['device']}, {res['date']}")
    g = f", {res['compute_graphed_s'] * 1e3:.0f} ms with blocks as CUDA graphs" if "compute_graphed_s" in res else ""
    print(f"compute {res['compute_s'] * 1e3:.0f} ms (every block resident{g}); H2D {bw['h2d'] / 1e9:.1f} GB/s, D2H {bw['d2h'] / 1e9:.1f} GB/s, "
          f"each way with both at once {bw['both'] / 1e9:.1f} GB/s")
    print(f"{'budget':<10}{'update on':>10}{'graphs':>7}{'accum':>6}{'sums':>5}{'s/step':>8}{'update s':>10}{'floor s':>9}{'× floor':>9}{'× both':>8}{'GPU peak':>11}{'reserved':>11}{'host RSS':>11}{'H2D/step':>11}{'D2H/step':>11}")
    over = lambda r, k: "*" if r.get(k, 0) > r["budget_bytes"] else " "   # (marks a peak over its budget: graphs are not planned for)
    for r in res["budgets"]:
        print(f"{r['budget']:<10}{r['update']:>10}{r.get('graphs', 'off'):>7}{r.get('accum', 1):>6}{r.get('keep_grads', 'off'):>5}{r['step_s']:>8.2f}{r['update_s']:>10.2f}{r['floor_s']:>9.2f}{r['ratio_to_floor']:>9.2f}{r['ratio_to_floor_both']:>8.2f}"
              f"{format_bytes(r['peak_bytes']):>10}{over(r, 'peak_bytes')}{format_bytes(r.get('reserved_peak_bytes', 0)):>10}{over(r, 'reserved_peak_bytes')}"
              f"{format_bytes(r['rss_peak_bytes']):>11}{format_bytes(r['h2d_bytes']):>11}{format_bytes(r['d2h_bytes']):>11}")
    if any(over(r, k) == "*" for r in res["budgets"] for k in ("peak_bytes", "reserved_peak_bytes")): print("* over the budget")


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", choices=["flux-dev", "sdxl", "flux-tiny", "sdxl-tiny"], default="sdxl")
    ap.add_argument("--optimizer", choices=["adamw", "adamw-bf16", "adamw8bit", "adafactor"], default="adamw")
    ap.add_argument("--weights-dtype", choices=list(DTYPES), default="fp32")
    ap.add_argument("--updates", default="device,host", help="where the update runs, each measured: device (after the backward; the default), "
                    "host, backward (each block on the device in its backward, clipped by block), auto (whichever of device and host "
                    "HostOptimizer times faster at its start: the row keeps its choice and both predictions)")
    ap.add_argument("--profile", action="store_true", help="also one whole step under torch.profiler per update place (first budget): "
                    "how long compute and each copy direction were busy, alone and at once, and the longest kernels")
    ap.add_argument("--cprofile", action="store_true", help="also one whole step under cProfile per update place (first budget): "
                    "the CPU's side — when the backward was queued, when the GPU had done it, the functions that took longest")
    ap.add_argument("--timers", action="store_true", help="also one whole step with the host time of the update's and the engine's "
                    "functions summed (first budget; TIMED): what the CPU spends where, at a microsecond a call")
    ap.add_argument("--budgets", default="8GB", help="device budgets ('Nblocks': the weights outside the blocks twice + N largest blocks + 128 MiB)")
    ap.add_argument("--graphs", default="off", help="off, on or both (off,on): the blocks replayed as CUDA graphs (flame.graphs.BlockGraphs), "
                    "timed on the same plan; the floor's compute is the faster of eager and graphed")
    ap.add_argument("--accum", type=int, default=1, help="micro-batches per step (each the same batch)")
    ap.add_argument("--keep-grads", default="off", help="off, on or both (off,on): resident blocks' gradients summed on the GPU across "
                    "micro-batches (the planner counts them: flame train's choice with --grad-accum above 1), or each sent to the host")
    a = parse(ap, SMOKE, warmup=1, reps=3)
    if not torch.cuda.is_available(): ap.exit(2, "bench/full.py needs a CUDA GPU\n")
    need, have = host_need(a.model, DTYPES[a.weights_dtype], a.optimizer, a.updates == "backward"), host_available()
    if need > have: ap.exit(2, f"bench/full.py: {a.model} with {a.weights_dtype} weights and {a.optimizer} keeps about {format_bytes(need)} in host "
                               f"memory, {format_bytes(have)} is available (--weights-dtype bf16, --optimizer adafactor and --updates backward shrink it)\n")
    main(a)
