"""Test fixtures the notebooks share (not part of the package): tiny random field components in the diffusers layout."""

WORDS = ["<pad>", "</s>", "<unk>", "<s>", "a", "an", "the", "of", "on", "my", "dog", "thing",
         "red", "green", "blue", "yellow", "cyan", "magenta", "white", "circle", "square", "triangle"]

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


def tiny_field_components(root, seed: int = 0, latent_channels: int = 4, vae_blocks: int = 2, t5_dim: int = 24, clip_dim: int = 32):
    """Save random small AutoencoderKL (2^(vae_blocks-1)x down), CLIP and T5 (+ word-level tokenizers) to `root` in the
    diffusers Flux layout, for tests: default sizes match `FluxConfig.tiny()` (4 latent channels, context 24, pooled 32);
    `latent_channels=16, vae_blocks=4, t5_dim=4096, clip_dim=768` give Flux's interface at a fraction of the weights."""
    from pathlib import Path
    import torch
    from transformers import CLIPTextConfig, CLIPTextModel, T5Config, T5EncoderModel
    root = Path(root)
    torch.manual_seed(seed)
    for sub, bos in (("tokenizer", True), ("tokenizer_2", False)): _save_tokenizer(root / sub, bos, 77)   # CLIP: <s> ... </s>; T5: ... </s>
    CLIPTextModel(CLIPTextConfig(vocab_size=len(WORDS), hidden_size=clip_dim, intermediate_size=37, num_hidden_layers=1, num_attention_heads=2,
                                 max_position_embeddings=77, pad_token_id=0, eos_token_id=1, bos_token_id=3)).save_pretrained(root / "text_encoder")
    T5EncoderModel(T5Config(vocab_size=len(WORDS), d_model=t5_dim, d_kv=8, d_ff=32, num_layers=1, num_heads=2,
                            pad_token_id=0, eos_token_id=1)).save_pretrained(root / "text_encoder_2")
    _save_vae(root / "vae", latent_channels, vae_blocks, shift=0.1, scale=0.5)
    return root


def tiny_sd3_components(root, seed: int = 0, latent_channels: int = 16, vae_blocks: int = 2, clip_dims: tuple = (32, 48), t5_dim: int = 96):
    """Save random small CLIP-L-like and bigG-like `CLIPTextModelWithProjection`s (widths `clip_dims`, projection = width),
    a T5 encoder (`t5_dim` wide, at least sum(clip_dims)), word-level tokenizers and an AutoencoderKL (`latent_channels`,
    2^(vae_blocks-1)x down, SD3's scaling and shift factors) to `root` in the diffusers SD3 layout, for tests."""
    from pathlib import Path
    import torch
    from transformers import CLIPTextConfig, CLIPTextModelWithProjection, T5Config, T5EncoderModel
    if sum(clip_dims) > t5_dim: raise ValueError(f"t5_dim: expected at least {sum(clip_dims)} (the CLIP widths joined), got {t5_dim}")
    root = Path(root)
    torch.manual_seed(seed)
    for sub, bos, n in (("tokenizer", True, 77), ("tokenizer_2", True, 77), ("tokenizer_3", False, 512)): _save_tokenizer(root / sub, bos, n)
    for sub, width in zip(("text_encoder", "text_encoder_2"), clip_dims):
        CLIPTextModelWithProjection(CLIPTextConfig(vocab_size=len(WORDS), hidden_size=width, intermediate_size=37, num_hidden_layers=2,
                                                   num_attention_heads=2, max_position_embeddings=77, projection_dim=width,
                                                   pad_token_id=0, eos_token_id=1, bos_token_id=3)).save_pretrained(root / sub)
    T5EncoderModel(T5Config(vocab_size=len(WORDS), d_model=t5_dim, d_kv=8, d_ff=32, num_layers=1, num_heads=2,
                            pad_token_id=0, eos_token_id=1)).save_pretrained(root / "text_encoder_3")
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
