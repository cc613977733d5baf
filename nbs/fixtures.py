"""Test fixtures the notebooks share (not part of the package): tiny random field components in the diffusers layout."""


def tiny_field_components(root, seed: int = 0, latent_channels: int = 4, vae_blocks: int = 2, t5_dim: int = 24, clip_dim: int = 32):
    """Save random small AutoencoderKL (2^(vae_blocks-1)x down), CLIP and T5 (+ word-level tokenizers) to `root` in the
    diffusers Flux layout, for tests: default sizes match `FluxConfig.tiny()` (4 latent channels, context 24, pooled 32);
    `latent_channels=16, vae_blocks=4, t5_dim=4096, clip_dim=768` give Flux's interface at a fraction of the weights."""
    from pathlib import Path
    import torch
    from diffusers import AutoencoderKL
    from tokenizers import Tokenizer, models, pre_tokenizers, processors
    from transformers import CLIPTextConfig, CLIPTextModel, PreTrainedTokenizerFast, T5Config, T5EncoderModel
    root = Path(root)
    words = ["<pad>", "</s>", "<unk>", "<s>", "a", "an", "the", "of", "on", "my", "dog", "thing",
             "red", "green", "blue", "yellow", "cyan", "magenta", "white", "circle", "square", "triangle"]
    torch.manual_seed(seed)
    for sub, bos in (("tokenizer", True), ("tokenizer_2", False)):     # CLIP wraps in <s> ... </s>; T5 appends </s>
        tok = Tokenizer(models.WordLevel({w: i for i, w in enumerate(words)}, unk_token="<unk>"))
        tok.pre_tokenizer = pre_tokenizers.Whitespace()
        tok.post_processor = processors.TemplateProcessing(single=("<s> $A </s>" if bos else "$A </s>"), special_tokens=[("<s>", 3), ("</s>", 1)])
        PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="<pad>", eos_token="</s>", unk_token="<unk>", bos_token="<s>",
                                model_max_length=77).save_pretrained(root / sub)
    CLIPTextModel(CLIPTextConfig(vocab_size=len(words), hidden_size=clip_dim, intermediate_size=37, num_hidden_layers=1, num_attention_heads=2,
                                 max_position_embeddings=77, pad_token_id=0, eos_token_id=1, bos_token_id=3)).save_pretrained(root / "text_encoder")
    T5EncoderModel(T5Config(vocab_size=len(words), d_model=t5_dim, d_kv=8, d_ff=32, num_layers=1, num_heads=2,
                            pad_token_id=0, eos_token_id=1)).save_pretrained(root / "text_encoder_2")
    AutoencoderKL(in_channels=3, out_channels=3, down_block_types=("DownEncoderBlock2D",) * vae_blocks, up_block_types=("UpDecoderBlock2D",) * vae_blocks,
                  block_out_channels=tuple(8 * 2 ** min(i, 1) for i in range(vae_blocks)), layers_per_block=1, latent_channels=latent_channels,
                  norm_num_groups=4, sample_size=32, shift_factor=0.1, scaling_factor=0.5).save_pretrained(root / "vae")
    return root
