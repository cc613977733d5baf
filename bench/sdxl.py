"""SDXL on one GPU: FLAME's SDXLUNet vs diffusers' UNet2DConditionModel (same weights, same run), and FLAME streamed under a budget.

SDXL base size (SDXLConfig.base(): 2.57B parameters), random bf16 weights, 1024² (a 128×128 latent), 77 text tokens of
width 2048, the 2816-wide ADM vector, batch 1. Forward (no grad) and a LoRA-like step (frozen base, gradients through the
activations to the input), plain and with block checkpointing, FLAME and diffusers (enable_gradient_checkpointing()), whose
parameters are views of FLAME's (no extra weight memory), and how far their outputs are apart; then FLAME with its input,
middle and output blocks in host memory, streamed under a budget (4 GB) by flame.streaming's plan/stream. Targets (issue
14): the checkpointed step >= 1.2x diffusers' at no more memory; under 4 GB <= 1.3x FLAME's resident checkpointed step.
The measuring code is bench/sd3.py's (the same rows, the same table). Prints a table last and writes JSON.

    python3 bench/sdxl.py --out bench/results/sdxl.json     # GPU: SDXL base size (about a minute on an H100)
    python3 bench/sdxl.py --smoke --out /tmp/sdxl.json       # a tiny UNet of the same structure (runs on CPU too)
"""
import argparse, datetime, gc, json, platform, time
import torch
from flux import parse
from sd3 import RATIO_TO_RESIDENT, add_rounds, compare, streamed_row, table
from flame.io import atomic_write
from flame.models.layers import LazyTensor
from flame.train import CudaGraphed
from flame.models.sdxl import SDXLConfig, SDXLUNet, adm_vector, diffusers_layout, layout_shape, micro_conditioning

# --smoke: SDXLConfig.tiny() (3 levels, attention at the two lower ones), a 16² latent, streamed at the planner's minimum + 2 blocks
SMOKE = dict(tiny=True, latent=16, budget="min+2", warmup=1, reps=2, rounds=1)


def diffusers_config(c: SDXLConfig) -> dict:
    "UNet2DConditionModel's arguments for a UNet of `c`'s shape (SDXL base: diffusers' own SDXL config)."
    widths = tuple(c.model_channels * m for m in c.channel_mult)
    attends = [d > 0 for d in c.transformer_depth]
    return dict(sample_size=128, in_channels=4, out_channels=4, layers_per_block=c.num_res_blocks, block_out_channels=widths,
                down_block_types=tuple("CrossAttnDownBlock2D" if a else "DownBlock2D" for a in attends),
                up_block_types=tuple("CrossAttnUpBlock2D" if a else "UpBlock2D" for a in reversed(attends)),
                transformer_layers_per_block=tuple(max(d, 1) for d in c.transformer_depth), attention_head_dim=tuple(w // c.head_dim for w in widths),
                cross_attention_dim=c.context_dim, use_linear_projection=True, addition_embed_type="text_time", addition_time_embed_dim=256,
                projection_class_embeddings_input_dim=c.adm_in_channels, norm_num_groups=c.norm_groups)


def diffusers_twin(unet: SDXLUNet):
    "diffusers' UNet2DConditionModel whose parameters are views of `unet`'s."
    from diffusers import UNet2DConditionModel
    with torch.device("meta"): d = UNet2DConditionModel(**diffusers_config(unet.config))
    ours = {k: LazyTensor.of(v) for k, v in unet.state_dict().items()}
    d.load_state_dict({k: lt.load() for k, lt in diffusers_layout(*layout_shape(unet.config)).write(ours).items()}, assign=True)
    return d.requires_grad_(False).eval()


def unit_gain(model: torch.nn.Module, device, dtype) -> torch.nn.Module:
    """`model` (built on meta) on `device` in `dtype`, random with unit gain (weights N(0, 1/fan-in), norm scales 1, biases 0), frozen:
    activations keep their scale through the 2.6B UNet (N(0, 0.02) everywhere would leave its output little more than the last bias)."""
    model = model.to(dtype).to_empty(device=device)
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, (torch.nn.GroupNorm, torch.nn.LayerNorm)): m.weight.fill_(1.0); m.bias.zero_()
            elif isinstance(m, (torch.nn.Linear, torch.nn.Conv2d)):
                m.weight.normal_(0, m.weight[0].numel() ** -0.5)
                if m.bias is not None: m.bias.zero_()
    return model.requires_grad_(False).eval()


def model_and_inputs(a, device, dtype):
    "The UNet (random, unit gain, seed 0) and one batch: the model, the latents x, and the conditioning (t, context, pooled, micro, y)."
    cfg = SDXLConfig.tiny() if a.tiny else SDXLConfig.base()
    torch.manual_seed(0)
    with torch.device("meta"): ours = SDXLUNet(cfg)
    ours = unit_gain(ours, device, dtype)
    x = torch.randn(1, 4, a.latent, a.latent, device=device, dtype=dtype)
    t = torch.full((1,), 700.0, device=device)
    ctx = torch.randn(1, 77, cfg.context_dim, device=device, dtype=dtype)
    pooled = torch.randn(1, cfg.adm_in_channels - 6 * 256, device=device, dtype=dtype)
    micro = micro_conditioning((8 * a.latent, 8 * a.latent), batch=1).to(device, dtype)
    return ours, x, (t, ctx, pooled, micro, adm_vector(pooled, micro).to(dtype))


def calls_of(ours, twin, cond):
    "As bench/sd3.py's `calls_of`, for the UNet: impl -> x -> output, and () -> FLAME's call as CUDA graphs."
    t, ctx, pooled, micro, y = cond
    calls = {"FLAME": lambda x: ours(x, t, context=ctx, y=y),
             "diffusers": lambda x: twin(x, t, encoder_hidden_states=ctx, added_cond_kwargs={"text_embeds": pooled, "time_ids": micro}).sample}
    def graphed():
        g = CudaGraphed(ours)
        return lambda x: g(x, t, context=ctx, y=y)
    return calls, graphed


def against_diffusers(r, ours, x, cond, device, a, save):
    "bench/sd3.py's rows (output difference; forward, step, step+checkpoint of each) for `ours` and its diffusers twin."
    twin = diffusers_twin(ours)                               # freed on return: its views would keep the weights alive
    calls, graphed = calls_of(ours, twin, cond)
    compare(r, ours, twin, calls, x, device, a, save, graphed)


def bench(a, device, dtype, save) -> dict:
    t0 = time.perf_counter()
    ours, x, cond = model_and_inputs(a, device, dtype)
    units = [sum(p.numel() * p.element_size() for p in u.parameters()) for u in ours.stream_units()]
    r = {"name": "SDXL" + (" (tiny)" if a.tiny else ""), "params_B": sum(p.numel() for p in ours.parameters()) / 1e9,
         "weights_GB": sum(p.numel() * p.element_size() for p in ours.parameters()) / 1e9, "largest_block_GB": max(units) / 1e9,
         "build_s": time.perf_counter() - t0, "rows": []}
    against_diffusers(r, ours, x, cond, device, a, lambda: save(r))
    gc.collect()
    if device.type == "cuda": torch.cuda.empty_cache()
    t, ctx, _, _, y = cond
    streamed_row(r, ours, lambda x: ours(x, t, context=ctx, y=y), x, a.budget, device, a, lambda: save(r))
    return r


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tiny", action="store_true", help="the tiny UNet instead of SDXL base's size")
    ap.add_argument("--latent", type=int, default=128, help="latent side (128 = 1024² pixels)")
    ap.add_argument("--budget", default="4GB", help="device budget of the streamed step ('min+N': the planner's minimum + N blocks)")
    add_rounds(ap)
    a = parse(ap, SMOKE)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    dtype = torch.bfloat16 if device.type == "cuda" else torch.float32
    import diffusers, triton
    res = {"device": torch.cuda.get_device_name() if device.type == "cuda" else platform.processor() or "cpu",
           "date": datetime.date.today().isoformat(), "torch": torch.__version__, "triton": triton.__version__, "diffusers": diffusers.__version__,
           "dtype": str(dtype).removeprefix("torch."), "latent": a.latent, "img_tokens": a.latent ** 2, "txt_tokens": 77, "batch": 1,
           "warmup": a.warmup, "reps": a.reps, "step": "LoRA-like: frozen weights, the input requires grad, loss = mean(out²); streamed: with checkpointing",
           "ratio_to_resident": RATIO_TO_RESIDENT, "models": {}}
    t0 = time.perf_counter()
    def save(r):
        res["models"]["sdxl"] = r; res["wall_s"] = time.perf_counter() - t0
        atomic_write(a.out, json.dumps(res, indent=1))
    save(bench(a, device, dtype, save))
    table(res)


if __name__ == "__main__":
    main()
