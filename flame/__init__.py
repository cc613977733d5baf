"""Train LoRAs and fine-tunes of large diffusion models on GPUs with far less memory than the model needs, fast.

Modules:

- `flame.autograd`: Recompute blocks in backward, stream their saved activations to host memory and back, and keep gradients in one flat buffer — exact, and with hooks for the streaming engine.
- `flame.data`: Image folders with captions, aspect-ratio buckets and crops, safetensors caches of VAE latents and text embeddings made with the field's own encoders — and a procedural dataset of coloured shapes that trains on a CPU.
- `flame.diffusion`: The rectified-flow objective Flux and SD3 are trained with, the timestep distributions trainers draw from, the Flux sampling schedule, and an Euler sampler with distilled and classifier-free guidance.
- `flame.kernels.core`: Fused Triton kernels for what diffusion transformers do — adaLN LayerNorm, QK RMSNorm, RoPE, AdamW — and the conventions every FLAME kernel follows: dispatch, testing, measuring.
- `flame.lora`: Low-rank adapters on a frozen model: inject, merge and unmerge exactly, and save and load the two file formats the field uses — kohya (ComfyUI, sd-scripts) and diffusers/PEFT — checked against diffusers' own loader.
- `flame.models.flux`: Black Forest Labs' 12B rectified-flow transformer: double- and single-stream blocks, in BFL's parameter names, loading BFL and diffusers checkpoints lazily, equal to diffusers' implementation.
- `flame.streaming`: Train a model larger than the device: frozen block weights live in a memory-mapped safetensors file or a pinned host pool and flow to the device one step ahead of compute, forward and backward, under a byte budget — with results bit-identical to running resident.
- `flame.tensor`: Where every byte of a training step goes: `MemoryTimeline` records each tensor-storage allocation and free, and says whether it was a parameter, a gradient, an activation, optimizer state, a streamed weight or a temporary.
- `flame.train`: `TrainConfig` and `train(config)`: LoRA or full fine-tuning of Flux with flow matching, AdamW on flat buffers, memory policy from one `budget`, samples, plots, metrics — and checkpoints that resume bit for bit."""

__version__ = "0.0.1"
