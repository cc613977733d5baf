"""MemoryTimeline on CUDA: running total vs torch.cuda.memory_allocated(), and recording overhead.

python3 bench/tensor_cuda.py --out bench/results/tensor_cuda.json   (prints a table, writes JSON)
python3 bench/tensor_cuda.py --smoke --out /tmp/t.json               (the two smaller MLPs, 1 warm-up, 2 reps)
"""
import argparse, datetime, json
import torch
from flame.io import atomic_write
from flame.tensor import MemoryTimeline, measure_overhead

OVERHEAD = (("MLP 8-32-32-4, batch 6", (8, 32, 32, 4), 6),
            ("MLP 1024-4096x3-1024, batch 1024", (1024, 4096, 4096, 4096, 1024), 1024),
            ("MLP 4096-8192x3-4096, batch 4096", (4096, 8192, 8192, 8192, 4096), 4096))
SMOKE = dict(cases=2, warmup=1, reps=2)   # --smoke: the overhead of the two smaller MLPs only (the allocator check is small already)

def step_fn(widths, batch, dev):
    layers = []
    for a, b in zip(widths[:-1], widths[1:]): layers += [torch.nn.Linear(a, b), torch.nn.ReLU()]
    model = torch.nn.Sequential(*layers[:-1]).to(dev)
    opt = torch.optim.Adam(model.parameters())
    x, y = torch.randn(batch, widths[0], device=dev), torch.randn(batch, widths[-1], device=dev)
    def step():
        opt.zero_grad(set_to_none=True)
        torch.nn.functional.mse_loss(model(x), y).backward()
        opt.step()
    return model, opt, step

def main(out, cases=len(OVERHEAD), warmup=3, reps=9):
    dev = torch.device("cuda")
    res = {"device": torch.cuda.get_device_name(), "torch": torch.__version__, "date": str(datetime.date.today())}
    checks = []
    for widths, batch in (((8, 32, 32, 4), 6), ((256, 512, 512, 256), 64)):
        step_fn(widths, batch, dev)[2]()  # warm-up: cuBLAS workspaces (main and autograd threads)
        model, opt, step = step_fn(widths, batch, dev)
        torch.cuda.synchronize()
        with MemoryTimeline(model, opt, device="cuda", verify=True) as tl: step()
        checks.append({"widths": widths, "batch": batch, **tl.allocator_mismatch(), "peak": tl.peak,
                       "peak_by_category": tl.peak_by_category})
    res["allocator_check"] = checks
    res["overhead"] = []
    for name, widths, batch in OVERHEAD[:cases]:
        model, opt, step = step_fn(widths, batch, dev)
        r = measure_overhead(step, reps=reps, warmup=warmup, sync=torch.cuda.synchronize, model=model, optimizer=opt, device="cuda")
        res["overhead"].append({"name": name, **r})
        del model, opt, step
    atomic_write(out, json.dumps(res, indent=1))
    print(f"{res['device']}  torch {res['torch']}  {res['date']}")
    for c in checks: print(f"allocator check {c['widths']} batch {c['batch']}: {c}")
    for r in res["overhead"]:
        print(f"{r['name']:<36} plain {r['plain_s'] * 1e3:8.2f} ms  recorded {r['recorded_s'] * 1e3:8.2f} ms  ratio {r['ratio']:.2f}x  {r['events']} events")

if __name__ == "__main__":
    from flux import parse
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cases", type=int, default=len(OVERHEAD), help="how many of the overhead MLPs, smallest first")
    a = parse(ap, SMOKE, default_out="bench/results/tensor_cuda.json", warmup=3, reps=9)
    if not torch.cuda.is_available(): ap.exit(2, "bench/tensor_cuda.py needs a CUDA GPU\n")
    main(a.out, a.cases, a.warmup, a.reps)
