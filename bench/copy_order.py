"""Do copies one way wait for each other across streams? A big pinned copy (in one piece, or in 16 or 64) is queued on
one stream; 4 ms later a 64 KiB copy the same way is queued on another. When the small one ends, against when the big one
does, says whether the GPU ran it at once or after everything queued before it (what 23_layerwise's update on the GPU
learned to avoid). Each way; median over --reps after --warmup. Prints a table, writes JSON.

    python3 bench/copy_order.py --out bench/results/copy_order.json     # GPU: a 1 GiB copy
    python3 bench/copy_order.py --smoke --out /tmp/copy_order.json      # 64 MiB
"""
import argparse, json, statistics, time
from pathlib import Path
import torch
from flux import parse

SMOKE = dict(mib=64, reps=2, warmup=1)


def once(big: tuple, small: tuple, chunks: int, way: str) -> tuple[float, float]:
    "Milliseconds from the big copy's start to its end, and to the end of the small copy queued after it on another stream."
    (H, D), (h, d), (sa, sb) = big, small, (torch.cuda.Stream(), torch.cuda.Stream())
    copy = lambda host, dev: dev.copy_(host, non_blocking=True) if way == "h2d" else host.copy_(dev, non_blocking=True)
    start, big_end, small_end = (torch.cuda.Event(enable_timing=True) for _ in range(3))
    torch.cuda.synchronize()
    with torch.cuda.stream(sa):
        start.record()
        for hc, dc in zip(H.chunk(chunks), D.chunk(chunks)): copy(hc, dc)
        big_end.record()
    time.sleep(0.004)                                            # (the big copy is running)
    with torch.cuda.stream(sb): copy(h, d); small_end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(big_end), start.elapsed_time(small_end)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--mib", type=int, default=1024, help="the big copy's size in MiB")
    a = parse(ap, SMOKE, warmup=1, reps=3)
    if not torch.cuda.is_available(): ap.exit(2, "bench/copy_order.py needs a CUDA GPU\n")
    n = a.mib * 2**20
    big = (torch.empty(n, dtype=torch.uint8).pin_memory(), torch.empty(n, dtype=torch.uint8, device="cuda"))
    small = (torch.empty(2**16, dtype=torch.uint8).pin_memory(), torch.empty(2**16, dtype=torch.uint8, device="cuda"))
    rows = []
    for way in ("h2d", "d2h"):
        for chunks in (1, 16, 64):
            runs = [once(big, small, chunks, way) for _ in range(a.warmup + a.reps)][a.warmup:]
            rows.append({"way": way, "chunks": chunks, "big_ms": statistics.median(r[0] for r in runs),
                         "small_ms": statistics.median(r[1] for r in runs)})
    res = {"device": torch.cuda.get_device_name(), "date": time.strftime("%Y-%m-%d"), "torch": torch.__version__, "mib": a.mib, "rows": rows}
    Path(a.out).parent.mkdir(parents=True, exist_ok=True); Path(a.out).write_text(json.dumps(res, indent=1))
    print(f"{res['device']}  {res['date']}  torch {res['torch']}  a {a.mib} MiB copy, then a 64 KiB one the same way on another stream")
    print(f"{'way':<5}{'pieces':>7}{'big ends ms':>13}{'small ends ms':>15}")
    for r in rows: print(f"{r['way']:<5}{r['chunks']:>7}{r['big_ms']:>13.2f}{r['small_ms']:>15.2f}")


if __name__ == "__main__":
    main()
