"""Several GPUs (flame train --nproc N, NCCL): a Flux-dev-size LoRA (random weights in BFL's single-file layout, r16) at 1024²,
batch 1 per GPU under an 8 GB budget per GPU, trained on 1 GPU and on N in turns (`--rounds`) — s/step, samples/s and the
scaling (issue target: >= 1.85x on 2 GPUs), the median of the turns' — beside the host-to-device copy rate into each GPU alone
and into all at once (each streaming rank copies most of the frozen weights every step), and a check of the same path at a tiny size: N processes of batch 1 against 1 process of batch N
(the same global batch: the same losses and LoRA, to bf16 rounding). Prints a table last and writes JSON.

    python3 bench/distributed.py --out $OUT/distributed.json          # a machine with 2 or more GPUs (~37 GB of files in --work)
    python3 bench/distributed.py --mode full --budget 12GB --out $OUT/distributed_full.json   # Flux-dev fully fine-tuned, layer-wise
    python3 bench/distributed.py --mode full --size small --optimizer adamw --weights-dtype fp32 --fsdp off --budget 7GB \
        --out $OUT/distributed_sharded.json   # a state that fits 2 GPUs sharded, not 1: on the device on 2, layer-wise on 1
    python3 bench/distributed.py --mode full --size small --optimizer adamw --weights-dtype fp32 --fsdp --budget 7GB \
        --out $OUT/distributed_fsdp.json      # the same under FSDP2 on the N processes (weights and gradients sharded too;
                                              # without --fsdp, flame train's default chooses FSDP2 where only it fits)
    python3 bench/distributed.py --smoke --out /tmp/distributed.json  # tiny, 2 processes: on 2 GPUs, else on the CPU (gloo)

`--mode full` trains every weight instead (bf16 weights, Adafactor, each block clipped to its share and updated in its
backward: the README's 12 GB recipe); under a budget each process keeps its own copy of the weights in host memory, and its part of the
optimizer state (`--fsdp off` to see it: `host`, each process's peak resident memory).
`--optimizer` and `--weights-dtype` change that recipe: with AdamW in fp32 on the small Flux (about 0.5B weights, 16 bytes
each on one GPU, 12 on each of two: the moments sharded) a budget between the two trains layer-wise on one GPU and on the
device on two.
"""
import argparse, json, re, resource, shutil, statistics, sys, tempfile, threading, time
from dataclasses import replace
from pathlib import Path
import torch
from flux import random_flux
from train import SIZES

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "nbs"))
SMOKE = dict(size="tiny", resolution=64, steps=3, budget=None, rounds=1)


def setup_files(work: Path, size: str, device: str) -> dict:
    "The random Flux checkpoint and a field with Flux's interface (tiny T5, CLIP and VAE: caching is not what is measured)."
    from fixtures import tiny_field_components
    from flame.models.flux import FluxConfig
    ckpt, field = work / f"flux-{size}.safetensors", work / "field"
    if not ckpt.exists():
        flux = random_flux(FluxConfig.dev(**SIZES[size]), device, torch.bfloat16)
        flux.save_safetensors(ckpt); del flux
        if device == "cuda": torch.cuda.empty_cache()
    if not field.exists(): tiny_field_components(field, latent_channels=16, vae_blocks=4, t5_dim=4096, clip_dim=768)
    return {"checkpoint": str(ckpt), "field": str(field)}


def host_peak(nproc: int) -> int:
    """Peak resident host memory (bytes) of a process of the run that just ended: this process's since `run` reset it (one process);
    for N, the largest of every process this bench has spawned and waited for so far (the N-process runs' ranks: with several
    turns, the largest over those turns — the kernel keeps no per-run figure for children)."""
    if nproc > 1: return resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024
    return int(re.search(r"VmHWM:\s+(\d+) kB", Path("/proc/self/status").read_text())[1]) * 1024


def run(cfg, data, size: str, keep: bool = True) -> dict:
    """One run (N processes through flame's launcher when cfg.nproc > 1): rank 0's losses, s/step (median after the first) and peak,
    and the peak host memory of a process. A checkpoint of another size than Flux-dev's is given as a model (flux-dev's family
    checks the size; each process gets a copy). `keep=False`: the run's folder is removed after (Flux-dev's: tens of GB)."""
    from flame.models.flux import Flux
    from flame.train import train, read_metrics
    model = None
    if size != "dev":
        model = Flux.from_safetensors(cfg.checkpoint, dtype=torch.bfloat16 if cfg.device == "cuda" else torch.float32)
        cfg = replace(cfg, checkpoint=None)
    try: Path("/proc/self/clear_refs").write_text("5"); since = "run"  # (this process's peak resident memory: from here)
    except OSError: since = "start"                                   # (not allowed here: since the bench started)
    t0 = time.perf_counter()
    r = train(cfg, model=model, data=data)
    host, rows = host_peak(cfg.nproc), read_metrics(Path(cfg.output) / "metrics.csv")
    if not keep: shutil.rmtree(cfg.output)
    dts = [b["seconds"] - a["seconds"] for a, b in zip(rows, rows[1:])]
    return {"nproc": cfg.nproc, "batch_size": cfg.batch_size, "policy": r.policy, "held": r.held, "losses": r.losses, "weights": str(r.weights),
            "s_per_step": statistics.median(dts) if dts else None, "peak_bytes": max(x["mem_bytes"] for x in rows), "host_peak_bytes": host, "host_peak_since": since if cfg.nproc == 1 else "run",
            "seconds": time.perf_counter() - t0}


def copy_rates(gpus: int, gib: float = 1.0, reps: int = 5) -> dict:
    """Host-to-device GB/s from pinned memory into each GPU alone, then into all of them at once (a thread each, its own buffers):
    whether the GPUs share the host's links — what N streaming ranks share."""
    n = int(gib * 2**30)
    src = [torch.empty(n, dtype=torch.uint8, pin_memory=True) for _ in range(gpus)]
    dst = [torch.empty(n, dtype=torch.uint8, device=f"cuda:{i}") for i in range(gpus)]
    def copy(i):
        with torch.cuda.device(i), torch.cuda.stream(s := torch.cuda.Stream()):
            for _ in range(reps): dst[i].copy_(src[i], non_blocking=True)
        s.synchronize()
    def rate(ids):
        for i in ids: copy(i)                                         # (warm-up)
        th = [threading.Thread(target=copy, args=(i,)) for i in ids]
        t = time.perf_counter(); [x.start() for x in th]; [x.join() for x in th]
        return reps * n * len(ids) / (time.perf_counter() - t) / 1e9
    return {"alone": [rate([i]) for i in range(gpus)], "together": rate(list(range(gpus)))}


def rel(a, b) -> float:
    a, b = torch.as_tensor(a, dtype=torch.float64), torch.as_tensor(b, dtype=torch.float64)
    return ((a - b).norm() / b.norm()).item()


def lora_rel(a: str, b: str) -> float:
    from safetensors.torch import load_file
    x, y = load_file(a), load_file(b)
    return max(rel(x[k].float(), y[k].float()) for k in y)


def main():
    from flux import parse
    from flame.cli import _fsdp
    from flame.optim import OPTIMIZERS
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--size", choices=list(SIZES), default="dev", help="the Flux of the throughput runs")
    ap.add_argument("--nproc", type=int, default=2)
    ap.add_argument("--resolution", type=int, default=1024)
    ap.add_argument("--steps", type=int, default=8)
    ap.add_argument("--rounds", type=int, default=2, help="turns of a 1-process run then an N-process one (the scaling: their median)")
    ap.add_argument("--budget", default="8GB", help="per GPU")
    ap.add_argument("--mode", choices=["lora", "full"], default="lora")
    ap.add_argument("--optimizer", choices=list(OPTIMIZERS), default="adafactor", help="--mode full: the optimizer")
    ap.add_argument("--weights-dtype", choices=["fp32", "bf16"], default="bf16", help="--mode full: the trained weights' dtype")
    ap.add_argument("--fsdp", type=_fsdp, nargs="?", const=True, default="auto", metavar="on|off|auto",
                    help="--mode full, the N-process runs: under FSDP2 (on; adamw or adamw-bf16), never, or where only it fits (auto, flame train's default)")
    ap.add_argument("--work", default=None, help="where the files are written (kept and reused; default: a new temporary folder)")
    a = parse(ap, SMOKE)
    from flame.fsdp import FSDP_OPTIMIZERS
    if a.fsdp is True and (a.mode != "full" or a.optimizer not in FSDP_OPTIMIZERS): ap.error(f"--fsdp needs --mode full and --optimizer {' or '.join(FSDP_OPTIMIZERS)}")
    from flame.data import Shapes
    from flame.train import TrainConfig
    gpus = torch.cuda.device_count() if torch.cuda.is_available() else 0
    device = "cuda" if gpus >= a.nproc else "cpu"
    if not a.smoke and device == "cpu": ap.exit(2, f"bench/distributed.py needs {a.nproc} CUDA GPUs (this machine has {gpus}); --smoke runs on the CPU\n")
    work = Path(a.work or tempfile.mkdtemp())
    files = setup_files(work, a.size, "cuda" if gpus else "cpu")
    base = TrainConfig(model="flux-dev", checkpoint=files["checkpoint"], vae=files["field"], text_encoder=files["field"], budget=a.budget,
                       resolution=a.resolution, steps=a.steps, batch_size=1, rank=16, lr=1e-4, save_every=0, sample_seeds=1, sample_steps=1,
                       progress=False, overwrite=True, device=device)
    if a.mode == "full": base = replace(base, mode="full", weights_dtype=a.weights_dtype, optimizer=a.optimizer, clip="unit", fsdp=a.fsdp)   # (one process: no FSDP2)
    data = Shapes(n=16, size=a.resolution)
    res = {"device": torch.cuda.get_device_name() if device == "cuda" else "cpu", "gpus": gpus, "date": time.strftime("%Y-%m-%d"),
           "torch": torch.__version__, "size": a.size, "mode": a.mode, "optimizer": a.optimizer, "weights_dtype": a.weights_dtype, "fsdp": a.fsdp, "resolution": a.resolution, "budget_per_gpu": a.budget}
    if device == "cuda": res["copy_gb_s"] = copy_rates(a.nproc)
    turns = []                                                        # (runs minutes apart drift with the machine: in turns)
    for _ in range(a.rounds):
        one = run(replace(base, output=str(work / "one")), data, a.size, keep=False)
        many = run(replace(base, output=str(work / "many"), nproc=a.nproc), data, a.size, keep=False)
        turns.append({"one": one, "many": many, "scaling": a.nproc * one["s_per_step"] / many["s_per_step"] if many["s_per_step"] else None})
    res["throughput"] = {**turns[-1], "turns": turns,
                         "scaling": statistics.median(t["scaling"] for t in turns) if all(t["scaling"] for t in turns) else None}
    # the same global batch on 1 and on N processes: tiny, no budget
    if a.size != "tiny": files = setup_files(work, "tiny", "cuda" if gpus else "cpu")
    small = replace(base, checkpoint=files["checkpoint"], budget=None, resolution=256 if device == "cuda" else 64, steps=3)
    ref = run(replace(small, output=str(work / "ref"), batch_size=a.nproc), data, "tiny")
    got = run(replace(small, output=str(work / "got"), nproc=a.nproc), data, "tiny")
    res["same_global_batch"] = {"one": ref, "many": got, "losses_rel": rel(got["losses"], ref["losses"]), "lora_rel": lora_rel(got["weights"], ref["weights"])}
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    Path(a.out).write_text(json.dumps(res, indent=1, default=str))
    t, s = res["throughput"], res["same_global_batch"]
    what = "LoRA r16" if a.mode == "lora" else f"full fine-tune ({a.weights_dtype}, {a.optimizer}, --clip unit{', --fsdp' if a.fsdp is True else ', --fsdp off' if a.fsdp is False else ''})"
    print(f"{res['device']} x{gpus}  {res['date']}  torch {res['torch']}  Flux-{a.size} {what} at {a.resolution}², batch 1 per process, budget {a.budget} per GPU")
    for k in ("one", "many"):
        r = t[k]; sps = r["s_per_step"]
        print(f"  {r['nproc']} process(es): {sps:.3f} s/step, {r['nproc'] / sps:.2f} samples/s, policy {r['policy']}, state held {r['held']}, peak {r['peak_bytes'] / 2**30:.2f} GiB (rank 0), "
              f"host {r['host_peak_bytes'] / 2**30:.1f} GiB (a process, peak RSS)"
              if sps else f"  {r['nproc']} process(es): too few steps to time")
    if t["scaling"]: print(f"  scaling: {t['scaling']:.2f}x the samples/s of one process (median of {len(t['turns'])} turns: "
                           + ", ".join(f"{x['scaling']:.2f}x" for x in t["turns"]) + ")")
    if c := res.get("copy_gb_s"):
        print(f"  host-to-device copies: {', '.join(f'{r:.1f}' for r in c['alone'])} GB/s into each GPU alone, {c['together']:.1f} GB/s into all at once")
    print(f"  same global batch ({a.nproc} x 1 vs 1 x {a.nproc}, tiny): losses rel {s['losses_rel']:.1e}, trained weights rel {s['lora_rel']:.1e}")


if __name__ == "__main__":
    main()
