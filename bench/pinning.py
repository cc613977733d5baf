"""Page-locking a fresh host pool in place (what the streaming engine does with its pool: cudaHostRegister), in 4 KiB pages
and after asking for transparent huge pages (flame.streaming's `_huge_pages`, as its `_pin` does); then host→device copy
speed from it. Alternating runs, the first of each discarded as warm-up. Prints a table, writes JSON.

    python3 bench/pinning.py --out bench/results/pinning.json     # GPU: an 8 GiB pool
    python3 bench/pinning.py --smoke --out /tmp/pinning.json      # 256 MiB
"""
import argparse, json, statistics, time
from pathlib import Path
import torch
from flux import parse
from flame.streaming import _huge_pages          # what the streaming engine's pool asks for before page-locking

SMOKE = dict(gib=0.25, reps=2)


def pin_once(n: int, huge: bool) -> tuple[float, float]:
    "Seconds to page-lock a fresh n-byte pool, and host→device GiB/s from it."
    t = torch.empty(n, dtype=torch.uint8)
    if huge: _huge_pages(t)
    t0 = time.perf_counter()
    if int(torch.cuda.cudart().cudaHostRegister(t.data_ptr(), n, 0)) != 0: raise RuntimeError("cudaHostRegister failed")
    locked = time.perf_counter() - t0
    t.fill_(1); chunk = min(n, 1 << 30); g = torch.empty(chunk, dtype=torch.uint8, device="cuda")
    torch.cuda.synchronize(); t0 = time.perf_counter()
    for i in range(0, n - chunk + 1, chunk): g.copy_(t[i:i + chunk], non_blocking=True)
    torch.cuda.synchronize(); gbs = (n // chunk * chunk) / 2**30 / (time.perf_counter() - t0)
    torch.cuda.cudart().cudaHostUnregister(t.data_ptr())
    return locked, gbs


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--gib", type=float, default=8.0, help="pool size in GiB")
    a = parse(ap, SMOKE, reps=3)
    if not torch.cuda.is_available(): ap.exit(2, "bench/pinning.py needs a CUDA GPU\n")
    n = int(a.gib * 2**30)
    rows = {False: [], True: []}
    for i in range(a.reps + 1):
        for huge in (False, True):
            r = pin_once(n, huge)
            if i: rows[huge].append(r)                       # the first round warms the driver up
    thp = Path("/sys/kernel/mm/transparent_hugepage/enabled")
    res = {"device": torch.cuda.get_device_name(), "date": time.strftime("%Y-%m-%d"), "torch": torch.__version__, "gib": a.gib,
           "thp": thp.read_text().strip() if thp.exists() else None,
           "rows": {("huge" if h else "4k"): {"lock_s": [x for x, _ in v], "h2d_gib_s": [y for _, y in v]} for h, v in rows.items()}}
    med = {k: statistics.median(v["lock_s"]) for k, v in res["rows"].items()}
    res["speedup"] = med["4k"] / med["huge"]
    Path(a.out).parent.mkdir(parents=True, exist_ok=True); Path(a.out).write_text(json.dumps(res, indent=1))
    print(f"{res['device']}  {res['date']}  torch {res['torch']}  {a.gib:g} GiB pool, THP: {res['thp']}")
    for k, v in res["rows"].items():
        print(f"  {k:>5} pages: page-lock {statistics.median(v['lock_s']):.2f} s (median of {len(v['lock_s'])}), "
              f"host→device {statistics.median(v['h2d_gib_s']):.1f} GiB/s")
    print(f"  huge pages lock {res['speedup']:.2f}x faster")


if __name__ == "__main__":
    main()
