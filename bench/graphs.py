"""Blocks as CUDA graphs (flame.graphs.BlockGraphs) against the eager step, on the families' tiny models: a streamed full fine-tune
(every weight trainable, the first block resident, the others through two ring slots), a few checkpointed backward passes under
bf16 autocast, the same weights each time. Per model: whether the losses are equal, how many gradients are equal bit for bit, the
largest relative difference (of a gradient's norm) and where it is, and the graphs' captures. Eager runs twice, the second with
autocast's cast cache off, as the graphs cast: the graphed run is compared with that one (and the two eager runs with each other).

On an H200 (2026-11-29, this computation as a scratch script): the losses were equal; Flux's block weights' gradients were equal
bit for bit and those outside the blocks (time_in, vector_in: fed by every block's input gradient) differed by at most 0.41 % of
their norm; SDXL's differed inside the transformer stacks by up to 1.3 %. A graph sums a block's several uses of one input inside the
block and runs SDXL's transformer blocks in one graph where eager checkpoints each: float sums in another order, then bf16 rounding.
Prints a table last and writes JSON.

    python3 bench/graphs.py --out /tmp/graphs.json
    python3 bench/graphs.py --smoke --out /tmp/graphs.json      # the tiny Flux only
"""
import argparse, dataclasses, datetime, json
import torch
from flux import parse
from full import build
from flame.graphs import BlockGraphs
from flame.io import atomic_write
from flame.streaming import plan, stream

SMOKE = dict(models="flux-tiny", steps=2)


def run(name: str, graphed: bool, cache: bool, steps: int) -> tuple[list, list, str]:
    "Losses and every gradient (by name) of `steps` backward passes of `name`, streamed trainable, eager or graphed."
    torch.manual_seed(0); torch.set_autocast_cache_enabled(cache)          # (a recompute's autocast follows the global setting)
    m, loss = build(name, torch.float32, torch.device("cuda"))
    p = plan(m, budget="80GB", device="cuda", trainable=True)
    stream(m, "cuda", plan=dataclasses.replace(p, resident=[0], slots=2, depth=1), trainable=True)
    e, names, losses, grads = m._flame_streaming, {id(p): n for n, p in m.named_parameters()}, [], []
    bg = BlockGraphs([u.module for u in e.units]) if graphed else None
    try:
        for _ in range(steps):
            sunk = {}
            e.grad_sink = lambda p: sunk.__setitem__(names[id(p)], p.grad.clone())
            with torch.autocast("cuda", torch.bfloat16, cache_enabled=cache): l = loss()
            l.backward()
            sunk |= {n: p.grad.clone() for n, p in m.named_parameters() if p.grad is not None}
            m.zero_grad(set_to_none=True); losses.append(l.item()); grads.append(sunk)
        return losses, grads, repr(bg)
    finally:
        torch.set_autocast_cache_enabled(True)
        if bg is not None: bg.close()


def compare(a: tuple, b: tuple) -> dict:
    "Losses equal?, gradients equal bit for bit (of how many), the largest relative difference of a gradient's norm, and its name."
    rel = {n: ((g0[n] - g1[n]).norm() / g0[n].norm().clamp_min(1e-30)).item() for g0, g1 in zip(a[1], b[1]) for n in g0}
    worst = max(rel, key=rel.get)
    return {"losses_equal": a[0] == b[0], "exact": sum(torch.equal(g0[n], g1[n]) for g0, g1 in zip(a[1], b[1]) for n in g0),
            "gradients": sum(len(g) for g in a[1]), "worst_rel": rel[worst], "worst": worst}


def main(a):
    res = {"device": torch.cuda.get_device_name(), "torch": torch.__version__, "date": str(datetime.date.today()), "steps": a.steps, "models": []}
    for name in a.models.split(","):
        eager, nocache, graphed = run(name, False, True, a.steps), run(name, False, False, a.steps), run(name, True, True, a.steps)
        row = {"model": name, "eager_without_cast_cache": compare(eager, nocache), "graphed": compare(nocache, graphed), "graphs": graphed[2]}
        res["models"].append(row); print(row, flush=True)
        atomic_write(a.out, json.dumps(res, indent=1))
    print(f"\nblocks as CUDA graphs against eager, {res['steps']} backward passes; {res['device']}, {res['date']}")
    print(f"{'model':<11}{'losses equal':>13}{'gradients equal':>17}{'worst rel. diff':>17}  where")
    for r in res["models"]:
        g = r["graphed"]
        print(f"{r['model']:<11}{str(g['losses_equal']):>13}{g['exact']:>8} of {g['gradients']:<6}{g['worst_rel']:>17.2e}  {g['worst']}")


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--models", default="sdxl-tiny,flux-tiny")
    ap.add_argument("--steps", type=int, default=3)
    a = parse(ap, SMOKE)
    if not torch.cuda.is_available(): ap.exit(2, "bench/graphs.py needs a CUDA GPU\n")
    main(a)
