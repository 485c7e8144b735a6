"""Input staging for this variant: AITER ``MegaMoEV2(quant='a4w4')``: BF16 x (quantized to MXFP4 in the
kernel), fp32 weights, int32 ids.

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
