"""``aiter_mega_moe:gfx950_a4w4``: AITER ``MegaMoEV2(quant='a4w4')`` on MI355X (gfx950).

FP4 activations (MXFP4); MegaMoEV2 @ e404860 accepts a8w4 only, later AITER versions a4w4 only
for EP16 inter-node: the runtime's refusal is reported as BackendUnavailableError.
API (ROCm/aiter ``aiter/ops/flydsl/kernels/mega_moe/mega_moe_v2.py`` @ e404860; https://github.com/ROCm/aiter):
``MegaMoEV2(rank, world_size, model_dim, inter_dim, experts, topk, quant, w1, w1_scale, w2,
w2_scale, max_tok_per_rank, swiglu_limit)``, ``forward(x_bf16, wts fp32 [T, k], topk_ids int32
[T, k])`` -> BF16 ``[T, H]``; MoRI shmem initialized on a registered process group first.

Staging (``StagingSpec.declared(VARIANT)``, bit-exact to ``moe_oracle.numerics``): AITER
``MegaMoEV2(quant='a4w4')``: BF16 x (quantized to MXFP4 in the kernel), fp32 weights, int32 ids.
"""

from __future__ import annotations

from ..layer import AiterMegaMoE
from .config import VARIANT


class AiterA4W4MegaMoE(AiterMegaMoE):
    SPEC = VARIANT
    QUANT = "a4w4"
