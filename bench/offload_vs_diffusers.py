"""Forward pass of a Flux-dev-size model whose blocks all live in host memory: FLAME's streaming engine vs
diffusers' group offloading (block level, one block per group, CUDA streams), on the same weights, in one run.

Both start from one random bf16 FLAME Flux (FluxConfig.dev(), 11.9B parameters); diffusers'
FluxTransformer2DModel gets a host copy of those weights in its own layout. 1024² (4096 image + 512 text
tokens), batch 1, no grad. Median of timed runs after warm-up (CUDA events), peak allocated memory, the
copy floor (weights / measured host->device bandwidth), and how far the two outputs are apart.
Prints a table and writes JSON.

    python3 bench/offload_vs_diffusers.py --out bench/results/offload_vs_diffusers.json
    python3 bench/offload_vs_diffusers.py --smoke --out /tmp/o.json    # the same at tiny size (64 + 8 tokens)
"""
import argparse, dataclasses, datetime, json, math, time
import torch
from flux import diffusers_twin, measure, parse, random_flux
from flame.io import atomic_write
from flame.models.flux import FluxConfig, image_ids
from streaming import blocks_to_host
from flame.streaming import plan, stream, _aligned

SMOKE = dict(size="tiny", tokens=64, txt=8, warmup=1, reps=2)   # --smoke: the same run at the smallest sizes


def main(out, warmup, reps, size="dev", tokens=4096, n_txt=512):
    dev = torch.device("cuda")
    t0 = time.perf_counter()
    torch.manual_seed(0)
    flux = random_flux(FluxConfig.dev() if size == "dev" else FluxConfig.tiny(), dev, torch.bfloat16)
    c, side = flux.config, math.isqrt(tokens)
    img = torch.randn(1, tokens, c.in_channels, device=dev, dtype=torch.bfloat16)
    txt = torch.randn(1, n_txt, c.context_in_dim, device=dev, dtype=torch.bfloat16)
    y = torch.randn(1, c.vec_in_dim, device=dev, dtype=torch.bfloat16)
    t, g = torch.full((1,), 0.7, device=dev), torch.full((1,), 3.5, device=dev)
    img_ids, txt_ids = image_ids(2 * side, 2 * side, dev), torch.zeros(n_txt, 3, device=dev)
    with torch.no_grad(): resident_out = flux(img, img_ids, txt, txt_ids, t, y, g).float().cpu()

    # diffusers' model: a host copy of the same weights in diffusers' layout
    theirs = diffusers_twin(flux)
    with torch.no_grad():
        for p in theirs.parameters(): p.data = p.data.to("cpu", copy=True).contiguous()
        for b in theirs.buffers(): b.data = b.data.cpu()
    blocks_to_host(flux)                                          # FLAME: stream() packs them into its pinned pool
    print(f"built [{time.perf_counter() - t0:.0f}s]", flush=True)

    base = plan(flux, "8GB", device="cuda")                       # engine, pinned pool, measured bandwidth
    slot = _aligned(max(base.unit_bytes))
    every_block = dataclasses.replace(base, resident=[], slots=3, slot_bytes=slot, depth=2, device_bytes=3 * slot)
    flux.checkpointing = True                                     # streaming requires it (it only acts when grads are on)
    stream(flux, "cuda", plan=every_block)
    torch.cuda.empty_cache()
    def flame_fwd():
        with torch.no_grad(): return flux(img, img_ids, txt, txt_ids, t, y, g)
    streamed_out = flame_fwd().float().cpu()
    ours = measure(flame_fwd, dev, warmup, reps)
    print(f"FLAME streamed forward: {ours}  [{time.perf_counter() - t0:.0f}s]", flush=True)

    # diffusers: group offloading, as its docs recommend for speed (block level, streams)
    stream_note = "enable_group_offload(onload_device=cuda, offload_type='block_level', num_blocks_per_group=1, use_stream=True)"
    theirs.enable_group_offload(onload_device=dev, offload_device=torch.device("cpu"), offload_type="block_level",
                                num_blocks_per_group=1, use_stream=True)
    def diffusers_fwd():
        with torch.no_grad():
            return theirs(hidden_states=img, encoder_hidden_states=txt, pooled_projections=y, timestep=t, img_ids=img_ids,
                          txt_ids=txt_ids, guidance=g, return_dict=False)[0]
    theirs_out = diffusers_fwd().float().cpu()
    dif = measure(diffusers_fwd, dev, warmup, reps)
    print(f"diffusers group offload forward: {dif}  [{time.perf_counter() - t0:.0f}s]", flush=True)

    weights = sum(base.unit_bytes)
    res = {"device": torch.cuda.get_device_name(), "date": datetime.date.today().isoformat(), "torch": torch.__version__,
           "model": f"FLAME Flux(FluxConfig.{size}()), random bf16 weights; diffusers FluxTransformer2DModel with the same weights",
           "tokens": f"{tokens} image + {n_txt} text, batch 1, forward, no grad", "streamed_block_bytes": weights,
           "bandwidth": base.bandwidth, "floor_ms": weights / base.bandwidth * 1e3,
           "flame": {**ours, "plan": repr(every_block)}, "diffusers": {**dif, "config": stream_note},
           "speedup": dif["ms"] / ours["ms"],
           "flame_streamed_equals_resident": bool(torch.equal(streamed_out, resident_out)),
           "rel_l2_flame_vs_diffusers": ((streamed_out - theirs_out).norm() / theirs_out.norm()).item(),
           "wall_s": time.perf_counter() - t0}
    atomic_write(out, json.dumps(res, indent=1))
    print(f"\n{res['device']}  {res['date']}  torch {res['torch']}: Flux-{size} forward, all {len(base.unit_bytes)} blocks from host memory")
    print(f"{'impl':12s}{'ms':>9s}{'peak GB':>9s}{'x floor':>9s}")
    for name, r in (("FLAME", ours), ("diffusers", dif)):
        print(f"{name:12s}{r['ms']:9.1f}{r['peak_GB']:9.2f}{r['ms'] / res['floor_ms']:9.2f}")
    print(f"floor {res['floor_ms']:.0f} ms ({weights / 1e9:.1f} GB at {base.bandwidth / 1e9:.1f} GB/s); "
          f"FLAME {res['speedup']:.2f}x faster; streamed == resident: {res['flame_streamed_equals_resident']}; "
          f"rel L2 FLAME vs diffusers {res['rel_l2_flame_vs_diffusers']:.2e}")


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--size", choices=["dev", "tiny"], default="dev")
    ap.add_argument("--tokens", type=int, default=4096, help="image tokens (a square number; 4096 = 1024² pixels)")
    ap.add_argument("--txt", type=int, default=512, help="text tokens")
    a = parse(ap, SMOKE, "bench/results/offload_vs_diffusers.json")
    if math.isqrt(a.tokens) ** 2 != a.tokens: ap.error(f"--tokens: expected a square number, got {a.tokens}")
    if not torch.cuda.is_available(): ap.exit(2, "bench/offload_vs_diffusers.py needs a CUDA GPU\n")
    main(a.out, a.warmup, a.reps, a.size, a.tokens, a.txt)
