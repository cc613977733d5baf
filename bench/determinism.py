"""Do two processes train the same run to the same bits? The tiny demo Flux trained for a few steps in fresh processes, in pairs:
with a fresh Triton cache each, with one cache shared (the second process finds the first one's tuning on disk), both reading
a cache already filled (what 72_cli's GPU resume test relies on being exact), with
attention on PyTorch's SDPA instead of FLAME's autotuned kernel, and with PyTorch's references for every kernel. Each pair's
first step whose loss differs, and the largest relative difference, tell which part makes a run not repeat itself bit for
bit (on an H100, 2026-11-23: the shared-cache pair differed from step 7 on; the references-only pair did not differ). The cause
was the row kernels' backward, whose chunking was chosen by timing in each process and changes the order of its sums; since the
choice is kept in the Triton cache dir (flame.kernels.core.remembered), a shared or filled cache must give equal pairs, and only
"fresh caches" may still differ (each process chooses for itself).
Prints a table last and writes JSON.

    python3 bench/determinism.py --out /tmp/determinism.json          # GPU (a minute or two)
    python3 bench/determinism.py --smoke --out /tmp/determinism.json  # 3 steps, the shared-cache pair only (each fresh cache
                                                                      # costs half a minute of Triton tuning); on the CPU it must agree
"""
import argparse, datetime, json, os, subprocess, sys, tempfile
from pathlib import Path
import torch

# each variant: how the child process runs `flame train` ("triton": as shipped; "sdpa": attention on SDPA; "reference": no Triton)
WRAP = """import sys
from flame.cli import main
mode = sys.argv[1]
if mode == "sdpa":
    import importlib
    importlib.import_module("flame.kernels.attention").use_triton = lambda *t: False
if mode == "reference":
    from flame.kernels.core import backend
    with backend("reference"): sys.exit(main(sys.argv[2:]))
sys.exit(main(sys.argv[2:]))
"""
# (the third pair reads the cache the second pair's first process filled: both its processes find their tuning on disk)
PAIRS = [("fresh caches", ("triton", "A"), ("triton", "B")), ("one cache, shared", ("triton", "C"), ("triton", "C")),
         ("both read a filled cache", ("triton", "C"), ("triton", "C")),
         ("attention on SDPA, shared cache", ("sdpa", "D"), ("sdpa", "D")), ("references only", ("reference", "E"), ("reference", "F"))]


def run(tmp: Path, base: Path, name: str, mode: str, cache: str, steps: int, device: str) -> list[float]:
    "The losses of one `flame train` in a new process (`mode`, TRITON_CACHE_DIR `tmp/cache`)."
    from flame.train import read_metrics
    root = str(Path(__file__).resolve().parents[1])
    env = {**os.environ, "TRITON_CACHE_DIR": str(tmp / f"cache-{cache}"), "PYTHONPATH": os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH")) if p)}
    out = tmp / name
    r = subprocess.run([sys.executable, "-c", WRAP, mode, "train", "--checkpoint", str(base), "--steps", str(steps), "--save-every", "0",
                        "--sample-seeds", "1", "--sample-steps", "2", "--device", device, "--no-progress", "--output", str(out)],
                       env=env, capture_output=True, text=True)
    if r.returncode: raise RuntimeError(f"{name}: flame train failed: {r.stderr.strip()[-800:]}")
    return [m["loss"] for m in read_metrics(out / "metrics.csv")]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--steps", type=int, default=12)
    ap.add_argument("--out", required=True)
    ap.add_argument("--smoke", action="store_true", help="3 steps, one pair (explicit flags still win)")
    a = ap.parse_args()
    if a.smoke: ap.set_defaults(steps=3); a = ap.parse_args()
    from flame.demo import DEMO_FLUX, seeded_flux
    device = "cuda" if torch.cuda.is_available() else "cpu"
    tmp = Path(tempfile.mkdtemp())
    base = tmp / "base.safetensors"
    seeded_flux(DEMO_FLUX, 0).save_safetensors(base)
    rows = []
    for label, (m1, c1), (m2, c2) in PAIRS[1:2] if a.smoke else PAIRS:
        slug = label.replace(" ", "_").replace(",", "")
        x, y = (run(tmp, base, f"{slug}-{i}", m, c, a.steps, device) for i, (m, c) in enumerate(((m1, c1), (m2, c2))))
        first = next((i + 1 for i, (p, q) in enumerate(zip(x, y)) if p != q), None)
        rel = max(abs(p - q) / abs(q) for p, q in zip(x, y))
        rows.append({"pair": label, "first_step_differing": first, "max_rel_diff": rel, "losses": [x, y]})
        print(f"{label:34s} first differing step: {first or '-':>4}   largest relative difference {rel:.1e}", flush=True)
    res = {"device": torch.cuda.get_device_name() if device == "cuda" else "cpu", "date": datetime.date.today().isoformat(),
           "torch": torch.__version__, "steps": a.steps, "rows": rows}
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    Path(a.out).write_text(json.dumps(res, indent=1))
    if device == "cpu" and any(r["first_step_differing"] for r in rows): sys.exit("determinism: on the CPU every pair must agree")


if __name__ == "__main__":
    main()
