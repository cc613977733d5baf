"""Train LoRAs and fine-tunes of large diffusion models on GPUs with far less memory than the model needs, fast.

Modules:

- `flame.autograd`: Recompute blocks in backward, stream their saved activations to host memory and back, and keep gradients in one flat buffer — exact, and with hooks for the streaming engine.
- `flame.data`: Image folders with captions, aspect-ratio buckets and crops, safetensors caches of VAE latents and text embeddings made with the field's own encoders — and a procedural dataset of coloured shapes that trains on a CPU.
- `flame.demo`: What `flame train` does with no arguments: the `tiny` model family, its procedural data, the base model it builds once, and the statistic its result is judged by.
- `flame.diffusion`: What a diffusion model learns to predict (`flow`, `eps`, `v`), the timesteps trainers draw, and the samplers that run a model backwards: Euler for every objective (Flux's schedule, SDXL's scheduler), DDIM for eps / v.
- `flame.fsdp`: A full fine-tune whose weights, gradients and optimizer state fit N GPUs together but not one: PyTorch's FSDP2 shards each block's weights and gradients over the processes, and FLAME's AdamW updates each process's shards.
- `flame.graphs`: Replay each block's forward, and its recompute with its backward, as CUDA graphs: a few launches a block instead of hundreds, checkpointed like `checkpoint` and keyed by where the block's weights are, so streamed weights work too.
- `flame.io`: Writing a file so that a crash never leaves half of it, safetensors' names for dtypes, and sizes as people write them ("12GB", "512MiB") — the small helpers every layer above needs.
- `flame.kernels.adafactor`: One weight matrix's Adafactor update in three passes over its gradient — the squared gradient's row and column sums, the update's norm, the update itself — instead of the two dozen elementwise PyTorch ops the reference takes: what a layer-wise full fine-tune runs for every block in its backward.
- `flame.kernels.adamw`: One AdamW step as one elementwise kernel over flat buffers, step for step `torch.optim.AdamW` — with stochastic rounding for bf16 parameters, so that small updates are not lost.
- `flame.kernels.adamw8bit`: AdamW with both moments kept in 8 bits — quantized per block of 256 values with bitsandbytes' dynamic map — updated by one Triton kernel that dequantizes, steps and requantizes: 2 bytes of optimizer state per parameter instead of 8.
- `flame.kernels.core`: The conventions every FLAME kernel follows — dispatch, argument checks, testing, measuring — and the plumbing the fused row kernels share.
- `flame.kernels.fp8_matmul`: `y = x @ (W_fp8 · scale)ᵀ + bias`: a Triton matmul that reads frozen `float8_e4m3fn` weights and bf16/fp16/fp32 activations, applying the scale in the epilogue — forward and the gradient w.r.t. `x`.
- `flame.kernels.group_norm`: GroupNorm over channel groups and every pixel, with SDXL's SiLU fused in — forward and backward in Triton, for groups far too large to hold in registers.
- `flame.kernels.layer_norm`: LayerNorm without affine, then a per-sample (or per-token) scale and shift — fused into one read of `x` and one write of `y`, in the forward and in the backward.
- `flame.kernels.qk_rope`: Flux's QK RMSNorm and RoPE in one kernel: each row of `q` and `k` loaded once, normalised by its own weight, rotated and stored once — one launch where there were six, forward and backward. Without rotations, SD3.5's QK norms in one launch.
- `flame.kernels.rms_norm`: RMSNorm with a learnt scale over the last dim — the norm Flux applies to every head's queries and keys: very many short rows, read in place from the fused `qkv` projection.
- `flame.kernels.rope`: Rotary position embeddings over three axes, in BFL's layout: one kernel rotates every head of a token with one load of its rotations, and the backward is the same kernel.
- `flame.layerwise`: A full fine-tune of a model larger than the GPU: its weights stream like a frozen base's, while the master weights, gradients and optimizer state live in host memory and are updated there.
- `flame.lora`: Low-rank adapters on a frozen model: inject, merge and unmerge exactly, and save and load the two file formats the field uses — kohya (ComfyUI, sd-scripts) and diffusers/PEFT — checked against diffusers' own loader.
- `flame.models.flux`: Black Forest Labs' 12B rectified-flow transformer: double- and single-stream blocks, in BFL's parameter names, loading BFL and diffusers checkpoints lazily, equal to diffusers' implementation.
- `flame.models.sd3`: Stability's MMDiT (SD3, SD3.5 Large) and MMDiT-X (SD3.5 Medium), in Stability's parameter names, loading Stability and diffusers checkpoints lazily, equal to diffusers' `SD3Transformer2DModel`.
- `flame.models.sdxl`: Stability's SDXL UNet in the original (sgm / LDM) parameter names, loading single-file, bare and diffusers checkpoints lazily, equal to diffusers' `UNet2DConditionModel`; its text encoders, conditioning, LoRA names and family.
- `flame.optim`: AdamW, 8-bit AdamW and Adafactor over one flat buffer of parameters and one of gradients, behind one interface: step, zero_grad, global-norm clipping, the state as named flat tensors that resume bit for bit.
- `flame.policy`: One owner of the device budget: parse it, measure a probe step, choose resident / checkpointing / activation offload / weight streaming, split the bytes, and hold the run to it.
- `flame.streaming`: Train a model larger than the device: frozen block weights live in a memory-mapped safetensors file or a pinned host pool and flow to the device one step ahead of compute, forward and backward, under a byte budget — with results bit-identical to running resident.
- `flame.tensor`: Where every byte of a training step goes: `MemoryTimeline` records each tensor-storage allocation and free, and says whether it was a parameter, a gradient, an activation, optimizer state, a streamed weight or a temporary.
- `flame.train`: `TrainConfig` and `train(config)`: LoRA or full fine-tuning of any registered model family, AdamW on flat buffers, a memory policy from one `budget`, samples, plots, metrics — and checkpoints that resume bit for bit."""

__version__ = "0.0.1"
