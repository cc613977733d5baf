#!/usr/bin/env python3
"""Triton launches in one Flux (and SD3.5) LoRA training step, counted per block (issue 17: on H200s the fp8 and streamed steps wait on
the CPU, which spends tens of microseconds of Python on each launch). A small Flux with Flux-dev's block structure (LoRA rank
4 on every linear, checkpointed, bf16 or fp8 base) runs one forward + backward after a warm one; every launch of a Triton
kernel is counted by kernel. A double block's counts are those of a model with two double blocks and one single less one
with one of each, a single block's likewise; what is left of the one-and-one model is outside the blocks, less what the first block skips (with no single
block, the last double block's text stream would go unused, and its backward unlaunched). The Flux-dev row is these counts times its 19 + 38 blocks, plus the rest.
SD3.5 likewise: a joint block (QK norms, as SD3.5 Large) is a 3-block model less a 2-block one; the SD3.5 Large row is the 2-block
model plus 36 joint blocks.
On a GPU; or on the CPU with TRITON_INTERPRET=1, where the same code launches the same kernels (there in fp32). Prints a
table, writes JSON.

    python bench/launches.py --out bench/results/launches.json                                    # a GPU
    TRITON_INTERPRET=1 python bench/launches.py --device cpu --out bench/results/launches_cpu.json
    python bench/launches.py --smoke --out /tmp/launches.json                                     # the same run (it is small)
"""
import argparse, collections, datetime, json, sys
from pathlib import Path
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from flux import parse
from flame.io import atomic_write

SMOKE = {}                                             # (the run is small already)
DEV_BLOCKS = {"double": 19, "single": 38}              # Flux-dev's
SD35_LARGE_BLOCKS = 38


def count_launches():
    "A Counter of Triton launches by kernel name while `counting[0]` is True: `run` of Triton's jitted (and interpreted) kernels, wrapped."
    from triton.runtime.jit import JITFunction
    classes = [JITFunction]
    try:
        from triton.runtime.interpreter import InterpretedFunction
        classes.append(InterpretedFunction)
    except ImportError: pass
    counts, counting = collections.Counter(), [False]
    for cls in classes:
        def run(self, *a, _run=cls.run, **k):
            if counting[0]: counts[self.fn.__name__] += 1
            return _run(self, *a, **k)
        cls.run = run
    return counts, counting

def step_launches(double: int, single: int, base: str, device, counts, counting, warmup: int = 1) -> collections.Counter:
    "Launches of one LoRA training step of a small Flux of `double` + `single` blocks, after `warmup` steps."
    import torch
    from flame.models.flux import Flux, FluxConfig
    from flame.models.fp8 import to_fp8
    torch.manual_seed(0)
    dtype = torch.bfloat16 if device.type == "cuda" else torch.float32
    c = FluxConfig.tiny(depth=double, depth_single_blocks=single)
    m = Flux(c).to(device, dtype).requires_grad_(False)
    if base == "fp8": m = to_fp8(m, Flux.fp8_skip)
    r = lambda *s: torch.randn(*s, device=device, dtype=dtype)
    ids = lambda n: torch.zeros(1, n, 3, device=device, dtype=dtype)
    x = (r(1, 64, c.in_channels), ids(64), r(1, 8, c.context_in_dim), ids(8), torch.full((1,), .5, device=device, dtype=dtype),
         r(1, c.vec_in_dim), torch.full((1,), 3.5, device=device, dtype=dtype))
    return counted(m, lambda: m(*x), counts, counting, warmup)

def sd3_launches(depth: int, base: str, device, counts, counting, warmup: int = 1) -> collections.Counter:
    "Launches of one LoRA training step of a small SD3.5 (QK norms) of `depth` joint blocks, after `warmup` steps."
    import torch
    from flame.models.sd3 import SD3, SD3Config
    from flame.models.fp8 import to_fp8
    torch.manual_seed(0)
    dtype = torch.bfloat16 if device.type == "cuda" else torch.float32
    c = SD3Config.tiny(depth=depth, qk_norm="rms")
    m = SD3(c).to(device, dtype).requires_grad_(False)
    if base == "fp8": m = to_fp8(m, SD3.fp8_skip)
    r = lambda *s: torch.randn(*s, device=device, dtype=dtype)
    t = torch.full((1,), 500., device=device, dtype=dtype)
    return counted(m, lambda: m(r(1, c.in_channels, 8, 8), t, y=r(1, c.pooled_dim), context=r(1, 8, c.context_in_dim)), counts, counting, warmup)

def counted(m, forward, counts, counting, warmup: int) -> collections.Counter:
    "Launches of one LoRA step of `m` (rank 4 on every linear, checkpointed): `forward()`, a loss, its backward; after `warmup` such steps."
    from flame.lora import add_lora
    add_lora(m, rank=4); m.checkpointing = True
    for _ in range(warmup): forward().float().square().mean().backward()   # compiles, and `_launch`'s tuning, are not counted
    counts.clear(); counting[0] = True
    forward().float().square().mean().backward()
    counting[0] = False
    return collections.Counter(counts)

def less(a, b) -> collections.Counter:
    "a - b, keeping what falls below 0 (see `measure`'s rest)."
    a = collections.Counter(a); a.subtract(b)
    return a

def measure(base: str, device, counts, counting, warmup: int = 1) -> dict:
    "Per kind of block and outside them, and Flux-dev's step: launches by kernel."
    run = {k: step_launches(*k, base, device, counts, counting, warmup) for k in ((1, 1), (2, 1), (1, 2))}
    per = {"double": less(run[2, 1], run[1, 1]), "single": less(run[1, 2], run[1, 1])}
    per["rest"] = less(less(run[1, 1], per["double"]), per["single"])   # (below 0 where the first block launches less: its input
    assert all(v >= 0 for kind in ("double", "single") for v in per[kind].values()), per   #  needs no gradient)
    dev = collections.Counter(per["rest"])
    for kind, n in DEV_BLOCKS.items():
        for name, k in per[kind].items(): dev[name] += n * k
    return {kind: {k: v for k, v in c.most_common() if v} for kind, c in {**per, "flux-dev step": dev}.items()}

def measure_sd3(base: str, device, counts, counting, warmup: int = 1) -> dict:
    "A joint block's launches, and SD3.5 Large's step: launches by kernel."
    two, three = (sd3_launches(n, base, device, counts, counting, warmup) for n in (2, 3))
    joint = less(three, two)
    assert all(v >= 0 for v in joint.values()), joint
    step = collections.Counter(two)
    for name, k in joint.items(): step[name] += (SD35_LARGE_BLOCKS - 2) * k
    return {kind: {k: v for k, v in c.most_common() if v} for kind, c in {"sd3.5 joint": joint, "sd3.5-large step": step}.items()}

def table(res) -> str:
    lines = [f"Triton launches in one LoRA step ({res['device']}, {res['date']})", "| base | where | launches | by kernel |", "|---|---|---|---|"]
    for base in res["bases"]:
        for where, c in {**res["bases"][base], **res.get("sd3.5", {}).get(base, {})}.items():
            lines.append(f"| {base} | {where} | {sum(c.values())} | " + ", ".join(f"{k.strip('_')} {v}" for k, v in c.items()) + " |")
    return "\n".join(lines)

def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--device", default="cuda", help="cuda (default), or cpu with TRITON_INTERPRET=1")
    a = parse(ap, SMOKE, "bench/results/launches.json", warmup=1)          # (--reps: unused, one step is counted)
    import torch, triton
    from flame.kernels.core import interpreting
    device = torch.device(a.device)
    if device.type == "cuda" and not torch.cuda.is_available(): ap.exit(2, "bench/launches.py: no CUDA GPU (on the CPU: TRITON_INTERPRET=1 ... --device cpu)\n")
    if device.type == "cpu" and not interpreting(): ap.exit(2, "bench/launches.py: --device cpu counts nothing without TRITON_INTERPRET=1\n")
    res = {"device": torch.cuda.get_device_name() if device.type == "cuda" else "CPU, Triton interpreter", "date": datetime.date.today().isoformat(),
           "torch": torch.__version__, "triton": triton.__version__}
    counts, counting = count_launches()
    res["bases"] = {b: measure(b, device, counts, counting, a.warmup) for b in ("bf16", "fp8")}
    res["sd3.5"] = {b: measure_sd3(b, device, counts, counting, a.warmup) for b in ("bf16", "fp8")}
    print(table(res))
    print(f"wrote {atomic_write(a.out, json.dumps(res, indent=1))}")

if __name__ == "__main__":
    main()
