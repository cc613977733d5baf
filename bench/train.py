"""GPU measurements of the trainer (flame.train): the embedded demo's wall time, and a Flux-dev-size model (random
weights) trained as a rank-16 LoRA for a few steps under an 8 GB budget at 1024² — s/step and peak memory.

Usage (GPU machine): python3 bench/train.py --out $OUT/train.json
Prints a table last and writes JSON (copy it to bench/results/train.json; 70_train shows it).
"""
import argparse, json, os, statistics, sys, tempfile, time
from pathlib import Path
import torch

def demo(tmp: Path) -> dict:
    from flame.train import TrainConfig, train
    os.environ["FLAME_CACHE"] = str(tmp / "cache")            # build the demo base from scratch: the first-run time
    t0 = time.perf_counter()
    r = train(TrainConfig(output=str(tmp / "demo"), progress=False))
    return {"what": "demo (base build + 400-step LoRA, tiny Flux)", "seconds": time.perf_counter() - t0, "steps": r.steps, "policy": r.policy}

def flux_dev_8gb(tmp: Path, steps: int, resolution: int, budget: str) -> dict:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "nbs"))
    from fixtures import tiny_field_components                    # the notebooks' test fixture (not in the package)
    from flame.data import Shapes
    from flame.models.flux import Flux, FluxConfig
    from flame.train import TrainConfig, train, read_metrics
    field = tiny_field_components(tmp / "field", latent_channels=16, vae_blocks=4, t5_dim=4096, clip_dim=768)  # Flux's interface, few weights
    torch.set_default_dtype(torch.bfloat16)                       # 11.9B parameters: allocate them in bf16 directly
    with torch.device("meta"): flux = Flux(FluxConfig.dev())
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
    return {"what": f"Flux-dev size ({n / 1e9:.1f}B params, random), LoRA r16, {resolution}², budget {budget}", "policy": r.policy,
            "s_per_step": statistics.median(dts), "peak_bytes": max(r_["mem_bytes"] for r_ in rows), "steps": steps,
            "measured": r.measured, "losses": r.losses}

if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="train.json")
    ap.add_argument("--steps", type=int, default=6)
    ap.add_argument("--resolution", type=int, default=1024)
    ap.add_argument("--budget", default="8GB")
    args = ap.parse_args()
    if not torch.cuda.is_available(): sys.exit("bench/train.py needs a CUDA GPU")
    tmp = Path(tempfile.mkdtemp())
    res = {"device": torch.cuda.get_device_name(), "date": time.strftime("%Y-%m-%d"), "torch": torch.__version__,
           "demo": demo(tmp), "flux_dev": flux_dev_8gb(tmp, args.steps, args.resolution, args.budget)}
    Path(args.out).write_text(json.dumps(res, indent=1, default=str))
    d, f = res["demo"], res["flux_dev"]
    print(f"{'device':28s} {res['device']}  ({res['date']}, torch {res['torch']})")
    print(f"{'demo wall time':28s} {d['seconds']:.0f} s")
    print(f"{'Flux-dev LoRA @ ' + str(args.resolution) + '², ' + args.budget:28s} {f['s_per_step']:.2f} s/step, peak {f['peak_bytes'] / 2**30:.2f} GiB, policy {f['policy']}")
