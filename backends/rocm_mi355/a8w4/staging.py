"""Input staging for this variant: AITER ``MegaMoEV2(quant='a8w4').forward(x_bf16, wts, topk_ids)``:
BF16 x (the kernel quantizes to MXFP8 itself, ``per_1x32_mx_quant(fp8)``), fp32 weights, int32 ids.
``quantize_like_kernel`` gives the payload the kernel makes (``forward_prequant`` input).

Bit-exact to ``moe_oracle.numerics``; the eager path and, where named, the fused Triton kernel
(see ``moe_oracle.runtime.staging.StagingSpec``).
"""

from __future__ import annotations

from moe_oracle.runtime.staging import StagingSpec

from .config import VARIANT

SPEC = StagingSpec.declared(VARIANT)

stage = SPEC.stage
quantize_like_kernel = SPEC.quantize_like_kernel
stage_to_buffer = SPEC.stage_to_buffer
