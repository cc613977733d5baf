"""Where to encode captions: Flux's text encoders (full-size random T5-XXL and CLIP-L in the diffusers FLUX.1-dev folder layout,
bf16, as a run on a GPU loads them) encoding 512-token captions on the CPU, against the same encoders brought to the GPU under
a budget (`flame.models.layers.encoders_on`: T5 streams through the engine, CLIP moves whole) and encoding there, counting the
bringing up. Issue 18 asks that caption encoding run on the CPU "when that is faster for the number of captions, decided by
measurement": this measures it, for 1 to 256 captions, each side timed in the same process, beside what FLAME's choice
(flame.models.layers.cpu_encodes_faster) estimates and picks. Prints a table, writes JSON.

    python3 bench/caption_device.py --work /tmp/rl --out $OUT/caption_device.json   # reuses bench/real_layout.py's folder there
    python3 bench/caption_device.py --smoke --out /tmp/c.json                        # tiny encoders (CPU only without a GPU)
"""
import argparse, json, time
from pathlib import Path
import torch
from real_layout import FULL, SMALL, CLIP_IDS, random_hf, _save_tokenizer
from flux import parse
from flame.models.layers import family, encoders_on, cpu_encodes_faster, encode_seconds_on_cpu, cpu_matmul_rate, weight_bytes
from flame.io import atomic_write, parse_size

SMOKE = dict(size="tiny", budget="64MB", counts="1,4", cpu_reps=1)
CAPTION = "a photograph of a red fox standing in fresh snow at the edge of a pine forest, morning light"


def encoders(work: Path, size: str) -> Path:
    "Flux's text encoders (CLIP-L, T5-XXL) and tokenizers in the diffusers FLUX.1-dev layout under `work` (kept; bench/real_layout.py's too)."
    from transformers import CLIPTextConfig, CLIPTextModel, T5Config, T5EncoderModel
    field, dims = work / "FLUX.1-dev", FULL if size == "dev" else SMALL
    if not (field / "text_encoder_2" / "config.json").exists():
        for sub, bos, n in (("tokenizer", True, 77), ("tokenizer_2", False, 512)): _save_tokenizer(field / sub, bos, n)
        random_hf(CLIPTextModel, CLIPTextConfig(**dims["clip"], **CLIP_IDS, projection_dim=768), field / "text_encoder", "cpu")
        random_hf(T5EncoderModel, T5Config(**dims["t5"], pad_token_id=0, eos_token_id=1), field / "text_encoder_2", "cpu")
    return field


def encode_all(text, n: int, batch: int = 4):
    for i in range(0, n, batch): text.encode([CAPTION] * min(batch, n - i))


def timed(fn, sync=False):
    t = time.perf_counter(); out = fn()
    if sync: torch.cuda.synchronize()
    return time.perf_counter() - t, out


def main(out, work, size="dev", budget="8GB", counts=(1, 8, 64, 256), cpu_reps=2):
    work = Path(work); work.mkdir(parents=True, exist_ok=True)
    field = encoders(work, size)
    text = family("flux-dev").text_encoder(field, device="cpu", dtype=torch.bfloat16)
    res = {"device": torch.cuda.get_device_name() if torch.cuda.is_available() else "cpu", "date": time.strftime("%Y-%m-%d"),
           "torch": torch.__version__, "cpu_threads": torch.get_num_threads(), "size": size, "budget": budget,
           "weights_bytes": sum(map(weight_bytes, text.networks))}
    text.encode([CAPTION])                                                  # reads the files (first use) and warms up
    per = min(timed(lambda: text.encode([CAPTION]))[0] for _ in range(cpu_reps))
    four = timed(lambda: text.encode([CAPTION] * 4))[0] / 4
    res["cpu"] = {"s_per_caption_batch1": per, "s_per_caption_batch4": four}
    print(f"CPU ({res['cpu_threads']} threads): {per:.2f} s a caption alone, {four:.2f} s each in fours", flush=True)
    if torch.cuda.is_available():
        b = parse_size(budget, "budget")
        up_s, ctx = timed(lambda: encoders_on("cuda", b, text, probe=lambda: text.encode([CAPTION] * 4)))
        up_s += timed(ctx.__enter__, sync=True)[0]                           # bring up: pool, probe, plan
        gpu = {}
        try:
            text.encode([CAPTION] * 4); torch.cuda.synchronize()
            for n in counts: gpu[n] = timed(lambda: encode_all(text, n), sync=True)[0]
        finally: down_s = timed(lambda: ctx.__exit__(None, None, None))[0]
        res["gpu"] = {"bring_up_s": up_s, "put_back_s": down_s, "encode_s": gpu}
        print(f"GPU: bringing the encoders up {up_s:.2f} s, putting them back {down_s:.2f} s", flush=True)
    rows = []
    for n in counts:
        cpu_s = min(per, four) * n if n >= 4 else per * n
        gpu_s = res["gpu"]["bring_up_s"] + res["gpu"]["encode_s"][n] + res["gpu"]["put_back_s"] if "gpu" in res else None
        rows.append({"captions": n, "cpu_s": cpu_s, "gpu_s": gpu_s, "faster": None if gpu_s is None else ("cpu" if cpu_s < gpu_s else "gpu"),
                     "cpu_s_estimated": encode_seconds_on_cpu(text, n), "flame_picks": "cpu" if cpu_encodes_faster(text, n) else "gpu"})
    res["rows"], res["cpu_matmul_rate"] = rows, cpu_matmul_rate(torch.bfloat16)
    atomic_write(out, json.dumps(res, indent=1))
    print(f"\n{res['device']}, {res['date']}; encoders {res['weights_bytes'] / 2**30:.2f} GiB (bf16), budget {budget}")
    print(f"CPU matmul rate (bf16, 256x2048x2048): {res['cpu_matmul_rate'] / 1e12:.2f} TFLOP/s")
    print("| captions | CPU s | CPU s, FLAME's estimate | GPU s (bring up + encode + put back) | faster | FLAME picks |\n|---|---|---|---|---|---|")
    for r in rows:
        gpu_s = "" if r["gpu_s"] is None else f"{r['gpu_s']:.1f}"
        print(f"| {r['captions']} | {r['cpu_s']:.1f} | {r['cpu_s_estimated']:.1f} | {gpu_s} | {r['faster'] or ''} | {r['flame_picks']} |")


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--work", default="/tmp/flame-caption-device", help="where the encoders' folder is written (or found: bench/real_layout.py's)")
    ap.add_argument("--size", choices=["dev", "tiny"], default="dev")
    ap.add_argument("--budget", default="8GB")
    ap.add_argument("--counts", default="1,8,64,256", help="caption counts to compare")
    ap.add_argument("--cpu-reps", type=int, default=2)
    a = parse(ap, SMOKE, "bench/results/caption_device.json")
    main(a.out, a.work, a.size, a.budget, [int(n) for n in a.counts.split(",")], a.cpu_reps)
