"""The optimizer state in a memory-mapped file (flame.layerwise.map_state, `flame train --state-dir`): what an AdamW update costs
with its state in RAM, in a mapped file whose pages stay in RAM, and in a mapped file paged out before each step — what a host
too small to keep it sees (msync, then madvise MADV_PAGEOUT: every step reads the moments from the disk and writes them back).
Also the disk's own rates (a written file fsynced; read back once its pages were dropped). Runs where it is started: the update
on the CPU (FlatAdamW over flat fp32 buffers), the disk under --dir. Prints a table, writes JSON.

    python3 bench/state_file.py --dir /tmp --out bench/results/state_file_cpu.json
    python3 bench/state_file.py --smoke --out /tmp/state_file.json
"""
import argparse, ctypes, datetime, json, os, platform, statistics, tempfile, time
import torch
from flux import parse
from flame.io import atomic_write, format_bytes
from flame.layerwise import map_state
from flame.optim import FlatAdamW

SMOKE = dict(params=1 << 20, warmup=1, reps=2)
MS_SYNC, MADV_PAGEOUT = 4, 21                                          # (linux/mman.h; madvise's PAGEOUT since Linux 5.4)
libc = ctypes.CDLL(None, use_errno=True)


def page_out(buf: torch.Tensor) -> float:
    "Write `buf`'s dirty pages to its file and drop them from RAM (the next read faults them in from the disk); seconds it took."
    t0, a, n = time.perf_counter(), ctypes.c_void_p(buf.data_ptr()), ctypes.c_size_t(buf.nbytes)
    if libc.msync(a, n, MS_SYNC) or libc.madvise(a, n, MADV_PAGEOUT): raise OSError(ctypes.get_errno(), "msync/madvise failed")
    return time.perf_counter() - t0


def disk_rates(folder: str, n: int) -> dict:
    "Bytes/s of writing `n` bytes to a file in `folder` (fsynced) and of reading them back once their pages were dropped."
    fd, path = tempfile.mkstemp(dir=folder)
    try:
        data = os.urandom(1 << 20) * (n >> 20)
        t0 = time.perf_counter(); os.write(fd, data); os.fsync(fd); w = time.perf_counter() - t0
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        t0 = time.perf_counter(); os.lseek(fd, 0, 0); got = len(os.read(fd, len(data))); r = time.perf_counter() - t0
        assert got == len(data)
    finally: os.close(fd); os.unlink(path)
    return {"write": len(data) / w, "read": len(data) / r}


def timed(opt: FlatAdamW, warmup: int, reps: int, before=None) -> dict:
    "Median seconds of `opt.step()` (after `before()`, untimed, each step) and of `before` itself."
    steps, prep = [], []
    for i in range(warmup + reps):
        s = before() if before else 0.0
        t0 = time.perf_counter(); opt.step(); t = time.perf_counter() - t0
        if i >= warmup: steps.append(t); prep.append(s)
    return {"step_s": statistics.median(steps), "page_out_s": statistics.median(prep)}


def main(a):
    n, g = a.params, torch.Generator().manual_seed(0)
    res = {"device": platform.processor() or platform.machine(), "cpus": os.cpu_count(), "torch": torch.__version__, "date": str(datetime.date.today()),
           "params": n, "optimizer": "FlatAdamW, fp32 weights and moments, on the CPU", "dir": a.dir, "warmup": a.warmup, "reps": a.reps}
    res["disk"] = disk_rates(a.dir, max(1 << 20, 8 * n))
    rows = []
    for where in ("ram", "file", "file, paged out"):
        p = torch.nn.Parameter(torch.randn(n, generator=g))
        opt = FlatAdamW([p], lr=1e-3, weight_decay=0.01)
        opt.grads.flat.copy_(torch.randn(n, generator=g))
        buf = map_state(opt, a.dir) if where != "ram" else None
        out = (lambda b=buf: page_out(b)) if "paged" in where else None
        rows.append({"state": where, "state_bytes": 8 * n, **timed(opt, a.warmup, a.reps, out)})
        print(rows[-1], flush=True)
    res["rows"], ram = rows, rows[0]["step_s"]
    for r in rows: r["x_ram"] = r["step_s"] / ram
    res["predicted_paged_s"] = 8 * n / res["disk"]["read"] + ram    # (the moments read back; written back by page_out, timed apart)
    atomic_write(a.out, json.dumps(res, indent=1))
    d = res["disk"]
    print(f"\nAdamW update of {n / 1e6:.0f}M fp32 parameters ({format_bytes(8 * n)} of moments) on {res['cpus']} CPUs, torch {res['torch']}, {res['date']}")
    print(f"disk under {a.dir}: write {d['write'] / 1e9:.2f} GB/s (fsynced), read {d['read'] / 1e9:.2f} GB/s (pages dropped first)")
    print(f"{'state':<18}{'s/step':>9}{'x RAM':>8}{'write-back s':>14}")
    for r in rows: print(f"{r['state']:<18}{r['step_s']:>9.3f}{r['x_ram']:>8.2f}{r['page_out_s']:>14.3f}")
    print(f"paged out, predicted from the disk's read rate: {res['predicted_paged_s']:.3f} s a step (plus the write-back)")


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--params", type=int, default=1 << 26, help="fp32 parameters (their two moments: 8 bytes each)")
    ap.add_argument("--dir", default=tempfile.gettempdir(), help="the folder the state file and the disk test go in")
    main(parse(ap, SMOKE, warmup=1, reps=3))
