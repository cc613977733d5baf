#!/usr/bin/env python3
"""What an fp8 base costs the demo LoRA, and whether Flux's modulation can be fp8 too (issue 17: "modulation stays bf16 unless
measured harmless"). The embedded demo (flame.demo: a tiny Flux base that knows five colours, a LoRA that teaches magenta)
trained three times with one recipe: on the full-precision base, on an fp8 base with the modulation kept in bf16
(FLUX_SKIP_MODULATION, the default until 2026-11-28) and with it in fp8 too (FLUX_SKIP, the default since). For each: the trained base's output error against full
precision on a fixed probe, the mean loss of the last 50 steps, and the magenta score of the demo prompts after training
(the first three should be magenta, the last two not). The base is built once, in $FLAME_CACHE if set, else a temporary
folder. Prints a table, writes JSON. The device is the trainer's default (a GPU if there is one).

    python bench/demo_fp8.py --out bench/results/demo_fp8_modulation.json
    python bench/demo_fp8.py --smoke --out /tmp/demo_fp8.json     # LoRA runs of 10 steps: the same code path
"""
import argparse, copy, datetime, json, os, sys, tempfile, time
from pathlib import Path
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from flux import parse

SMOKE = dict(steps=10)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--steps", type=int, default=None, help="the LoRA runs' steps (default: the demo's)")
    a = parse(ap, SMOKE)
    tmp = Path(tempfile.mkdtemp())
    os.environ.setdefault("FLAME_CACHE", str(tmp / "cache"))   # (before flame reads it; one given is used, its base reused)
    import torch
    from flame.io import atomic_write
    from flame.train import train, TrainConfig, setup, sample_images
    from flame.demo import demo_base, DEMO_PROMPTS, magenta_score, TINY
    from flame.models.flux import Flux
    from flame.models.fp8 import to_fp8, FLUX_SKIP_MODULATION, FLUX_SKIP
    from flame.lora import load_lora
    from flame.kernels.core import rel_err
    t0, kept = time.time(), Flux.fp8_skip
    steps = {} if a.steps is None else {"steps": a.steps}
    full = Flux.from_safetensors(demo_base(progress=False))
    data = setup(TrainConfig(output=str(tmp / "unused")), model=Flux.from_safetensors(demo_base(progress=False))).data   # (setup adds a LoRA)
    ctx, pooled = data.text(list(DEMO_PROMPTS))
    g = torch.Generator().manual_seed(0)
    c = full.config
    probe = (torch.randn(2, 64, c.in_channels, generator=g), torch.randn(2, 64, 3, generator=g), torch.randn(2, 7, c.context_in_dim, generator=g),
             torch.zeros(2, 7, 3), torch.tensor([0.3, 0.8]), torch.randn(2, c.vec_in_dim, generator=g), torch.ones(2))
    res = {"date": str(datetime.date.today()), "torch": torch.__version__, "device": "cuda" if torch.cuda.is_available() else "cpu",
           "recipe": f"the demo LoRA ({a.steps or 'default'} steps), three bases", "runs": {}}
    for name, base_dtype, skip in (("full precision", "bf16", None), ("fp8, modulation kept", "fp8", FLUX_SKIP_MODULATION),
                                   ("fp8, modulation fp8", "fp8", FLUX_SKIP)):
        Flux.fp8_skip = skip or kept
        try: r = train(TrainConfig(output=str(tmp / name.replace(" ", "-").replace(",", "")), base_dtype=base_dtype, progress=False, **steps))
        finally: Flux.fp8_skip = kept
        with torch.no_grad(): err = 0.0 if skip is None else rel_err(to_fp8(copy.deepcopy(full), skip=skip)(*probe), full(*probe))
        tuned = Flux.from_safetensors(demo_base(progress=False)); load_lora(tuned, r.weights)
        after = magenta_score(sample_images(TINY.wrap(tuned), data, ctx, pooled, seeds=4)).view(len(DEMO_PROMPTS), 4).mean(1)
        tail = r.losses[-50:]
        res["runs"][name] = {"output_rel_err": err, "loss_last_50": sum(tail) / len(tail), "magenta_after": [round(v, 4) for v in after.tolist()]}
        print(f"{name}: {res['runs'][name]}  [{time.time() - t0:.0f} s]", flush=True)
    res["wall_s"] = time.time() - t0
    atomic_write(a.out, json.dumps(res, indent=1))
    print(f"\n| base | output rel err | loss, last 50 steps | magenta after ({', '.join(DEMO_PROMPTS)}) |\n|---|---|---|---|")
    for name, r in res["runs"].items():
        print(f"| {name} | {r['output_rel_err']:.2e} | {r['loss_last_50']:.5f} | {' / '.join(f'{v:.3f}' for v in r['magenta_after'])} |")


if __name__ == "__main__":
    main()
