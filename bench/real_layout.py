"""The whole run inside the budget, on real layouts: a full-size random Flux-dev in BFL's single-file layout, and a full-size
random T5-XXL, CLIP-L and Flux VAE in the diffusers FLUX.1-dev folder layout (real weights cannot be downloaded on the GPU
machine: random weights, real shapes and file layouts), trained with `flame train`'s own path — `train(TrainConfig(model=
"flux-dev", checkpoint=…, vae=…, text_encoder=…, data=…, budget=…))` — in a fresh process. `--model sd3.5-large` (or
sd3.5-medium) does the same for SD3.5: a bare MMDiT file as Stability's, and CLIP-L, OpenCLIP bigG, T5-XXL and SD3's VAE in the
diffusers stable-diffusion-3.5 folder layout; its sample grids run with classifier-free guidance (two forwards a step).
`--model sdxl`: one sgm single file as `sd_xl_base_1.0.safetensors` is laid out (the UNet, VAE, CLIP-L and bigG), given
alone as `--checkpoint`, the tokenizers from a Hugging Face cache (word-level ones, under SDXL's repository names). Records the GPU peak of each stage
(caching, each training step, sampling), the process's peak host RSS (os.wait4) beside what the run's host-memory check counted
before it started (flame.train.host_need), the time to the first step by stage, s/step
and seconds per sampled image. Prints a table last and writes JSON.

    python3 bench/real_layout.py --out $OUT/real_layout.json            # GPU: ~37 GB of files written to --work (default /tmp)
    python3 bench/real_layout.py --model sd3.5-large --budget 6GB --out $OUT/real_layout_sd3.json    # ~33 GB of files
    python3 bench/real_layout.py --model sdxl --budget 4GB --out $OUT/real_layout_sdxl.json           # ~7 GB
    python3 bench/real_layout.py --model sd3.5-large --budget 6GB --steps 6 --profile --out $OUT/p.json   # where the last step's time goes
    python3 bench/real_layout.py --smoke --out /tmp/real_layout.json    # the same paths (Flux, SD3.5, SDXL), tiny sizes (CPU or GPU, about a minute)
"""
import argparse, json, os, subprocess, sys, tempfile, time
from pathlib import Path
import torch
from flux import random_flux, random_weights
from train import SIZES

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "nbs"))
from fixtures import WORDS, _save_tokenizer                         # word-level tokenizers (the real ones cannot be downloaded)

# diffusers' FLUX.1-dev folder: text_encoder (CLIP-L), text_encoder_2 (T5-v1.1-XXL), vae; "small": the same layout, tiny widths
FULL = {"clip": dict(vocab_size=49408, hidden_size=768, intermediate_size=3072, num_hidden_layers=12, num_attention_heads=12),
        "t5": dict(vocab_size=32128, d_model=4096, d_kv=64, d_ff=10240, num_layers=24, num_heads=64, feed_forward_proj="gated-gelu"),
        "vae": dict(block_out_channels=(128, 256, 512, 512), layers_per_block=2, norm_num_groups=32)}
SMALL = {"clip": dict(vocab_size=64, hidden_size=768, intermediate_size=64, num_hidden_layers=2, num_attention_heads=2),
         "t5": dict(vocab_size=64, d_model=4096, d_kv=8, d_ff=64, num_layers=3, num_heads=2, feed_forward_proj="gated-gelu"),
         "vae": dict(block_out_channels=(8, 8, 16, 16), layers_per_block=1, norm_num_groups=4)}
CLIP_IDS = dict(max_position_embeddings=77, pad_token_id=0, eos_token_id=1, bos_token_id=3)   # (the word-level tokenizers' ids)


def vae_config(dims: dict, latent_channels: int, **factors) -> dict:
    "An AutoencoderKL of four levels at `dims`' widths (the shape of Flux's, SD3's and SDXL's VAEs) with its latent factors."
    return dict(down_block_types=("DownEncoderBlock2D",) * 4, up_block_types=("UpDecoderBlock2D",) * 4, latent_channels=latent_channels,
                **factors, **dims["vae"])


# diffusers' stable-diffusion-3.5 folder: text_encoder (CLIP-L), text_encoder_2 (OpenCLIP bigG), text_encoder_3 (T5-v1.1-XXL), vae
SD3_CLIPS = (dict(vocab_size=49408, hidden_size=768, intermediate_size=3072, num_hidden_layers=12, num_attention_heads=12, projection_dim=768,
                  hidden_act="quick_gelu"),
             dict(vocab_size=49408, hidden_size=1280, intermediate_size=5120, num_hidden_layers=32, num_attention_heads=20, projection_dim=1280,
                  hidden_act="gelu"))
# sd_xl_base_1.0's CLIP-L (CLIPTextModel) and bigG (with its projection), and its VAE (4 latent channels, quant convs)
SDXL_CLIPS = (dict(vocab_size=49408, hidden_size=768, intermediate_size=3072, num_hidden_layers=12, num_attention_heads=12, hidden_act="quick_gelu"),
              SD3_CLIPS[1])
SDXL_VAE = vae_config(FULL, 4, scaling_factor=0.13025)
MODELS = ("flux-dev", "sd3.5-large", "sd3.5-medium", "sdxl")
SMOKE = dict(model="flux-dev,sd3.5-large,sdxl", size="tiny", resolution=64, steps=2, budget=None, images=4, sample_steps=2)


NORMS = ("norm.weight", "norm1.weight", "norm2.weight", "norm_out.weight")      # scales of layer/group norms: 1, as trained models' are near


def random_model(cls, config, device):
    "A transformers/diffusers model built on meta, N(0, 0.02) weights (norm scales 1) on `device` in bf16."
    with torch.device("meta"): model = cls(**config) if isinstance(config, dict) else cls(config)
    model = random_weights(model, device, torch.bfloat16, ones=NORMS)
    if hasattr(model, "tie_weights"): model.tie_weights()               # (T5: the embedding is shared; to_empty untied it)
    return model


def random_hf(cls, config, folder: Path, device):
    "`random_model`, saved with save_pretrained."
    random_model(cls, config, device).save_pretrained(folder)


def build(work: Path, model: str, size: str, resolution: int, images: int, device) -> dict:
    "Write the checkpoint, the diffusers folder and a captioned image folder under `work`; their paths."
    paths = {"flux-dev": build_flux, "sdxl": build_sdxl}.get(model, build_sd3)(work, model, size, device)
    write_images(Path(paths["data"]), resolution, images)
    torch.cuda.empty_cache() if torch.cuda.is_available() else None
    return paths


def build_flux(work: Path, model: str, size: str, device) -> dict:
    from transformers import CLIPTextConfig, CLIPTextModel, T5Config, T5EncoderModel
    from diffusers import AutoencoderKL
    from flame.models.flux import FluxConfig
    dims = FULL if size == "dev" else SMALL
    field, data, ckpt = work / "FLUX.1-dev", work / "data", work / "flux1-dev.safetensors"
    if not ckpt.exists():
        flux = random_flux(FluxConfig.dev(**SIZES[size]), device, torch.bfloat16)
        flux.save_safetensors(ckpt); del flux
    if not (field / "vae" / "config.json").exists():
        for sub, bos, n in (("tokenizer", True, 77), ("tokenizer_2", False, 512)): _save_tokenizer(field / sub, bos, n)
        random_hf(CLIPTextModel, CLIPTextConfig(**dims["clip"], **CLIP_IDS, projection_dim=768), field / "text_encoder", device)
        random_hf(T5EncoderModel, T5Config(**dims["t5"], pad_token_id=0, eos_token_id=1), field / "text_encoder_2", device)
        random_hf(AutoencoderKL, vae_config(dims, 16, scaling_factor=0.3611, shift_factor=0.1159, use_quant_conv=False, use_post_quant_conv=False),
                  field / "vae", device)
    return {"checkpoint": str(ckpt), "field": str(field), "data": str(data)}


def build_sd3(work: Path, model: str, size: str, device) -> dict:
    "SD3.5 at full size (`size` dev), or a tiny MMDiT with the test fixtures' tiny encoders (given to the trainer as a model)."
    from transformers import CLIPTextConfig, CLIPTextModelWithProjection, T5Config, T5EncoderModel
    from diffusers import AutoencoderKL
    from flame.models.sd3 import SD3Config
    from fixtures import tiny_sd3_components
    from sd3 import random_sd3
    kind = model.removeprefix("sd3.5-")
    field, data, ckpt = work / f"stable-diffusion-3.5-{kind}", work / "data", work / f"sd3.5_{kind}.safetensors"
    if not ckpt.exists():
        cfg = (SD3Config.large() if kind == "large" else SD3Config.medium()) if size == "dev" else \
              SD3Config.tiny(in_channels=16, out_channels=16, context_in_dim=96, pooled_dim=80)    # (tiny_sd3_components' widths)
        random_sd3(cfg, device, torch.bfloat16).save_safetensors(ckpt)
    if not (field / "vae" / "config.json").exists():
        if size != "dev": tiny_sd3_components(field)
        else:
            for sub, bos, n in (("tokenizer", True, 77), ("tokenizer_2", True, 77), ("tokenizer_3", False, 256)): _save_tokenizer(field / sub, bos, n)
            for sub, dims in zip(("text_encoder", "text_encoder_2"), SD3_CLIPS):
                random_hf(CLIPTextModelWithProjection, CLIPTextConfig(**dims, **CLIP_IDS), field / sub, device)
            random_hf(T5EncoderModel, T5Config(**FULL["t5"], pad_token_id=0, eos_token_id=1), field / "text_encoder_3", device)
            random_hf(AutoencoderKL, vae_config(FULL, 16, scaling_factor=1.5305, shift_factor=0.0609, use_quant_conv=False, use_post_quant_conv=False),
                      field / "vae", device)
    return {"checkpoint": str(ckpt), "field": str(field), "data": str(data)}


def build_sdxl(work: Path, model: str, size: str, device) -> dict:
    "SDXL base's single file at full size (`size` dev: random, unit-gain UNet), or tiny (the fixtures' encoders); a Hugging Face cache of tokenizers."
    from transformers import CLIPTextConfig, CLIPTextModel, CLIPTextModelWithProjection
    from diffusers import AutoencoderKL
    from flame.models.layers import write_safetensors
    from flame.models.sdxl import SDXLConfig, SDXLUNet, SDXL_TOKENIZERS
    from fixtures import sgm_single_file, sdxl_standard_encoders, fake_hub_tokenizers
    from sdxl import unit_gain
    ckpt, hub, data = work / "sd_xl_base_1.0.safetensors", work / "hub", work / "data"
    if not ckpt.exists():
        with torch.device("meta"): unet = SDXLUNet(SDXLConfig.base() if size == "dev" else SDXLConfig.tiny(context_dim=64 + 128))
        unet = unit_gain(unet, device, torch.bfloat16)
        if size == "dev":
            (l, g) = SDXL_CLIPS
            encoders = [random_model(AutoencoderKL, SDXL_VAE, device), random_model(CLIPTextModel, CLIPTextConfig(**l, **CLIP_IDS), device),
                        random_model(CLIPTextModelWithProjection, CLIPTextConfig(**g, **CLIP_IDS), device)]
        else: encoders = sdxl_standard_encoders()
        write_safetensors(sgm_single_file(unet.state_dict(), *encoders), ckpt); del unet, encoders
    if not hub.exists():
        for sub in ("tokenizer", "tokenizer_2"): _save_tokenizer(work / "tokenizers" / sub, True, 77)
        fake_hub_tokenizers(hub, work / "tokenizers", SDXL_TOKENIZERS)
    return {"checkpoint": str(ckpt), "field": None, "data": str(data), "hub": str(hub)}


def write_images(data: Path, resolution: int, images: int):
    "`images` blocky random pictures with six-word captions."
    from PIL import Image
    data.mkdir(parents=True, exist_ok=True)
    g = torch.Generator().manual_seed(0)
    for i in range(images):
        px = (torch.rand(resolution // 16, resolution // 16, 3, generator=g) * 255).to(torch.uint8)
        Image.fromarray(px.numpy()).resize((resolution, resolution), Image.NEAREST).save(data / f"{i:03d}.png")
        words = [WORDS[4 + int(j)] for j in torch.randint(0, len(WORDS) - 4, (6,), generator=g)]
        (data / f"{i:03d}.txt").write_text(" ".join(words))


CHILD = """import json, sys, time, torch
import flame.train as T
cfg, out = json.loads(sys.argv[1]), sys.argv[2]
net = None
if cfg.pop("direct", False):                         # (--size tiny: not the family's shape, so given as a model, not a --checkpoint)
    from flame.models.flux import Flux
    from flame.models.sd3 import SD3
    from flame.models.sdxl import SDXLConfig, SDXLUNet, SDXLDenoiser
    dtype, tiny = torch.bfloat16 if cfg["device"] == "cuda" else torch.float32, SDXLConfig.tiny()
    if cfg["model"] == "sdxl":                      # (the file's encoders are read from it: its path stays)
        net = SDXLDenoiser(SDXLUNet.from_safetensors(cfg["checkpoint"], dtype=dtype, head_dim=tiny.head_dim, norm_groups=tiny.norm_groups), vae_factor=2)
    else: net = (Flux if cfg["model"] == "flux-dev" else SD3).from_safetensors(cfg.pop("checkpoint"), dtype=dtype)
peaks, sampled = {}, []
inner = T.sample_images
def sample_images(*a, **kw):                        # the GPU peak and the seconds of each sampled grid
    cuda = torch.cuda.is_available() and str(kw.get("device", "")).startswith("cuda")
    if cuda: torch.cuda.synchronize(); torch.cuda.reset_peak_memory_stats()
    t0 = time.perf_counter(); imgs = inner(*a, **kw)
    if cuda: torch.cuda.synchronize(); peaks["sampling"] = max(peaks.get("sampling", 0), torch.cuda.max_memory_allocated())
    sampled.append((len(imgs), time.perf_counter() - t0)); return imgs
T.sample_images = sample_images
plans, planner = [], T.plan_run_memory
def plan_run_memory(*a, **kw): plans.append(planner(*a, **kw)); return plans[-1]     # the streamed plan: its forward
T.plan_run_memory = plan_run_memory
freed, releaser = [], T.release
def release(*encoders): freed.append(releaser(*encoders)); return freed[-1]          # the text encoders' bytes, once cached
T.release = release
profiled, profile = cfg.pop("profile", False), []
step_of = T.train_step
def train_step(run, st, memory, step):               # --profile: the last step under torch.profiler, its kernels' table kept
    if not profiled or step != run.config.steps: return step_of(run, st, memory, step)
    from torch.profiler import ProfilerActivity
    acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if run.device.type == "cuda" else [])
    with torch.profiler.profile(activities=acts) as prof: loss = step_of(run, st, memory, step)
    profile.append(prof.key_averages().table(sort_by="cuda_time_total" if run.device.type == "cuda" else "cpu_time_total", row_limit=30))
    return loss
T.train_step = train_step
r = T.train(T.TrainConfig(**cfg), model=net)
rows = T.read_metrics(r.output / "metrics.csv")
json.dump({"policy": r.policy, "measured": r.measured, "times": r.times, "first_step": r.first_step, "seconds": r.seconds,
           "step_peaks": [x["mem_bytes"] for x in rows], "step_seconds": [b["seconds"] - a["seconds"] for a, b in zip(rows, rows[1:])],
           "sampling_peak": peaks.get("sampling"), "sampled": sampled, "losses": r.losses,
           "plan": repr(plans[0]) if plans else None, "encoder_bytes": sum(freed), "profile": profile[0] if profile else None,
           "stream_plan": repr(plans[0].stream) if plans and plans[0].stream is not None else None,   # (its units resident, moves, predicted step)
           "streamed_forward_s": plans[0].stream.predicted_forward if plans and plans[0].stream is not None else None}, open(out, "w"))
"""


def run_child(cfg: dict, out: Path, hub: str | None = None) -> tuple[dict, int]:
    """`train(TrainConfig(**cfg))` in a fresh process: its JSON result and its peak RSS in bytes (os.wait4). `hub`: the Hugging
    Face cache it reads tokenizers from, offline."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)}
    if hub: env |= {"HF_HUB_CACHE": hub, "HF_HUB_OFFLINE": "1"}
    proc = subprocess.Popen([sys.executable, "-c", CHILD, json.dumps(cfg), str(out)], env=env)
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode: sys.exit(f"real_layout: the training process failed (exit {proc.returncode})")
    return json.loads(out.read_text()), usage.ru_maxrss * 1024


def main():
    from flux import parse
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", default="flux-dev", help=f"one of {', '.join(MODELS)}, or several, comma-separated (each in turn)")
    ap.add_argument("--size", choices=["dev", "tiny"], default="dev", help="dev: the model's full size; tiny: small (bench/train.py's Flux, the fixtures' SD3)")
    ap.add_argument("--resolution", type=int, default=1024)
    ap.add_argument("--steps", type=int, default=4)
    ap.add_argument("--batch-size", type=int, default=1, help="samples per step (Flux-dev at 1024² under 8 GB: 1, as peers run it)")
    ap.add_argument("--budget", default="8GB")
    ap.add_argument("--images", type=int, default=8)
    ap.add_argument("--sample-steps", type=int, default=4)
    ap.add_argument("--work", default=None, help="where the files are written (kept and reused; default: a new temporary folder)")
    ap.add_argument("--profile", action="store_true", help="the last step under torch.profiler: its 30 costliest kernels, printed and kept (that step's time counts the profiler's too)")
    a = parse(ap, SMOKE)
    models = a.model.split(",")
    if bad := [m for m in models if m not in MODELS]: ap.error(f"--model: expected some of {', '.join(MODELS)}, got {', '.join(bad)}")
    device = "cuda" if torch.cuda.is_available() else "cpu"
    work = Path(a.work or tempfile.mkdtemp())
    runs = {m: run_model(a, m, work / m if len(models) > 1 else work, device) for m in models}
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    Path(a.out).write_text(json.dumps(runs[models[0]] if len(models) == 1 else runs, indent=1, default=str))
    for res in runs.values(): table(res, a, device)


def run_model(a, model: str, work: Path, device) -> dict:
    "Build `model`'s files under `work`, train from them in a fresh process; the run's record."
    t0 = time.perf_counter()
    paths = build(work, model, a.size, a.resolution, a.images, device)
    built = time.perf_counter() - t0
    cfg = dict(model=model, checkpoint=paths["checkpoint"], vae=paths["field"], text_encoder=paths["field"], data=paths["data"],
               budget=a.budget, resolution=a.resolution, batch_size=a.batch_size, steps=a.steps, save_every=0, sample_seeds=1, sample_steps=a.sample_steps,
               sample_prompts=("a red circle",), progress=False, output=str(work / "run"), overwrite=True, device=device, direct=a.size != "dev",
               profile=a.profile)
    from flame.train import TrainConfig, host_need, host_stages
    at = TrainConfig(model=model, checkpoint=cfg["checkpoint"], text_encoder=cfg["text_encoder"])
    need, stages = host_need(at, torch.device(device)), host_stages(at, torch.device(device))
    r, rss = run_child(cfg, work / "result.json", paths.get("hub"))
    per_image = sum(s for _, s in r["sampled"]) / max(1, sum(n for n, _ in r["sampled"]))
    return {"device": torch.cuda.get_device_name() if device == "cuda" else "cpu", "date": time.strftime("%Y-%m-%d"), "torch": torch.__version__,
            "model": model, "size": a.size, "resolution": a.resolution, "budget": a.budget, "build_seconds": built, "peak_rss": rss, "host_need": need, "host_stages": stages,
            "per_image_seconds": per_image, **r}


def table(r: dict, a, device):
    gib = lambda b: "-" if b is None else f"{b / 2**30:.2f} GiB"
    rss, need, per_image = r["peak_rss"], r["host_need"], r["per_image_seconds"]
    print(f"{r['device']}  {r['date']}  torch {r['torch']}  {r['model']} ({a.size}) LoRA at {a.resolution}², batch {a.batch_size}, budget {a.budget}, policy {r['policy']}")
    print(f"{'GPU peak: caching':32s} {gib(r['measured'].get('caching'))}")
    print(f"{'GPU peak: training steps' if device == 'cuda' else 'RSS: training steps':32s} {gib(max(r['step_peaks']))}")
    print(f"{'GPU peak: sampling':32s} {gib(r['sampling_peak'])}")
    must = r["measured"].get("frozen", 0) + r["measured"].get("state", 0) + r["encoder_bytes"]     # what host memory must hold
    print(f"{'host RSS peak':32s} {gib(rss)}" + (f"  ({rss / must:.2f}x the {gib(must)} of frozen weights, trainable state and "
                                                 "text encoders; target <= 1.15)" if must else ""))
    if need:                                                          # (the check: the larger of the stages)
        stages = r["host_stages"]
        print(f"{'host memory checked before start':32s} {gib(max(stages.values()))}  (by stage: " + ", ".join(f"{k} {gib(v)}" for k, v in stages.items())
              + "; parts: " + ", ".join(f"{k} {gib(v)}" for k, v in need.items()) + f"; {rss / max(stages.values()):.2f}x of it measured)")
    print(f"{'time to the first step':32s} {r['first_step']:.1f} s  " + ", ".join(f"{k} {v:.1f}" for k, v in r["times"].items() if k != "training"))
    print(f"{'s/step (median after the first)':32s} " + (f"{sorted(r['step_seconds'])[len(r['step_seconds']) // 2]:.2f}" if r["step_seconds"] else "-"))
    fwd = r["streamed_forward_s"]
    if r["stream_plan"]: print(f"{'the streamed plan':32s} {r['stream_plan']}")
    print(f"{'sampling, s per image':32s} {per_image:.2f} ({a.sample_steps} steps" +
          (f"; {per_image / (a.sample_steps * fwd):.2f}x the planner's streamed forward, {fwd * 1e3:.0f} ms)" if fwd else ")"))
    if r["profile"]: print(f"the last step, profiled:\n{r['profile']}")

if __name__ == "__main__":
    main()
