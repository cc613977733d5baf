"""Where a checkpointed step's GPU memory goes: FLAME eager, diffusers eager, and FLAME's step captured as CUDA graphs.

For each model (SDXL, SD3.5-Large, SD3.5-Medium at 1024², random bf16 weights, batch 1, the LoRA-like step of bench/sd3.py
with block checkpointing), one step is recorded with PyTorch's memory history (`torch.cuda.memory._record_memory_history`)
and replayed from its trace: the bytes live at the step's peak over what was allocated before it, grouped by the first
line of flame/ or diffusers/ that allocated them (no such line: C++ inside autograd, or cuBLAS's workspace), and the
segments the allocator reserved. For the graphs, the trace is that of the capture (`CudaGraphed`: warm-up, then the
forward and the backward graphs), restricted to the graphs' private pool: what the pool reserves against what is live
in it at its peak. Prints a table last and writes JSON. CUDA only.

    python3 bench/graph_memory.py --out bench/results/graph_memory.json             # SDXL and SD3.5-Large (a minute or two)
    python3 bench/graph_memory.py --models medium --out /tmp/graph_memory.json
    python3 bench/graph_memory.py --smoke --out /tmp/graph_memory.json                # tiny configs
"""
import argparse, collections, contextlib, datetime, gc, json, time
import torch
from flux import diffusers_sdpa, parse
import sd3, sdxl
from sd3 import step
from flame.io import atomic_write

SMOKE = dict(tiny=True, latent=16, txt=12)


def build(kind, a, device, dtype):
    "The model, its diffusers twin, the latents, FLAME's and diffusers' calls, and the graphed call's factory."
    if kind == "sdxl": ours, x, cond = sdxl.model_and_inputs(a, device, dtype); twin = sdxl.diffusers_twin(ours); of = sdxl.calls_of
    else: ours, x, cond = sd3.model_and_inputs(kind, a, device, dtype); twin = sd3.diffusers_twin(ours); of = sd3.calls_of
    ours.checkpointing = True; twin.enable_gradient_checkpointing()
    return ours, twin, x, *of(ours, twin, cond)


def source(frames) -> str:
    "file:line:function of the innermost frame in flame/ or diffusers/ ('C++' when there is none: autograd, cuBLAS)."
    f = next((f for f in frames if "/flame/" in f["filename"] or "/diffusers/" in f["filename"]), None)
    return "C++" if f is None else f"{f['filename'].split('/')[-1]}:{f['line']}:{f['name']}"


def replay(snap, private: bool) -> dict:
    "From a snapshot with its trace: the peak of live bytes (in the graphs' private pool only, if `private`), what was live then by source, and the reserved segments."
    segs = [s for s in snap["segments"] if not private or tuple(s["segment_pool_id"]) != (0, 0)]
    spans = [(s["address"], s["address"] + s["total_size"]) for s in segs]
    live, now, peak, at = {}, 0, 0, {}
    for e in snap["device_traces"][torch.cuda.current_device()]:
        if e["action"] == "alloc" and (not private or any(lo <= e["addr"] < hi for lo, hi in spans)):
            live[e["addr"]] = (e["size"], source(e.get("frames", []))); now += e["size"]
            if now > peak: peak, at = now, dict(live)
        elif e["action"] == "free_completed" and e["addr"] in live: now -= live.pop(e["addr"])[0]
    by = collections.Counter()
    for size, src in at.values(): by[src] += size
    return {"peak_live_GB": peak / 1e9, "segments_GB": sum(s["total_size"] for s in segs) / 1e9, "segments": len(segs),
            "live_at_peak_MB": {k: round(v / 1e6, 1) for k, v in by.most_common(15)}}


@contextlib.contextmanager
def recorded():
    "Record the allocator's history inside; the snapshot is in the yielded list afterwards."
    out = []
    torch.cuda.memory._record_memory_history(enabled="all", context="all", stacks="python", max_entries=2_000_000)
    try: yield out
    finally:
        torch.cuda.synchronize(); out.append(torch.cuda.memory._snapshot()); torch.cuda.memory._record_memory_history(enabled=None)


def measure_model(kind, a, device, dtype) -> dict:
    ours, twin, x, calls, graphed = build(kind, a, device, dtype)
    r = {"name": "SDXL" if kind == "sdxl" else sd3.NAMES[kind], "rows": {}}
    for impl, call in calls.items():
        ctx = (lambda: diffusers_sdpa(device)) if impl == "diffusers" else contextlib.nullcontext
        with ctx():
            for _ in range(a.warmup): step(call, x)            # warm: autotuning and lazy initialisation stay out of the record
        gc.collect(); torch.cuda.empty_cache(); torch.cuda.reset_peak_memory_stats()
        base = torch.cuda.memory_allocated()
        with ctx(), recorded() as snap: step(call, x)
        r["rows"][f"{impl} eager"] = {**replay(snap[0], False), "base_GB": base / 1e9, "max_allocated_GB": torch.cuda.max_memory_allocated() / 1e9,
                                      "max_reserved_GB": torch.cuda.max_memory_reserved() / 1e9}
    del calls, call, twin; gc.collect(); torch.cuda.empty_cache()   # (the diffusers twin: views, but buffers of its own)
    call = graphed()
    torch.cuda.reset_peak_memory_stats()
    with recorded() as snap: step(call, x)                    # the first call: warm-up and capture
    r["rows"]["FLAME graph"] = {**replay(snap[0], True), "max_reserved_GB": torch.cuda.max_memory_reserved() / 1e9}
    del call, ours; gc.collect(); torch.cuda.empty_cache()
    return r


def table(res):
    print(f"\n{res['device']}  {res['date']}  torch {res['torch']}  checkpointed LoRA-like step, {res['latent']}² latent, batch 1")
    print(f"{'model':20s}{'what':18s}{'live at peak GB':>16s}{'segments GB':>13s}  largest sources of what was live (MB)")
    for r in res["models"].values():
        for what, q in r["rows"].items():
            top = ", ".join(f"{k} {v}" for k, v in list(q["live_at_peak_MB"].items())[:4])
            print(f"{r['name']:20s}{what:18s}{q['peak_live_GB']:16.3f}{q['segments_GB']:13.3f}  {top}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    for flag, default, what in (("--models", "sdxl,large", "which, in order: sdxl, large, medium"), ("--latent", 128, "latent side (128 = 1024² pixels)"),
                                ("--txt", 333, "SD3.5's text tokens (77 CLIP + 256 T5; SDXL takes 77)")):
        ap.add_argument(flag, type=type(default), default=default, help=what)
    ap.add_argument("--tiny", action="store_true", help="tiny configs of the same kinds")
    a = parse(ap, SMOKE)
    kinds = a.models.split(",")
    if bad := [k for k in kinds if k not in ("sdxl", *sd3.NAMES)]: ap.error(f"--models: expected sdxl, large and/or medium, got {bad}")
    if not torch.cuda.is_available(): ap.exit(2, "graph_memory: needs a CUDA GPU (the allocator's history is CUDA's)\n")
    device, dtype = torch.device("cuda"), torch.bfloat16
    res = {"device": torch.cuda.get_device_name(), "date": datetime.date.today().isoformat(), "torch": torch.__version__,
           "latent": a.latent, "txt_tokens_sd3": a.txt, "models": {}}
    t0 = time.perf_counter()
    for kind in kinds:
        res["models"][kind] = measure_model(kind, a, device, dtype); res["wall_s"] = time.perf_counter() - t0
        atomic_write(a.out, json.dumps(res, indent=1))
    table(res)


if __name__ == "__main__":
    main()
