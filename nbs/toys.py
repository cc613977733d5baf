"""Toy models for the notebooks' examples and tests, and for the scripts in bench/. Not part of the package.

The `flame` package holds no toy models or fixtures: what the notebooks train in their examples lives
here, once, and every notebook imports it (`from toys import Stack`). nbdev-test and docs/build.py run
the notebooks from nbs/, where this file sits; a script elsewhere puts nbs/ on `sys.path` first.
Every nn.Module class the examples of 00_tensor, 01_autograd and 20_streaming use is defined here.
"""
from contextlib import nullcontext
import torch
from torch import nn
import torch.nn.functional as F
from flame.autograd import checkpoint, offload_activations

__all__ = ["LoRA", "Block", "Stack", "DemoBlock", "POLICIES", "policy_step", "Tricky", "Outer"]


# ---- 20_streaming: a stack of small transformer-like blocks with frozen weights and LoRAs ---------------

class LoRA(nn.Module):
    "A frozen linear layer plus a trainable low-rank update (`up` starts random so gradients are non-trivial)."
    def __init__(self, d_in, d_out, rank=2):
        super().__init__()
        self.base = nn.Linear(d_in, d_out).requires_grad_(False)
        self.down = nn.Parameter(torch.randn(rank, d_in) / d_in ** 0.5)
        self.up = nn.Parameter(torch.randn(d_out, rank) / rank)
    def forward(self, x): return self.base(x) + (x @ self.down.T) @ self.up.T

class Block(nn.Module):
    "Pre-norm attention + MLP; frozen weights, a LoRA on the attention output."
    def __init__(self, d, heads=2, mlp=4):
        super().__init__()
        self.heads = heads
        self.norm1, self.norm2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d), LoRA(d, d)
        self.fc1, self.fc2 = nn.Linear(d, mlp * d), nn.Linear(mlp * d, d)
        for m in (self.norm1, self.norm2, self.qkv, self.fc1, self.fc2): m.requires_grad_(False)
    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(self.norm1(x)).view(B, T, 3, self.heads, C // self.heads).permute(2, 0, 3, 1, 4).unbind(0)
        a = torch.softmax(q @ k.transpose(-1, -2) / (C // self.heads) ** 0.5, -1) @ v
        x = x + self.proj(a.transpose(1, 2).reshape(B, T, C))
        return x + self.fc2(torch.nn.functional.gelu(self.fc1(self.norm2(x))))

class Stack(nn.Module):
    "Embedding in, `Block`s, head out; `stream_units()` names the blocks; `checkpointing` runs them via `checkpoint`."
    def __init__(self, d=32, n_blocks=6, d_in=8, block_sizes=None, heads=2):
        super().__init__()
        self.inp, self.out = nn.Linear(d_in, d), nn.Linear(d, d_in)
        mlps = block_sizes or [4] * n_blocks
        self.blocks = nn.ModuleList(Block(d, heads, m) for m in mlps)
        self.checkpointing = False
    def stream_units(self): return list(self.blocks)
    def forward(self, x):
        h = self.inp(x)
        for b in self.blocks: h = checkpoint(b, h) if self.checkpointing and torch.is_grad_enabled() else b(h)
        return self.out(h)


# ---- 01_autograd: the lesson's transformer block and its memory policies (also bench/autograd.py) ------

class DemoBlock(nn.Module):
    "A pre-norm transformer block from plain torch ops and SDPA: the subject of the lesson and the benchmark."
    def __init__(self, width: int = 64, heads: int = 4, mlp_ratio: int = 4, device=None, dtype=None):
        super().__init__()
        if width % heads: raise ValueError(f"heads: expected a divisor of width={width}, got {heads}")
        kw = dict(device=device, dtype=dtype)
        self.heads = heads
        self.norm1, self.norm2 = nn.LayerNorm(width, **kw), nn.LayerNorm(width, **kw)
        self.qkv, self.proj = nn.Linear(width, 3 * width, **kw), nn.Linear(width, width, **kw)
        self.fc1, self.fc2 = nn.Linear(width, mlp_ratio * width, **kw), nn.Linear(mlp_ratio * width, width, **kw)

    def forward(self, x):
        B, T, C = x.shape
        qkv = self.qkv(self.norm1(x)).view(B, T, 3, self.heads, C // self.heads).permute(2, 0, 3, 1, 4)
        q, k, v = qkv.contiguous().unbind(0)   # contiguous: cuDNN's SDPA backward has crashed on strided q/k/v
        a = F.scaled_dot_product_attention(q, k, v).transpose(1, 2).reshape(B, T, C)
        x = x + self.proj(a)
        return x + self.fc2(F.gelu(self.fc1(self.norm2(x)), approximate="tanh"))

POLICIES = ("plain", "checkpoint", "offload", "save_on_cpu")

def policy_step(blocks, x, policy: str = "checkpoint"):
    "Run `x` through `blocks` under `policy` (see `POLICIES`) and backward a mean-square loss; returns the loss."
    if policy not in POLICIES: raise ValueError(f"policy: expected one of {POLICIES}, got {policy!r}")
    ctx = {"offload": offload_activations,
           "save_on_cpu": lambda: torch.autograd.graph.save_on_cpu(pin_memory=torch.cuda.is_available())
           }.get(policy, nullcontext)
    with ctx():
        h = x
        for b in blocks: h = b(h) if policy == "plain" else checkpoint(b, h)
        loss = h.float().square().mean()
    loss.backward()
    return loss.detach()


# ---- 01_autograd: blocks with everything that can go wrong in a recompute --------------------------------

class Tricky(nn.Module):
    "Dropout, a keyword argument, a non-tensor argument, two outputs and a parameter used twice."
    def __init__(self, d=16):
        super().__init__()
        self.lin, self.norm, self.drop = nn.Linear(d, d), nn.LayerNorm(d), nn.Dropout(0.3)
    def forward(self, x, scale, *, gate=None, mode="gelu"):
        h = self.drop(self.lin(self.norm(x)))
        h = F.gelu(h) if mode == "gelu" else torch.tanh(h)
        if gate is not None: h = h * torch.sigmoid(gate)
        return x + scale * self.lin(h), h.pow(2).mean()

class Outer(nn.Module):
    "A checkpointed `Tricky` inside a block of its own: checkpoints nest."
    def __init__(self):
        super().__init__()
        self.a, self.b = Tricky(), nn.Linear(16, 16)
    def forward(self, x, scale, *, gate=None, mode="gelu"):
        y, aux = checkpoint(self.a, x, scale, gate=gate, mode=mode)
        return self.b(y), aux
