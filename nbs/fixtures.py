"""Test fixtures the notebooks share (not part of the package): tiny random field components in the diffusers layout."""

WORDS = ["<pad>", "</s>", "<unk>", "<s>", "a", "an", "the", "of", "on", "my", "dog", "thing",
         "red", "green", "blue", "yellow", "cyan", "magenta", "white", "circle", "square", "triangle"]

def _save_t5(folder, dim: int, layers: int = 1, ff: int = 32):
    "A random T5 encoder (`layers` blocks, FF width `ff`, 2 heads of 8) over the word-level vocabulary, saved to `folder`."
    from transformers import T5Config, T5EncoderModel
    T5EncoderModel(T5Config(vocab_size=len(WORDS), d_model=dim, d_kv=8, d_ff=ff, num_layers=layers, num_heads=2,
                            pad_token_id=0, eos_token_id=1)).save_pretrained(folder)


def _save_tokenizer(folder, bos: bool, max_length: int):
    "A word-level fast tokenizer over WORDS: `<s> … </s>` (CLIP) if `bos`, else `… </s>` (T5)."
    from tokenizers import Tokenizer, models, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast
    tok = Tokenizer(models.WordLevel({w: i for i, w in enumerate(WORDS)}, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.post_processor = processors.TemplateProcessing(single=("<s> $A </s>" if bos else "$A </s>"), special_tokens=[("<s>", 3), ("</s>", 1)])
    PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="<pad>", eos_token="</s>", unk_token="<unk>", bos_token="<s>",
                            model_max_length=max_length).save_pretrained(folder)

def _save_vae(folder, latent_channels: int, vae_blocks: int, shift: float, scale: float):
    "A tiny AutoencoderKL, 2^(vae_blocks-1)x down, with the given latent normalisation."
    from diffusers import AutoencoderKL
    AutoencoderKL(in_channels=3, out_channels=3, down_block_types=("DownEncoderBlock2D",) * vae_blocks, up_block_types=("UpDecoderBlock2D",) * vae_blocks,
                  block_out_channels=tuple(8 * 2 ** min(i, 1) for i in range(vae_blocks)), layers_per_block=1, latent_channels=latent_channels,
                  norm_num_groups=4, sample_size=32, shift_factor=shift, scaling_factor=scale).save_pretrained(folder)


def tiny_field_components(root, seed: int = 0, latent_channels: int = 4, vae_blocks: int = 2, t5_dim: int = 24, clip_dim: int = 32,
                          t5_layers: int = 1, t5_ff: int = 32):
    """Save random small AutoencoderKL (2^(vae_blocks-1)x down), CLIP and T5 (`t5_layers` blocks, FF width `t5_ff`; + word-level
    tokenizers) to `root` in the diffusers Flux layout, for tests: default sizes match `FluxConfig.tiny()` (4 latent channels,
    context 24, pooled 32); `latent_channels=16, vae_blocks=4, t5_dim=4096, clip_dim=768` give Flux's interface at a fraction of the weights."""
    from pathlib import Path
    import torch
    from transformers import CLIPTextConfig, CLIPTextModel
    root = Path(root)
    torch.manual_seed(seed)
    for sub, bos in (("tokenizer", True), ("tokenizer_2", False)): _save_tokenizer(root / sub, bos, 77)   # CLIP: <s> ... </s>; T5: ... </s>
    CLIPTextModel(CLIPTextConfig(vocab_size=len(WORDS), hidden_size=clip_dim, intermediate_size=37, num_hidden_layers=1, num_attention_heads=2,
                                 max_position_embeddings=77, pad_token_id=0, eos_token_id=1, bos_token_id=3)).save_pretrained(root / "text_encoder")
    _save_t5(root / "text_encoder_2", t5_dim, t5_layers, t5_ff)
    _save_vae(root / "vae", latent_channels, vae_blocks, shift=0.1, scale=0.5)
    return root


def tiny_sd3_components(root, seed: int = 0, latent_channels: int = 16, vae_blocks: int = 2, clip_dims: tuple = (32, 48), t5_dim: int = 96):
    """Save random small CLIP-L-like and bigG-like `CLIPTextModelWithProjection`s (widths `clip_dims`, projection = width),
    a T5 encoder (`t5_dim` wide, at least sum(clip_dims)), word-level tokenizers and an AutoencoderKL (`latent_channels`,
    2^(vae_blocks-1)x down, SD3's scaling and shift factors) to `root` in the diffusers SD3 layout, for tests."""
    from pathlib import Path
    import torch
    from transformers import CLIPTextConfig, CLIPTextModelWithProjection
    if sum(clip_dims) > t5_dim: raise ValueError(f"t5_dim: expected at least {sum(clip_dims)} (the CLIP widths joined), got {t5_dim}")
    root = Path(root)
    torch.manual_seed(seed)
    for sub, bos, n in (("tokenizer", True, 77), ("tokenizer_2", True, 77), ("tokenizer_3", False, 512)): _save_tokenizer(root / sub, bos, n)
    for sub, width in zip(("text_encoder", "text_encoder_2"), clip_dims):
        CLIPTextModelWithProjection(CLIPTextConfig(vocab_size=len(WORDS), hidden_size=width, intermediate_size=37, num_hidden_layers=2,
                                                   num_attention_heads=2, max_position_embeddings=77, projection_dim=width,
                                                   pad_token_id=0, eos_token_id=1, bos_token_id=3)).save_pretrained(root / sub)
    _save_t5(root / "text_encoder_3", t5_dim)
    _save_vae(root / "vae", latent_channels, vae_blocks, shift=0.0609, scale=1.5305)   # SD3's factors
    return root


def tiny_sdxl_components(root, seed: int = 0, vae_blocks: int = 2, clip_dims: tuple = (16, 24), projection_dim: int = 20, vae_scale: float = 3.0):
    """Save a random small CLIP-L-like `CLIPTextModel` and bigG-like `CLIPTextModelWithProjection` (widths `clip_dims`,
    bigG's projection `projection_dim`), word-level tokenizers (77 tokens) and an AutoencoderKL (4 latent channels,
    2^(vae_blocks-1)x down, no shift) to `root` in the diffusers SDXL layout, for tests: the context is sum(clip_dims)
    wide (40, as `SDXLConfig.tiny()`), the pooled vector `projection_dim`. `vae_scale` 3 brings this random VAE's
    latents of the procedural shapes near unit variance, as SDXL's 0.13025 does for its trained VAE."""
    from pathlib import Path
    import torch
    from transformers import CLIPTextConfig, CLIPTextModel, CLIPTextModelWithProjection
    root = Path(root)
    torch.manual_seed(seed)
    for sub in ("tokenizer", "tokenizer_2"): _save_tokenizer(root / sub, True, 77)
    for sub, cls, width in (("text_encoder", CLIPTextModel, clip_dims[0]), ("text_encoder_2", CLIPTextModelWithProjection, clip_dims[1])):
        cls(CLIPTextConfig(vocab_size=len(WORDS), hidden_size=width, intermediate_size=37, num_hidden_layers=2, num_attention_heads=2,
                           max_position_embeddings=77, projection_dim=projection_dim, pad_token_id=0, eos_token_id=1, bos_token_id=3)).save_pretrained(root / sub)
    _save_vae(root / "vae", 4, vae_blocks, shift=0.0, scale=vae_scale)
    return root


class Caught:
    "Collects diffusers/PEFT log warnings and Python warnings inside a `with` block (`.msgs`): a loader that warns has dropped something."
    def __init__(self):
        import logging
        class _H(logging.Handler):
            def __init__(h): super().__init__(logging.WARNING)
            def emit(h, record): self.msgs.append(record.getMessage())
        self.msgs, self._handler = [], _H()
    def __enter__(self):
        import logging, warnings
        for n in ("diffusers", "peft"): logging.getLogger(n).addHandler(self._handler)
        self._w = warnings.catch_warnings(record=True); self._rec = self._w.__enter__(); warnings.simplefilter("always")
        return self
    def __exit__(self, *exc):
        import logging
        for n in ("diffusers", "peft"): logging.getLogger(n).removeHandler(self._handler)
        self._w.__exit__(*exc); self.msgs += [str(w.message) for w in self._rec]


def ldm_vae_name(k: str, levels: int) -> str:
    "sgm/LDM name of a diffusers AutoencoderKL tensor (the inverse of diffusers' `convert_ldm_vae_checkpoint`)."
    import re
    up = lambda m: f"decoder.up.{levels - 1 - int(m[1])}."
    k = k.replace("conv_norm_out", "norm_out").replace("conv_shortcut", "nin_shortcut")
    k = re.sub(r"encoder\.down_blocks\.(\d+)\.resnets\.", r"encoder.down.\1.block.", k)
    k = re.sub(r"encoder\.down_blocks\.(\d+)\.downsamplers\.0\.", r"encoder.down.\1.downsample.", k)
    k = re.sub(r"decoder\.up_blocks\.(\d+)\.resnets\.", lambda m: up(m) + "block.", k)
    k = re.sub(r"decoder\.up_blocks\.(\d+)\.upsamplers\.0\.", lambda m: up(m) + "upsample.", k)
    k = re.sub(r"mid_block\.resnets\.(\d)", lambda m: f"mid.block_{int(m[1]) + 1}", k)
    k = k.replace("mid_block.attentions.0.", "mid.attn_1.").replace("group_norm", "norm")
    return re.sub(r"\.to_(q|k|v)\.", r".\1.", k).replace("to_out.0", "proj_out")


def ldm_vae_tensors(vae, prefix: str = "first_stage_model.") -> dict:
    "A diffusers AutoencoderKL's tensors in LDM names under `prefix`, as single files store them (attention projections as 1×1 convs)."
    out = {}
    for k, v in vae.state_dict().items():
        name = ldm_vae_name(k, len(vae.config.up_block_types))
        out[prefix + name] = v[:, :, None, None] if ".attn_1." in name and v.ndim == 2 else v
    return out


def sd3_standard_encoders(seed: int = 0):
    """Tiny VAE, CLIP-L, bigG and T5 that follow the constants an SD3 single file does not store: 64-wide CLIP heads, quick-GELU /
    GELU, 32 GroupNorm groups, no quant convs, gated-GELU T5; over the word tokenizer's vocabulary. (vae, clip_l, clip_g, t5)"""
    import torch
    from diffusers import AutoencoderKL
    from transformers import CLIPTextConfig, CLIPTextModelWithProjection, T5Config, T5EncoderModel
    torch.manual_seed(seed)
    vae = AutoencoderKL(down_block_types=("DownEncoderBlock2D",) * 2, up_block_types=("UpDecoderBlock2D",) * 2, block_out_channels=(32, 64),
                        layers_per_block=1, latent_channels=16, norm_num_groups=32, use_quant_conv=False, use_post_quant_conv=False,
                        scaling_factor=1.5305, shift_factor=0.0609)
    ids = dict(bos_token_id=0, eos_token_id=2, pad_token_id=1, max_position_embeddings=77, vocab_size=len(WORDS), num_hidden_layers=2)
    clip_l = CLIPTextModelWithProjection(CLIPTextConfig(hidden_size=64, intermediate_size=96, num_attention_heads=1, projection_dim=64, hidden_act="quick_gelu", **ids))
    clip_g = CLIPTextModelWithProjection(CLIPTextConfig(hidden_size=128, intermediate_size=160, num_attention_heads=2, projection_dim=128, hidden_act="gelu", **ids))
    t5 = T5EncoderModel(T5Config(vocab_size=len(WORDS), d_model=192, d_kv=16, num_heads=4, d_ff=64, num_layers=2, feed_forward_proj="gated-gelu",
                                 pad_token_id=0, eos_token_id=1))
    return vae.eval(), clip_l.eval(), clip_g.eval(), t5.eval()


def stability_sd3_single_file(mmdit_sd: dict, vae, clip_l, clip_g, t5) -> dict:
    """A Stability SD3 single file's tensors (the `…_incl_clips_t5xxl…` layout): the MMDiT under `model.diffusion_model.`, the VAE in
    LDM names under `first_stage_model.`, both CLIPs and T5 in transformers' names under `text_encoders.{clip_l,clip_g,t5xxl}.transformer.`."""
    out = {"model.diffusion_model." + k: v for k, v in mmdit_sd.items()} | ldm_vae_tensors(vae)
    for name, clip in (("clip_l", clip_l), ("clip_g", clip_g)):
        out |= {f"text_encoders.{name}.transformer." + (k if k.startswith(("text_model.", "text_projection.")) else "text_model." + k): v
                for k, v in clip.state_dict().items()}
    out |= {"text_encoders.t5xxl.transformer." + k: v for k, v in t5.state_dict().items() if k != "shared.weight"}   # (the files keep only encoder.*)
    return {k: v.contiguous() for k, v in out.items()}


def sgm_single_file(unet_sd: dict, vae, clip_l, big_g) -> dict:
    """An sgm-style SDXL single file's tensors (as `sd_xl_base_1.0.safetensors` lays them out) from a UNet state dict in sgm
    names and diffusers' AutoencoderKL, CLIPTextModel and CLIPTextModelWithProjection: the inverse of diffusers' converters."""
    import torch
    out = {"model.diffusion_model." + k: v for k, v in unet_sd.items()} | ldm_vae_tensors(vae)
    out |= {"conditioner.embedders.0.transformer." + (k if k.startswith("text_model.") else "text_model." + k): v   # as the files have it
            for k, v in clip_l.state_dict().items()}                                       # (transformers 5 dropped `text_model.`)
    out["conditioner.embedders.0.transformer.text_model.embeddings.position_ids"] = torch.arange(clip_l.config.max_position_embeddings)[None]
    g, P = big_g.state_dict(), "conditioner.embedders.1.model."
    out |= {P + "token_embedding.weight": g["text_model.embeddings.token_embedding.weight"], P + "positional_embedding": g["text_model.embeddings.position_embedding.weight"],
            P + "ln_final.weight": g["text_model.final_layer_norm.weight"], P + "ln_final.bias": g["text_model.final_layer_norm.bias"],
            P + "text_projection": g["text_projection.weight"].T.contiguous()}
    for i in range(len({k.split(".")[3] for k in g if k.startswith("text_model.encoder.layers.")})):
        a, b = f"text_model.encoder.layers.{i}.", f"{P}transformer.resblocks.{i}."
        for w in ("weight", "bias"):
            out[b + f"attn.in_proj_{w}"] = torch.cat([g[a + f"self_attn.{q}_proj.{w}"] for q in "qkv"])
            out |= {b + f"{o}.{w}": g[a + f"{d}.{w}"] for o, d in [("attn.out_proj", "self_attn.out_proj"), ("ln_1", "layer_norm1"), ("ln_2", "layer_norm2"),
                                                                    ("mlp.c_fc", "mlp.fc1"), ("mlp.c_proj", "mlp.fc2")]}
    return {k: v.contiguous() for k, v in out.items()}


def sdxl_standard_encoders(seed: int = 0):
    """Tiny VAE, CLIP-L and bigG that follow SDXL's own constants where a single file stores no config: 64-wide heads,
    32 GroupNorm groups, quick-GELU / GELU, SDXL's token ids; over the word tokenizer's vocabulary. (vae, clip_l, big_g)"""
    import torch
    from diffusers import AutoencoderKL
    from transformers import CLIPTextConfig, CLIPTextModel, CLIPTextModelWithProjection
    torch.manual_seed(seed)
    vae = AutoencoderKL(down_block_types=("DownEncoderBlock2D",) * 2, up_block_types=("UpDecoderBlock2D",) * 2, block_out_channels=(32, 64),
                        layers_per_block=1, latent_channels=4, norm_num_groups=32)
    ids = dict(bos_token_id=0, eos_token_id=2, pad_token_id=1, max_position_embeddings=77, vocab_size=len(WORDS), num_hidden_layers=2)
    clip_l = CLIPTextModel(CLIPTextConfig(hidden_size=64, intermediate_size=96, num_attention_heads=1, projection_dim=64, hidden_act="quick_gelu", **ids))
    big_g = CLIPTextModelWithProjection(CLIPTextConfig(hidden_size=128, intermediate_size=160, num_attention_heads=2, projection_dim=20, hidden_act="gelu", **ids))
    return vae.eval(), clip_l.eval(), big_g.eval()


def fake_hub_tokenizers(cache, field, repos):
    "A Hugging Face cache at `cache` holding `field`'s tokenizer/, tokenizer_2/ (tokenizer_3/) as the repos `repos` (offline tests of Hub lookups)."
    import shutil
    from pathlib import Path
    for repo, sub in zip(repos, ("tokenizer", "tokenizer_2", "tokenizer_3")):
        top = Path(cache) / f"models--{repo.replace('/', '--')}"
        shutil.copytree(Path(field) / sub, top / "snapshots" / ("0" * 40))
        (top / "snapshots" / ("0" * 40) / "config.json").write_text('{"model_type": "clip"}')   # the real repos hold their model's config
        (top / "refs").mkdir(); (top / "refs" / "main").write_text("0" * 40)
    return Path(cache)


# Several processes (73_distributed, 74_sharded). `launch` spawns its processes, which import their entry point by name:
# the entries below live here, in a module they can import, each a `train` with something watched or injected.
def tiny_flux(seed: int = 0):
    "The demo's network shape (as in the training notebook), seeded."
    import torch
    from flame.models.flux import Flux, FluxConfig
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return Flux(FluxConfig.tiny(in_channels=48, out_channels=48))

def tiny_sdxl(seed: int = 0):
    "The tiny SDXL UNet behind its denoiser, seeded (VAE factor 2, as the tiny field's VAE)."
    import torch
    from flame.models.sdxl import SDXLUNet, SDXLConfig, SDXLDenoiser
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return SDXLDenoiser(SDXLUNet(SDXLConfig.tiny()), vae_factor=2)

def rel(a, b) -> float:
    "max |a − b| / max |a| over two lists of losses."
    import torch
    return (torch.tensor(a, dtype=torch.float64) - torch.tensor(b, dtype=torch.float64)).abs().max().item() / max(map(abs, a))

def lora_rel(a, b) -> float:
    "‖a − b‖ / ‖a‖ over all tensors of two LoRA files (or checkpoints' params)."
    from safetensors.torch import load_file
    a, b = load_file(a), load_file(b)
    num = sum(((a[k].double() - b[k].double()) ** 2).sum() for k in a); den = sum((a[k].double() ** 2).sum() for k in a)
    return (num / den).sqrt().item()

def state_rel(a, b) -> float:
    "The largest ‖a − b‖ / ‖a‖ over the weights and optimizer state of two checkpoints (which must hold the same tensors)."
    from safetensors.torch import load_file
    a, b = load_file(a), load_file(b)
    assert {k: v.shape for k, v in a.items() if k != "history"} == {k: v.shape for k, v in b.items() if k != "history"}
    return max(((a[k].double() - b[k].double()).norm() / a[k].double().norm().clamp_min(1e-30)).item() for k in a if k not in ("history", "steps"))

def _watch(root):
    "Every write, creation, rename or removal under `root` from here on, through Python's audit hooks."
    import os, sys
    seen = []
    def hook(event, args):
        if event == "open" and isinstance(args[0], (str, os.PathLike)):
            mode, flags = args[1], args[2] or 0
            if (mode is not None and any(c in mode for c in "wax+")) or (mode is None and flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT)):
                if os.path.abspath(args[0]).startswith(root): seen.append(f"write {args[0]}")
        elif event in ("os.rename", "os.replace", "os.remove", "os.unlink", "os.mkdir", "os.rmdir", "os.link", "shutil.rmtree", "os.truncate"):
            if isinstance(args[0], (str, os.PathLike)) and os.path.abspath(args[0]).startswith(root): seen.append(f"{event} {args[0]} {args[1] if event in ('os.rename', 'os.replace') else ''}")
    sys.addaudithook(hook)
    return seen

def audited(config, model, data):
    "Train, and fail on a rank other than 0 that wrote anything beside the run's output; return the result and what was written."
    import os
    from flame.train import train
    seen = _watch(os.path.dirname(os.path.abspath(config.output)))
    result = train(config, model=model, data=data)
    rank = int(os.environ["RANK"])
    if rank and seen: raise AssertionError(f"rank {rank} wrote: {seen[:5]}")
    return result, seen

def one_short(config, model, data):
    "Train, with rank 1's step alone not fitting beside its part of a sharded state (the processes must go on the next way together)."
    import flame.train as ft
    from flame.policy import NeedsLayerwise
    plan = ft.plan_run_memory
    def plan_run_memory(run, st, log=print):
        if run.rank == 1 and ft._shards(st.opt) > 1 and not isinstance(st.opt, ft.HostOptimizer): raise NeedsLayerwise(1, 1, 2)
        return plan(run, st, log)
    ft.plan_run_memory = plan_run_memory
    return ft.train(config, model=model, data=data)

def failing(config, model, data):
    "Train, with rank 1 raising at step 3."
    import flame.train as ft
    step_ = ft.train_step
    def train_step(run, st, memory, step):
        if run.rank == 1 and step == 3: raise RuntimeError(f"injected failure at step {step}")
        return step_(run, st, memory, step)
    ft.train_step = train_step
    return ft.train(config, model=model, data=data)

def watched(config, model, data):
    "Train; and say, as each way of holding the state starts, whether the states before it are still alive, and the network's class."
    import gc, weakref, flame.train as ft
    made, alive, start = [], [], ft.start_state
    def start_state(run, how=None):
        gc.collect(); alive.append(([r() is not None for r in made], type(run.model.net).__name__))
        st = start(run, how); made.append(weakref.ref(st.opt)); return st
    ft.start_state = start_state
    return ft.train(config, model=model, data=data), alive

def small_chunks(config, model, data):
    "Train, a sharded state reaching a checkpoint 1,000 elements at a time: many chunks a tensor."
    import flame.fsdp, flame.train as ft
    flame.fsdp.STATE_CHUNK = 1000
    return ft.train(config, model=model, data=data)
