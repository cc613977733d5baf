#!/usr/bin/env python3
"""FLAME's SD3 against Stability's own MMDiT-X (`mmditx.py` of github.com/Stability-AI/sd3.5), fp32, tiny random weights.

Stability's model is built from its own code (imported from the checkout named by --ref, never copied here), every
parameter and the position table drawn at random (no zero-initialised layer left), saved as a single-file checkpoint
under `model.diffusion_model.` — the layout ComfyUI and Stability's `sd3_infer.py` load — and read back by
`SD3.from_safetensors`, which infers the configuration from the weights. Both models then see the same latents (a
non-square 12×8 latent, so the position-table crop is exercised), timesteps, pooled vector and context.
Three variants: SD3-Medium style (no QK norm), SD3.5-Large style (QK RMSNorm), SD3.5-Medium style (MMDiT-X: a second
image self-attention in the first blocks). Prints a table and writes JSON.

    git clone https://github.com/Stability-AI/sd3.5 /tmp/sd3.5     # the reference (it imports einops and transformers)
    python bench/sd3_reference.py --ref /tmp/sd3.5 --out /tmp/sd3_reference.json
"""
import argparse, datetime, json, sys, tempfile
from pathlib import Path
import torch
from safetensors.torch import save_file
from flame.models.sd3 import SD3

VARIANTS = {"sd3-medium (no QK norm)": dict(qk_norm=None, x_block_self_attn_layers=[]),
            "sd3.5-large style (QK RMSNorm)": dict(qk_norm="rms", x_block_self_attn_layers=[]),
            "sd3.5-medium style (MMDiT-X)": dict(qk_norm="rms", x_block_self_attn_layers=[0, 1])}

def reference(MMDiTX, depth: int, variant: dict, seed: int):
    "Stability's MMDiTX (hidden 64·depth, depth heads, as in mmditx.py), every parameter and buffer random."
    torch.manual_seed(seed)
    ref = MMDiTX(input_size=None, patch_size=2, in_channels=16, depth=depth + 1, adm_in_channels=48, out_channels=16,
                 context_embedder_config={"target": "torch.nn.Linear", "params": {"in_features": 40, "out_features": 64 * (depth + 1)}},
                 pos_embed_max_size=16, num_patches=256, **variant)
    with torch.no_grad():
        for t in [*ref.parameters(), *ref.buffers()]: t.copy_(torch.randn_like(t) * 0.1)
    return ref.eval()

def compare(MMDiTX, name: str, variant: dict, seed: int, tmp: Path) -> dict:
    ref = reference(MMDiTX, 2, variant, seed)
    path = tmp / f"{seed}.safetensors"
    save_file({f"model.diffusion_model.{k}": v.contiguous() for k, v in ref.state_dict().items()}, str(path))
    ours = SD3.from_safetensors(path).eval()
    g = torch.Generator().manual_seed(seed + 100)
    x, t = torch.randn(2, 16, 12, 8, generator=g), torch.tensor([130.0, 870.0])
    y, ctx = torch.randn(2, 48, generator=g), torch.randn(2, 7, 40, generator=g)
    with torch.no_grad(): theirs, mine = ref(x, t, y=y, context=ctx), ours(x, t, y=y, context=ctx)
    rel = ((mine - theirs).norm() / theirs.norm()).item()
    return {"variant": name, "params": sum(p.numel() for p in ref.parameters()), "keys": len(ref.state_dict()),
            "max_abs_diff": (mine - theirs).abs().max().item(), "max_abs_out": theirs.abs().max().item(), "rel_l2": rel}

def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ref", required=True, help="a checkout of github.com/Stability-AI/sd3.5 (holds mmditx.py)")
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    if not (Path(a.ref) / "mmditx.py").is_file(): sys.exit(f"--ref: {a.ref} holds no mmditx.py (expected a checkout of Stability-AI/sd3.5)")
    sys.path.insert(0, str(Path(a.ref).resolve()))
    from mmditx import MMDiTX                                          # Stability's code, from their checkout
    with tempfile.TemporaryDirectory() as tmp:
        rows = [compare(MMDiTX, name, v, i, Path(tmp)) for i, (name, v) in enumerate(VARIANTS.items())]
    res = {"date": datetime.date.today().isoformat(), "torch": torch.__version__, "dtype": "float32", "device": "cpu", "rows": rows}
    Path(a.out).write_text(json.dumps(res, indent=1))
    print(f"{'variant':34s}{'params':>8}{'max|Δ|':>10}{'max|out|':>10}{'rel L2':>10}")
    for r in rows: print(f"{r['variant']:34s}{r['params']:>8}{r['max_abs_diff']:>10.1e}{r['max_abs_out']:>10.2f}{r['rel_l2']:>10.1e}")
    worst = max(r["rel_l2"] for r in rows)
    if worst > 1e-5: sys.exit(f"FLAME differs from Stability's MMDiTX: rel L2 {worst:.1e} > 1e-5")

if __name__ == "__main__":
    main()
