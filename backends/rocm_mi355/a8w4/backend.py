"""``aiter_mega_moe:gfx950_a8w4``: AITER ``MegaMoEV2(quant='a8w4')`` on MI355X (gfx950).

FP8 activations quantized in the kernel (MXFP8, UE8M0 per 32).
API (ROCm/aiter ``aiter/ops/flydsl/kernels/mega_moe/mega_moe_v2.py`` @ e404860; https://github.com/ROCm/aiter):
``MegaMoEV2(rank, world_size, model_dim, inter_dim, experts, topk, quant, w1, w1_scale, w2,
w2_scale, max_tok_per_rank, swiglu_limit)``, ``forward(x_bf16, wts fp32 [T, k], topk_ids int32
[T, k])`` -> BF16 ``[T, H]``; MoRI shmem initialized on a registered process group first.

Staging (``StagingSpec.declared(VARIANT)``, bit-exact to ``moe_oracle.numerics``): AITER
``MegaMoEV2(quant='a8w4').forward(x_bf16, wts, topk_ids)``: BF16 x (the kernel quantizes to MXFP8
itself, ``per_1x32_mx_quant(fp8)``), fp32 weights, int32 ids. ``quantize_like_kernel`` gives the payload
the kernel makes (``forward_prequant`` input).
"""

from __future__ import annotations

from ..layer import AiterMegaMoE
from .config import VARIANT


class AiterA8W4MegaMoE(AiterMegaMoE):
    SPEC = VARIANT
    QUANT = "a8w4"
