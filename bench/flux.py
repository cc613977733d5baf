"""Flux on one GPU: FLAME vs diffusers' FluxTransformer2DModel, same weights, same run.

Forward (no grad) and a LoRA-like step (frozen base, gradients through the activations to the input),
plain and with block checkpointing: median time of timed runs after warm-up (CUDA events) and peak
allocated memory. diffusers' model shares FLAME's weight storage (its to_q/to_k/to_v are views of the
fused qkv), so both fit at once and their outputs can be compared at full size.
Prints a table and writes JSON.

    python3 bench/flux.py --out bench/results/flux.json             # Flux-dev size, 1024² (4096 + 512 tokens)
    python3 bench/flux.py --smoke --out /tmp/f.json                 # the same at tiny size (runs on CPU too)
"""
import argparse, contextlib, datetime, json, math, platform, statistics, time
import torch
from flame.io import atomic_write
from flame.models.flux import DIFFUSERS, Flux, FluxConfig, image_ids
from flame.models.layers import LazyTensor

SMOKE = dict(size="tiny", tokens=64, txt=8, warmup=1, reps=2)   # --smoke: the same run at the smallest sizes


def random_weights(model: torch.nn.Module, device, dtype, ones=(".scale",)) -> torch.nn.Module:
    """`model` (built on meta) materialized on `device` in `dtype`: parameters and buffers N(0, 0.02), names ending in `ones` 1,
    integer buffers (position ids) 0, 1, 2, …; frozen."""
    model = model.to(dtype).to_empty(device=device)
    with torch.no_grad():
        for name, t in (*model.named_parameters(), *model.named_buffers()):
            if not t.is_floating_point(): t.copy_(torch.arange(t.shape[-1], device=device).expand_as(t))
            elif name.endswith(ones): t.fill_(1.0)
            else: t.normal_(0, 0.02)
    return model.requires_grad_(False).eval()


def random_flux(cfg: FluxConfig, device, dtype) -> Flux:
    "Flux with random weights built directly on `device` in `dtype` (no default init, no fp32 copy)."
    with torch.device("meta"): model = Flux(cfg)
    return random_weights(model, device, dtype)


def diffusers_sdpa(device):
    "Context for diffusers' steps: cuDNN's SDPA backward crashes on its non-contiguous q/k/v (see DESIGN.md); use flash/efficient."
    from torch.nn.attention import SDPBackend, sdpa_kernel
    if torch.device(device).type != "cuda": return contextlib.nullcontext()
    return sdpa_kernel([SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION])


def diffusers_twin(flux: Flux):
    "diffusers' FluxTransformer2DModel whose parameters are views of `flux`'s (no extra weight memory)."
    from diffusers import FluxTransformer2DModel
    c = flux.config
    with torch.device("meta"):
        d = FluxTransformer2DModel(in_channels=c.in_channels, out_channels=c.out_channels, num_layers=c.depth,
                                   num_single_layers=c.depth_single_blocks, attention_head_dim=c.head_dim,
                                   num_attention_heads=c.num_heads, joint_attention_dim=c.context_in_dim,
                                   pooled_projection_dim=c.vec_in_dim, guidance_embeds=c.guidance_embed, axes_dims_rope=c.axes_dim)
    ours = {k: LazyTensor.of(v) for k, v in flux.state_dict().items()}
    d.load_state_dict({k: lt.load() for k, lt in DIFFUSERS.write(ours, dims={"hidden": c.hidden_size}).items()}, assign=True)
    return d.requires_grad_(False).eval()


def measure(fn, device, warmup: int, reps: int) -> dict:
    "Median ms of `fn()`, peak allocated and peak reserved GB (CUDA) over `reps` runs after `warmup`."
    cuda = device.type == "cuda"
    for _ in range(warmup): fn()
    if cuda: torch.cuda.synchronize(); torch.cuda.reset_peak_memory_stats()
    times = []
    for _ in range(reps):
        if cuda:
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            s.record(); fn(); e.record(); torch.cuda.synchronize(); times.append(s.elapsed_time(e))
        else:
            t0 = time.perf_counter(); fn(); times.append((time.perf_counter() - t0) * 1e3)
    return {"ms": statistics.median(times), "peak_GB": torch.cuda.max_memory_allocated() / 1e9 if cuda else None,
            "reserved_GB": torch.cuda.max_memory_reserved() / 1e9 if cuda else None}   # (what the process holds: cached blocks too)


def parse(ap: argparse.ArgumentParser, smoke: dict, default_out: str | None = None, warmup: int = 2, reps: int = 5) -> argparse.Namespace:
    """Add --warmup, --reps, --out and --smoke to `ap` and parse; --smoke's values are defaults that explicit flags still override.
    With `default_out` (a file in bench/results/), --out may be left out, but not with --smoke: smoke results never go there."""
    ap.add_argument("--warmup", type=int, default=warmup)
    ap.add_argument("--reps", type=int, default=reps)
    ap.add_argument("--out", required=default_out is None,
                    help=None if default_out is None else f"the JSON file (default {default_out}; required with --smoke)")
    ap.add_argument("--smoke", action="store_true", help=f"the same run, small ({smoke}); explicit flags still win")
    a = ap.parse_args()
    if a.smoke:
        if not a.out: ap.error("--smoke needs --out (smoke results never go to bench/results/)")
        ap.set_defaults(**smoke); a = ap.parse_args()
    a.out = a.out or default_out
    return a


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--size", choices=["dev", "tiny"], default="dev")
    ap.add_argument("--tokens", type=int, default=4096, help="image tokens (a square number; 4096 = 1024² pixels)")
    ap.add_argument("--txt", type=int, default=512, help="text tokens")
    a = parse(ap, SMOKE)
    side = math.isqrt(a.tokens)
    if side * side != a.tokens: raise ValueError(f"--tokens: expected a square number, got {a.tokens}")
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    dtype = torch.bfloat16 if device.type == "cuda" else torch.float32
    cfg = FluxConfig.dev() if a.size == "dev" else FluxConfig.tiny()
    torch.manual_seed(0)
    t0 = time.perf_counter()
    flux = random_flux(cfg, device, dtype)
    theirs = diffusers_twin(flux)
    build_s = time.perf_counter() - t0
    weights = sum(p.numel() * p.element_size() for p in flux.parameters())
    import diffusers, triton
    res = {"device": torch.cuda.get_device_name() if device.type == "cuda" else platform.processor() or "cpu",
           "date": datetime.date.today().isoformat(), "torch": torch.__version__, "triton": triton.__version__,
           "diffusers": diffusers.__version__, "size": a.size, "dtype": str(dtype).removeprefix("torch."),
           "params_B": sum(p.numel() for p in flux.parameters()) / 1e9, "weights_GB": weights / 1e9,
           "img_tokens": a.tokens, "txt_tokens": a.txt, "batch": 1, "build_s": build_s, "rows": []}

    B, c = 1, cfg
    img = torch.randn(B, a.tokens, c.in_channels, device=device, dtype=dtype)
    txt = torch.randn(B, a.txt, c.context_in_dim, device=device, dtype=dtype)
    y = torch.randn(B, c.vec_in_dim, device=device, dtype=dtype)
    t, g = torch.full((B,), 0.7, device=device), torch.full((B,), 3.5, device=device)
    img_ids, txt_ids = image_ids(2 * side, 2 * side, device), torch.zeros(a.txt, 3, device=device)
    calls = {"FLAME": lambda x: flux(x, img_ids, txt, txt_ids, t, y, g),
             "diffusers": lambda x: theirs(hidden_states=x, encoder_hidden_states=txt, pooled_projections=y, timestep=t,
                                           img_ids=img_ids, txt_ids=txt_ids, guidance=g, return_dict=False)[0]}

    with torch.no_grad():
        ref, got = calls["diffusers"](img).float(), calls["FLAME"](img).float()
    res["max_abs_diff"], res["max_abs_out"] = (got - ref).abs().max().item(), ref.abs().max().item()
    res["rel_l2_diff"] = ((got - ref).norm() / ref.norm()).item()
    del ref, got

    def step(call):
        x = img.detach().requires_grad_()
        call(x).float().square().mean().backward()

    def set_ckpt(on: bool):
        flux.checkpointing = on
        theirs.enable_gradient_checkpointing() if on else theirs.disable_gradient_checkpointing()

    for mode in ["forward", "step", "step+checkpoint"]:
        for impl, call in calls.items():
            set_ckpt(mode == "step+checkpoint")
            ctx = (lambda: diffusers_sdpa(device)) if impl == "diffusers" and mode != "forward" else contextlib.nullcontext
            def fn(call=call, mode=mode, ctx=ctx):
                with ctx():
                    if mode != "forward": return step(call)
                    with torch.no_grad(): call(img)
            try: row = {"impl": impl, "mode": mode, **measure(fn, device, a.warmup, a.reps)}
            except torch.OutOfMemoryError as e: row = {"impl": impl, "mode": mode, "error": f"OOM: {str(e)[:200]}"}
            if device.type == "cuda": torch.cuda.empty_cache()
            res["rows"].append(row)
            atomic_write(a.out, json.dumps(res, indent=1))
            print(row, flush=True)
    set_ckpt(False)

    speed = {}
    for mode in ["forward", "step", "step+checkpoint"]:
        r = {x["impl"]: x for x in res["rows"] if x["mode"] == mode}
        if "ms" in r["FLAME"] and "ms" in r["diffusers"]: speed[mode] = r["diffusers"]["ms"] / r["FLAME"]["ms"]
    res["speedup_vs_diffusers"] = speed
    atomic_write(a.out, json.dumps(res, indent=1))
    print(f"\n{res['device']}  {res['date']}  torch {res['torch']}  Flux-{a.size} {res['params_B']:.2f}B params "
          f"({res['weights_GB']:.1f} GB {res['dtype']}), {a.tokens}+{a.txt} tokens, batch 1")
    print(f"output vs diffusers: max|Δ| {res['max_abs_diff']:.3g} (max|out| {res['max_abs_out']:.3g}), rel L2 {res['rel_l2_diff']:.2e}")
    print(f"{'mode':18s}{'impl':11s}{'ms':>9s}{'peak GB':>9s}")
    for r in res["rows"]:
        print(f"{r['mode']:18s}{r['impl']:11s}" + (f"{r['ms']:9.1f}{r['peak_GB'] or float('nan'):9.1f}" if "ms" in r else "  " + r["error"][:60]))
    print("diffusers ms / FLAME ms:", {k: round(v, 2) for k, v in speed.items()})


if __name__ == "__main__":
    main()
