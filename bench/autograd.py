"""Step time and peak memory of a stack of Flux-sized transformer blocks under FLAME's autograd policies.

plain / checkpoint / checkpoint + flame.autograd.offload_activations / checkpoint + torch's save_on_cpu.
Median of interleaved timed steps after warm-up (CUDA events); peak = max_memory_allocated above the weights
and gradients. Prints a table and writes JSON (--out). Needs a CUDA GPU.

    python3 bench/autograd.py --out bench/results/autograd.json
    python3 bench/autograd.py --smoke --out /tmp/autograd.json     # 2 small blocks, same code path
"""
import argparse, datetime, json, statistics, sys
from pathlib import Path
import torch
from torch import nn
from flame.autograd import checkpoint, offload_activations
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "nbs"))   # the notebooks' toy models (not in the package)
from toys import DemoBlock, POLICIES, policy_step
from flux import parse
from flame.io import atomic_write

SMOKE = dict(blocks=2, width=256, heads=4, tokens=256, warmup=1, reps=2)   # --smoke: the same run at the smallest sizes

def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--blocks", type=int, default=8)
    ap.add_argument("--width", type=int, default=3072)
    ap.add_argument("--heads", type=int, default=24)
    ap.add_argument("--tokens", type=int, default=4608)
    a = parse(ap, SMOKE, default_out="bench/results/autograd.json", warmup=3, reps=10)
    if not torch.cuda.is_available(): ap.exit(2, "bench/autograd.py needs a CUDA GPU\n")
    dev, dt = torch.device("cuda"), torch.bfloat16
    torch.manual_seed(0)
    blocks = nn.Sequential(*[DemoBlock(a.width, a.heads, device=dev, dtype=dt) for _ in range(a.blocks)])
    x = torch.randn(1, a.tokens, a.width, device=dev, dtype=dt)

    def step(policy):
        blocks.zero_grad(set_to_none=False)
        return policy_step(blocks, x, policy)

    losses = {}
    for p in POLICIES:                                  # warm-up; grads allocated once, kept (set_to_none=False)
        for _ in range(a.warmup): losses[p] = step(p).item()
    torch.cuda.synchronize()
    base = torch.cuda.memory_allocated()
    peaks, host = {}, {}
    for p in POLICIES:
        torch.cuda.reset_peak_memory_stats()
        step(p); torch.cuda.synchronize()
        peaks[p] = torch.cuda.max_memory_allocated() - base
    # bytes offloaded per step (checkpoint: the block inputs)
    with offload_activations() as off:
        h = x
        for b in blocks: h = checkpoint(b, h)
        loss = h.float().square().mean()
    loss.backward(); torch.cuda.synchronize()
    host["offload"] = off.stats["offloaded_bytes"] / 2**30
    times = {p: [] for p in POLICIES}
    for _ in range(a.reps):
        for p in POLICIES:
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            s.record(); step(p); e.record(); torch.cuda.synchronize()
            times[p].append(s.elapsed_time(e))
    rows = [dict(policy=p, ms=statistics.median(times[p]), ms_all=times[p], peak_gib=peaks[p] / 2**30,
                 host_gib=host.get(p, 0.0), loss=losses[p]) for p in POLICIES]
    res = dict(device=torch.cuda.get_device_name(), torch=torch.__version__, date=str(datetime.date.today()),
               config=f"{a.blocks} blocks, width {a.width}, {a.heads} heads, {a.tokens} tokens, bf16, batch 1, trainable",
               weights_gib=sum(p.numel() * p.element_size() for p in blocks.parameters()) / 2**30, rows=rows)
    ck = rows[1]["ms"]
    print(f"{res['device']} | {res['config']}")
    print(f"{'policy':<13}{'step ms':>9}{'vs ckpt':>9}{'peak GiB':>10}{'host GiB':>10}")
    for r in rows: print(f"{r['policy']:<13}{r['ms']:>9.1f}{r['ms'] / ck:>8.3f}x{r['peak_gib']:>10.2f}{r['host_gib']:>10.2f}")
    print(f"losses equal across policies: {len(set(losses.values())) == 1}; offload/checkpoint = {rows[2]['ms'] / ck:.3f} "
          f"(target <= 1.10), save_on_cpu/checkpoint = {rows[3]['ms'] / ck:.3f}")
    atomic_write(a.out, json.dumps(res, indent=1))

if __name__ == "__main__": main()
