"""SD3.5 on one GPU: FLAME's SD3 vs diffusers' SD3Transformer2DModel (same weights, same run), and FLAME streamed under a budget.

SD3.5-Large size (SD3Config.large(): 38 joint blocks, hidden 2432, 8.1B) and SD3.5-Medium size (SD3Config.medium():
24 blocks, hidden 1536, MMDiT-X), random bf16 weights, 1024² (a 128×128 latent: 4096 image tokens) + 333 text tokens
(77 CLIP + 256 T5, as SD3 builds them), batch 1. For each size: forward (no grad) and a LoRA-like step (frozen base,
gradients through the activations to the input), plain and with block checkpointing, FLAME and diffusers (gradient
checkpointing: enable_gradient_checkpointing()), whose parameters are views of FLAME's (no extra weight memory), and
how far their outputs are apart; then FLAME with its joint blocks in host memory, streamed under a budget (Large 6 GB,
Medium 4 GB) by flame.streaming's plan/stream: the plan's predicted step vs the measured one, the peak, and the ratio
to FLAME's resident checkpointed step. Median of timed runs after warm-up (CUDA events); peak = max_memory_allocated.
Prints a table last and writes JSON.

    python3 bench/sd3.py --out bench/results/sd3.json      # GPU: both sizes (a few minutes on an H100)
    python3 bench/sd3.py --smoke --out /tmp/sd3.json        # tiny configs, few tokens (runs on CPU too)
    python3 bench/sd3.py --models large --profile --out /tmp/sd3_profile.json   # where each step's GPU time goes, by kernel
"""
import argparse, contextlib, datetime, gc, json, platform, statistics, tempfile, time
from pathlib import Path
import torch
from flux import diffusers_sdpa, measure, parse, random_weights
from streaming import blocks_to_host, budget_plan
from flame.io import atomic_write
from flame.models.layers import LazyTensor
from flame.models.sd3 import SD3, SD3Config, diffusers_layout
from flame.streaming import plan, record, stream, unstream
from flame.train import CudaGraphed

MODES = ("forward", "step", "step+checkpoint")
RATIO_TO_RESIDENT = "median over turns of streamed step ms / FLAME's resident step+checkpoint ms, timed one after the other"
NAMES = {"large": "SD3.5-Large", "medium": "SD3.5-Medium"}
# --smoke: the same run on tiny configs of both kinds (QK norm; Medium's with MMDiT-X blocks), 64 image + 12 text tokens,
# streamed at the planner's minimum plus two blocks (a fixed budget would hold a tiny model whole)
SMOKE = dict(tiny=True, latent=16, txt=12, large_budget="min+2", medium_budget="min+2", warmup=1, reps=2, rounds=1)


def config(kind: str, tiny: bool) -> SD3Config:
    if not tiny: return SD3Config.large() if kind == "large" else SD3Config.medium()
    return SD3Config.tiny(depth=4, x_block_self_attn_layers=(0, 1) if kind == "medium" else ())


def random_sd3(cfg: SD3Config, device, dtype) -> SD3:
    "SD3 with random weights built directly on `device` in `dtype` (QK norm scales 1, the position table random too)."
    with torch.device("meta"): model = SD3(cfg)
    return random_weights(model, device, dtype, ones=(".ln_q.weight", ".ln_k.weight"))


def diffusers_twin(sd3: SD3):
    "diffusers' SD3Transformer2DModel whose parameters are views of `sd3`'s (to_q/to_k/to_v: slices of the fused qkv)."
    from diffusers import SD3Transformer2DModel
    c = sd3.config
    with torch.device("meta"):
        d = SD3Transformer2DModel(sample_size=128, patch_size=c.patch_size, in_channels=c.in_channels, num_layers=c.depth,
                                  attention_head_dim=c.head_dim, num_attention_heads=c.num_heads, joint_attention_dim=c.context_in_dim,
                                  caption_projection_dim=c.hidden, pooled_projection_dim=c.pooled_dim, out_channels=c.out_channels,
                                  pos_embed_max_size=c.pos_embed_max_size, dual_attention_layers=c.x_block_self_attn_layers,
                                  qk_norm="rms_norm" if c.qk_norm else None)
    ours = {k: LazyTensor.of(v) for k, v in sd3.state_dict().items()}
    d.load_state_dict({k: lt.load() for k, lt in diffusers_layout(c.depth).write(ours, dims={"hidden": c.hidden}).items()}, assign=True)
    return d.requires_grad_(False).eval()


def step(call, x):
    "A LoRA-like step: frozen weights, gradients through the activations to the input; returns the loss."
    x = x.detach().requires_grad_()
    loss = call(x).float().square().mean()
    loss.backward()
    return loss.detach()


def model_and_inputs(kind, a, device, dtype):
    "SD3 of `kind` (random weights, seed 0) and one batch: the model, the latents x, and the conditioning (t, y, context)."
    cfg = config(kind, a.tiny)
    torch.manual_seed(0)
    ours = random_sd3(cfg, device, dtype)
    x = torch.randn(1, cfg.in_channels, a.latent, a.latent, device=device, dtype=dtype)
    t = torch.full((1,), 700.0, device=device)                 # sigma 0.7 on the MMDiT's (and diffusers') timestep scale
    y = torch.randn(1, cfg.pooled_dim, device=device, dtype=dtype)
    ctx = torch.randn(1, a.txt, cfg.context_in_dim, device=device, dtype=dtype)
    return ours, x, (t, y, ctx)


def calls_of(ours, twin, cond):
    """impl -> x -> output, FLAME's `ours` and diffusers' `twin` under conditioning `cond` = (t, y, context); and
    () -> the same call of `ours` as CUDA graphs (flame train --cuda-graph), captured at its first call."""
    t, y, ctx = cond
    calls = {"FLAME": lambda x: ours(x, t, y=y, context=ctx),
             "diffusers": lambda x: twin(hidden_states=x, encoder_hidden_states=ctx, pooled_projections=y, timestep=t, return_dict=False)[0]}
    def graphed():
        g = CudaGraphed(ours)
        return lambda x: g(x, t, y=y, context=ctx)
    return calls, graphed


def against_diffusers(r, ours, x, cond, device, a, save):
    "Output difference, then forward, step, step+checkpoint of FLAME and its diffusers twin, resident; one row each."
    twin = diffusers_twin(ours)                               # freed on return: its views would keep the blocks' device copies
    calls, graphed = calls_of(ours, twin, cond)
    compare(r, ours, twin, calls, x, device, a, save, graphed)


def compare(r, ours, twin, calls, x, device, a, save, graphed=None):
    """For FLAME's `ours` and diffusers' `twin` (`calls`: impl -> x -> output): output difference, then a row per mode and impl;
    on a GPU, with `graphed` (() -> a fresh x -> output of `ours` as CUDA graphs: flame train --cuda-graph), FLAME's steps replayed."""
    with torch.no_grad():
        ref, got = calls["diffusers"](x).float(), calls["FLAME"](x).float()
    r |= {"max_abs_diff": (got - ref).abs().max().item(), "max_abs_out": ref.abs().max().item(),
          "rel_l2_diff": ((got - ref).norm() / ref.norm()).item()}
    del ref, got
    def set_ckpt(on: bool):
        ours.checkpointing = on
        twin.enable_gradient_checkpointing() if on else twin.disable_gradient_checkpointing()
    for mode in MODES:
        for impl, call in calls.items():
            set_ckpt(mode == "step+checkpoint")
            ctx_ = (lambda: diffusers_sdpa(device)) if impl == "diffusers" and mode != "forward" else contextlib.nullcontext
            def fn(call=call, mode=mode, ctx_=ctx_):
                with ctx_():
                    if mode != "forward": return step(call, x)
                    with torch.no_grad(): call(x)
            base = torch.cuda.memory_allocated() / 1e9 if device.type == "cuda" else None   # (the weights, mostly)
            try:
                row = {"impl": impl, "mode": mode, "base_GB": base, **measure(fn, device, a.warmup, a.reps)}
                if mode != "forward" and device.type == "cuda": row["kept_after_forward_GB"] = kept_after_forward(call, x, ctx_)
            except torch.OutOfMemoryError as e: row = {"impl": impl, "mode": mode, "error": f"OOM: {str(e)[:200]}"}
            if device.type == "cuda": torch.cuda.empty_cache()
            r["rows"].append(row); save(); print(row, flush=True)
    if graphed is not None and device.type == "cuda": graph_rows(r, calls["FLAME"], graphed, set_ckpt, x, device, a, save)
    set_ckpt(False)
    speed = {}
    for mode in MODES:
        m = {q["impl"]: q for q in r["rows"] if q["mode"] == mode}
        if "ms" in m["FLAME"] and "ms" in m["diffusers"]: speed[mode] = m["diffusers"]["ms"] / m["FLAME"]["ms"]
    r["speedup_vs_diffusers"] = speed
    graph = {q["mode"]: q for q in r["rows"] if q["impl"] == "FLAME graph" and "ms" in q}
    diff = {q["mode"]: q for q in r["rows"] if q["impl"] == "diffusers" and "ms" in q}
    if graph:                                                  # time and memory held (reserved, the only measure a graph has)
        r["graph_speedup_vs_diffusers"] = {m: diff[m]["ms"] / q["ms"] for m, q in graph.items() if m in diff}
        r["graph_reserved_vs_diffusers"] = {m: q["reserved_GB"] / diff[m]["reserved_GB"] for m, q in graph.items() if m in diff}


def kept_after_forward(call, x, ctx_) -> float:
    "GB a step's forward leaves allocated for its backward (saved activations, the output): what checkpointing trades for recompute."
    torch.cuda.synchronize(); before = torch.cuda.memory_allocated()
    with ctx_():
        loss = call(x.detach().requires_grad_()).float().square().mean()
        kept = torch.cuda.memory_allocated() - before
        loss.backward()
    return kept / 1e9


def pools() -> dict:
    "GB reserved and active in the allocator's default pool and in the private pools of CUDA graphs."
    out = {}
    for s in torch.cuda.memory_snapshot():
        o = out.setdefault("default" if tuple(s["segment_pool_id"]) == (0, 0) else "private", {"reserved_GB": 0.0, "active_GB": 0.0})
        o["reserved_GB"] += s["total_size"] / 1e9; o["active_GB"] += s["active_size"] / 1e9
    return out


def graph_rows(r, eager, graphed, set_ckpt, x, device, a, save):
    "FLAME's step and checkpointed step captured as CUDA graphs: time, peak, and whether the loss equals the eager step's."
    for mode in MODES[1:]:
        set_ckpt(mode == "step+checkpoint")
        eager_loss = step(eager, x).item()                        # before the capture, which frees the eager steps' cuBLAS workspaces
        gc.collect(); torch.cuda.empty_cache()
        call = graphed()                                          # captured at its first call (3 warm-up steps, then the capture)
        torch.cuda.reset_peak_memory_stats()
        same = step(call, x).item() == eager_loss
        capture = torch.cuda.max_memory_reserved() / 1e9          # (the first step's: warm-up and capture, once)
        torch.cuda.empty_cache()
        row = {"impl": "FLAME graph", "mode": mode, **measure(lambda c=call: step(c, x), device, a.warmup, a.reps), "loss_equals_eager": same}
        # a graph's pool is not in max_memory_allocated: its peak is what it reserved
        row |= {"peak_GB": row["reserved_GB"], "capture_reserved_GB": capture, "pools": pools()}
        del call; gc.collect(); torch.cuda.empty_cache()          # (its graphs' memory pool goes with it)
        r["rows"].append(row); save(); print(row, flush=True)


def streamed_row(r, ours, call, x, budget, device, a, save):
    "FLAME with its joint blocks in host memory, streamed under `budget`: measured vs predicted, peak, ratio to resident."
    ours.checkpointing = True                                 # streamed weights are not kept for backward: recompute
    resident_loss = step(call, x).item()
    blocks_to_host(ours)                                      # stream() packs them into its pinned pool
    t0 = time.perf_counter()
    # CUDA: from a pinned host pool; CPU (smoke runs): out of a memory-mapped safetensors file, as flame.streaming requires
    store = None if device.type == "cuda" else Path(tempfile.mkdtemp()) / "blocks.safetensors"
    measured = plan(ours, "auto", (x,), device=device, store=store, step=lambda m, inputs: step(call, inputs[0]))  # the budget only picks
    try: p = budget_plan(measured, budget)
    except ValueError as err:                                 # below this size's minimum at this resolution: a finding, recorded
        row = {"impl": "FLAME", "mode": f"streamed {budget}", "budget": budget, "error": str(err), "plan_s": time.perf_counter() - t0}
        r["rows"].append(row); save(); print(row, flush=True); return
    stream(ours, device, plan=p)
    if device.type == "cuda": torch.cuda.empty_cache()
    plan_s = time.perf_counter() - t0
    row = {"impl": "FLAME", "mode": f"streamed {budget}", **measure(lambda: step(call, x), device, a.warmup, a.reps)}
    with record(ours) as rec: loss = step(call, x).item()
    turns = in_turns(ours, call, x, p, store, device, a)
    resident = statistics.median(t["resident_ms"] for t in turns) if turns else None
    row |= {"budget": budget, "budget_GB": p.budget / 1e9, "predicted_ms": p.predicted * 1e3, "floor_ms": p.floor * 1e3,
            "resident_units": len(p.resident), "units": len(p.unit_bytes), "slots": p.slots, "depth": p.depth,
            "bandwidth_GBps": p.bandwidth / 1e9, "predicted_moved_GB": p.moved / 1e9, "moved_GB": rec.result.bytes_moved / 1e9,
            "stall_ms": sum(b - a_ for a_, b in rec.result.stalls) * 1e3, "plan_s": plan_s, "plan": repr(p),
            "within_budget": None if row["peak_GB"] is None else row["peak_GB"] * 1e9 <= p.budget,
            "ratio_to_resident": statistics.median(t["ratio"] for t in turns) if turns else None, "turns": turns, "resident_ms": resident,
            "loss": loss, "resident_loss": resident_loss, "loss_equals_resident": loss == resident_loss}
    r["rows"].append(row); save(); print(row, flush=True)


def in_turns(ours, call, x, p, store, device, a) -> list[dict]:
    """The streamed step and the resident one (checkpointed both) timed in turns, `a.rounds` times each: between turns the
    model is unstreamed, moved whole to the device, and streamed again with plan `p`. A launch-bound eager step's time
    follows the CPU's speed, which drifts over a run, and a ratio of steps timed minutes apart drifted with it (SDXL
    4 GB: 0.85-1.44× over six H100 runs, 2026-11-27); each turn's ratio is of two steps timed seconds apart."""
    turns = []
    for _ in range(a.rounds):
        streamed = measure(lambda: step(call, x), device, a.warmup, a.reps)["ms"]
        unstream(ours).to(device)
        resident = measure(lambda: step(call, x), device, a.warmup, a.reps)["ms"]
        blocks_to_host(ours)
        stream(ours, device, store=store, plan=p)
        turns.append({"streamed_ms": streamed, "resident_ms": resident, "ratio": streamed / resident})
    return turns


def bench_size(kind, a, device, dtype, save) -> dict:
    "Every row for one model size (its weights are freed when this returns)."
    cfg = config(kind, a.tiny)
    t0 = time.perf_counter()
    ours, x, cond = model_and_inputs(kind, a, device, dtype)
    units = [sum(p.numel() * p.element_size() for p in u.parameters()) for u in ours.stream_units()]
    r = {"name": NAMES[kind] + (" (tiny)" if a.tiny else ""), "depth": cfg.depth, "hidden": cfg.hidden, "heads": cfg.num_heads,
         "mmditx_blocks": len(cfg.x_block_self_attn_layers), "params_B": sum(p.numel() for p in ours.parameters()) / 1e9,
         "weights_GB": sum(p.numel() * p.element_size() for p in ours.parameters()) / 1e9, "blocks_GB": sum(units) / 1e9,
         "largest_block_GB": max(units) / 1e9, "build_s": time.perf_counter() - t0, "rows": []}
    save(kind, r)
    against_diffusers(r, ours, x, cond, device, a, lambda: save(kind, r))
    gc.collect()
    if device.type == "cuda": torch.cuda.empty_cache()
    t, y, ctx = cond
    streamed_row(r, ours, lambda x: ours(x, t, y=y, context=ctx), x, getattr(a, f"{kind}_budget"), device, a, lambda: save(kind, r))
    return r


def profile_size(kind, a, device, dtype) -> dict:
    "The GPU kernels of one LoRA-like step, FLAME and diffusers (same weights): the top 25 by self time, and the total."
    from torch.profiler import ProfilerActivity, profile
    ours, x, cond = model_and_inputs(kind, a, device, dtype)
    twin = diffusers_twin(ours)
    impls, _ = calls_of(ours, twin, cond)
    calls = {"FLAME": (impls["FLAME"], contextlib.nullcontext), "diffusers": (impls["diffusers"], lambda: diffusers_sdpa(device))}
    out = {"name": NAMES[kind], "what": "one LoRA-like step (no checkpointing), CUDA kernels by self time; wall and CPU launch time of another"}
    for impl, (call, ctx_) in calls.items():
        with ctx_():
            for _ in range(2): step(call, x)                  # warm-up: compilation and autotuning stay out of the profile
            torch.cuda.synchronize()
            with profile(activities=[ProfilerActivity.CUDA]) as prof: step(call, x); torch.cuda.synchronize()
            t0 = time.perf_counter(); step(call, x); t1 = time.perf_counter(); torch.cuda.synchronize(); t2 = time.perf_counter()
        ev = [e for e in prof.key_averages() if e.self_device_time_total > 0]
        ev.sort(key=lambda e: -e.self_device_time_total)
        out[impl] = {"wall_ms": (t2 - t0) * 1e3, "enqueue_ms": (t1 - t0) * 1e3, "total_ms": sum(e.self_device_time_total for e in ev) / 1e3,
                     "top": [{"kernel": e.key[:120], "ms": e.self_device_time_total / 1e3, "calls": e.count} for e in ev[:25]]}
        print(f"\n{NAMES[kind]} {impl}: {out[impl]['total_ms']:.1f} ms of kernels; the step took {out[impl]['wall_ms']:.1f} ms, "
              f"of which {out[impl]['enqueue_ms']:.1f} ms until the CPU had launched its last kernel")
        for k in out[impl]["top"]: print(f"{k['ms']:9.2f} ms {k['calls']:6d}×  {k['kernel']}")
    return out


def table(res):
    print(f"\n{res['device']}  {res['date']}  torch {res['torch']}  {res['dtype']}, {res['latent']}² latent "
          f"({res['img_tokens']} image + {res['txt_tokens']} text tokens), batch 1")
    print(f"{'model':24s}{'mode':22s}{'impl':11s}{'ms':>9s}{'pred ms':>9s}{'peak GB':>9s}{'rsvd GB':>9s}{'× resident':>11s}")
    for r in res["models"].values():
        label = r["name"]
        for q in r["rows"]:
            if "ms" not in q: print(f"{label:24s}{q['mode']:22s}{q['impl']:11s}  {q['error'][:60]}"); continue
            pred = f"{q['predicted_ms']:9.1f}" if "predicted_ms" in q else " " * 9
            ratio = f"{q['ratio_to_resident']:11.2f}" if q.get("ratio_to_resident") else ""
            print(f"{label:24s}{q['mode']:22s}{q['impl']:11s}{q['ms']:9.1f}{pred}{q['peak_GB'] or float('nan'):9.2f}"
                  f"{q.get('reserved_GB') or float('nan'):9.2f}{ratio}")
    for r in res["models"].values():
        if "speedup_vs_diffusers" not in r: continue
        print(f"{r['name']}: {r['params_B']:.2f}B params ({r['weights_GB']:.1f} GB); output vs diffusers max|Δ| {r['max_abs_diff']:.3g} "
              f"(max|out| {r['max_abs_out']:.3g}), rel L2 {r['rel_l2_diff']:.2e}; diffusers ms / FLAME ms "
              f"{ {k: round(v, 2) for k, v in r['speedup_vs_diffusers'].items()} }")
        if "graph_speedup_vs_diffusers" in r:
            print(f"{r['name']}: diffusers ms (eager) / FLAME graph ms {dict((k, round(v, 2)) for k, v in r['graph_speedup_vs_diffusers'].items())}")
        for q in r["rows"]:                                    # where a checkpointed step's memory goes, over what was allocated before it
            if q["mode"] == "step+checkpoint" and q.get("kept_after_forward_GB") is not None:
                print(f"{r['name']} {q['impl']}: step+checkpoint peak {q['peak_GB'] - q['base_GB']:.3f} GB over the {q['base_GB']:.2f} GB "
                      f"allocated before it; the forward kept {q['kept_after_forward_GB']:.3f} GB for the backward")
            if q["impl"] == "FLAME graph" and "pools" in q:
                print(f"{r['name']} FLAME graph, {q['mode']}: " + ", ".join(f"{k} pool {v['reserved_GB']:.3f} GB reserved, {v['active_GB']:.3f} active"
                                                                       for k, v in q["pools"].items()))
        if "graph_reserved_vs_diffusers" in r:
            print(f"{r['name']}: FLAME graph reserved GB / diffusers reserved GB {dict((k, round(v, 2)) for k, v in r['graph_reserved_vs_diffusers'].items())}")


def add_rounds(ap: argparse.ArgumentParser):
    ap.add_argument("--rounds", type=int, default=3, help="turns of streamed and resident steps timed one after the other (their ratio)")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--models", default="large,medium", help="which sizes, in order: large, medium")
    ap.add_argument("--tiny", action="store_true", help="tiny configs of the same kinds instead of the real sizes")
    ap.add_argument("--latent", type=int, default=128, help="latent side (128 = 1024² pixels: 4096 image tokens)")
    ap.add_argument("--txt", type=int, default=333, help="text tokens (77 CLIP + 256 T5)")
    ap.add_argument("--large-budget", default="6GB", help="device budget of the streamed Large step ('min+N': the planner's minimum + N blocks)")
    ap.add_argument("--medium-budget", default="4GB", help="device budget of the streamed Medium step")
    add_rounds(ap)
    ap.add_argument("--profile", action="store_true", help="instead of timing: the GPU kernels of one step, FLAME and diffusers")
    a = parse(ap, SMOKE)
    kinds = a.models.split(",")
    if bad := [k for k in kinds if k not in NAMES]: ap.error(f"--models: expected large and/or medium, got {bad}")
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    dtype = torch.bfloat16 if device.type == "cuda" else torch.float32
    import diffusers, triton
    res = {"device": torch.cuda.get_device_name() if device.type == "cuda" else platform.processor() or "cpu",
           "date": datetime.date.today().isoformat(), "torch": torch.__version__, "triton": triton.__version__,
           "diffusers": diffusers.__version__, "dtype": str(dtype).removeprefix("torch."), "latent": a.latent,
           "img_tokens": (a.latent // 2) ** 2, "txt_tokens": a.txt, "batch": 1, "warmup": a.warmup, "reps": a.reps,
           "step": "LoRA-like: frozen weights, the input requires grad, loss = mean(out²); streamed: with checkpointing",
           "ratio_to_resident": RATIO_TO_RESIDENT,
           "models": {}}
    t0 = time.perf_counter()
    def save(kind, r):
        res["models"][kind] = r; res["wall_s"] = time.perf_counter() - t0
        atomic_write(a.out, json.dumps(res, indent=1))
    for kind in kinds:
        if a.profile:
            if device.type != "cuda": ap.exit(2, "--profile needs a CUDA GPU\n")
            save(kind, profile_size(kind, a, device, dtype)); continue
        save(kind, bench_size(kind, a, device, dtype, save))
        gc.collect()
        if device.type == "cuda": torch.cuda.empty_cache()
        print(f"{NAMES[kind]} done [{time.perf_counter() - t0:.0f}s]", flush=True)
    if not a.profile: table(res)


if __name__ == "__main__":
    main()
