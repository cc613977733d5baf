"""GPU measurements of the trainer (flame.train): the embedded demo's wall time, and a Flux-dev-size model (random
weights) trained as a rank-16 LoRA for a few steps under an 8 GB budget at 1024² — s/step and peak memory.

Usage (GPU machine): python3 bench/train.py --out $OUT/train.json
                     python3 bench/train.py --smoke --out /tmp/train.json   (the same two runs, small: under a minute)
Prints a table last and writes JSON (copy it to bench/results/train.json; 70_train shows it).
"""
import argparse, json, os, statistics, sys, tempfile, time
from pathlib import Path
import torch

# Flux-dev, or "small": Flux-dev's interface (latent, T5 and CLIP widths) with hidden 1536 and 3 + 6 blocks (0.94 GB of
# block weights, so a 600 MB budget streams them as 8 GB streams Flux-dev's 23.7 GB); "tiny": hidden 512, 1 + 2 blocks
SIZES = {"dev": {}, "small": dict(hidden_size=1536, num_heads=12, depth=3, depth_single_blocks=6),
         "tiny": dict(hidden_size=512, num_heads=4, depth=1, depth_single_blocks=2)}
# --smoke: the demo with a 20-step base and a 10-step LoRA; the tiny Flux for 3 steps at 256² under 170 MB (its step needs 139 MiB at least on an H100)
SMOKE = dict(demo_steps=10, demo_base_steps=20, size="tiny", steps=3, resolution=256, budget="170MB")

def demo(tmp: Path, steps: int | None = None, base_steps: int | None = None) -> dict:
    "The embedded demo from nothing: its base built (`base_steps`: fewer than the recipe's) and its LoRA trained (`steps`)."
    import flame.demo
    from flame.train import TrainConfig, train
    os.environ["FLAME_CACHE"] = str(tmp / "cache")            # build the demo base from scratch: the first-run time
    if base_steps: flame.demo.DEMO_BASE = {**flame.demo.DEMO_BASE, "steps": base_steps}   # demo_base() reads its recipe here
    t0 = time.perf_counter()
    r = train(TrainConfig(output=str(tmp / "demo"), progress=False, **({"steps": steps} if steps else {})))
    base = flame.demo.DEMO_BASE["steps"]
    return {"what": f"demo (base build of {base} steps + {r.steps}-step LoRA, tiny Flux)", "seconds": time.perf_counter() - t0,
            "steps": r.steps, "base_steps": base, "policy": r.policy}

def flux_dev_8gb(tmp: Path, steps: int, resolution: int, budget: str, size: str = "dev") -> dict:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "nbs"))
    from fixtures import tiny_field_components                    # the notebooks' test fixture (not in the package)
    from flame.data import Shapes
    from flame.models.flux import Flux, FluxConfig
    from flame.train import TrainConfig, train, read_metrics
    field = tiny_field_components(tmp / "field", latent_channels=16, vae_blocks=4, t5_dim=4096, clip_dim=768)  # Flux's interface, few weights
    torch.set_default_dtype(torch.bfloat16)                       # 11.9B parameters: allocate them in bf16 directly
    with torch.device("meta"): flux = Flux(FluxConfig.dev(**SIZES[size]))
    torch.set_default_dtype(torch.float32)
    flux = flux.to_empty(device="cpu")
    g = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for p in flux.parameters(): p.normal_(0, 0.02, generator=g)
    n = sum(p.numel() for p in flux.parameters())
    cfg = TrainConfig(model="flux-dev", vae=str(field), text_encoder=str(field), output=str(tmp / "dev"), budget=budget, resolution=resolution,
                      steps=steps, batch_size=1, rank=16, lr=1e-4, save_every=0, sample_seeds=1, sample_steps=2, progress=False)
    r = train(cfg, model=flux, data=Shapes(n=8, size=resolution))
    rows = read_metrics(tmp / "dev" / "metrics.csv")
    dts = [b["seconds"] - a["seconds"] for a, b in zip(rows, rows[1:])]
    return {"what": f"Flux-{size} size ({n / 1e9:.1f}B params, random), LoRA r16, {resolution}², budget {budget}", "policy": r.policy,
            "s_per_step": statistics.median(dts), "peak_bytes": max(r_["mem_bytes"] for r_ in rows), "steps": steps,
            "measured": r.measured, "losses": r.losses}

if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", help="the JSON file (default train.json; required with --smoke)")
    ap.add_argument("--demo-steps", type=int, help="LoRA steps of the demo (default: the demo's)")
    ap.add_argument("--demo-base-steps", type=int, help="training steps of the demo's base (default: its recipe's)")
    ap.add_argument("--size", choices=list(SIZES), default="dev", help="the Flux trained under --budget")
    ap.add_argument("--steps", type=int, default=6)
    ap.add_argument("--resolution", type=int, default=1024)
    ap.add_argument("--budget", default="8GB")
    ap.add_argument("--smoke", action="store_true", help=f"the same runs, small ({SMOKE}); explicit flags still win")
    args = ap.parse_args()
    if args.smoke:
        if not args.out: ap.error("--smoke needs --out (smoke results never go to bench/results/)")
        ap.set_defaults(**SMOKE); args = ap.parse_args()
    if not torch.cuda.is_available(): ap.exit(2, "bench/train.py needs a CUDA GPU\n")
    tmp = Path(tempfile.mkdtemp())
    res = {"device": torch.cuda.get_device_name(), "date": time.strftime("%Y-%m-%d"), "torch": torch.__version__,
           "demo": demo(tmp, args.demo_steps, args.demo_base_steps),
           "flux_dev": flux_dev_8gb(tmp, args.steps, args.resolution, args.budget, args.size)}
    out = Path(args.out or "train.json"); out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(res, indent=1, default=str))
    d, f = res["demo"], res["flux_dev"]
    print(f"{'device':28s} {res['device']}  ({res['date']}, torch {res['torch']})")
    print(f"{'demo wall time':28s} {d['seconds']:.0f} s")
    print(f"{f'Flux-{args.size} LoRA @ ' + str(args.resolution) + '², ' + args.budget:28s} {f['s_per_step']:.2f} s/step, peak {f['peak_bytes'] / 2**30:.2f} GiB, policy {f['policy']}")
