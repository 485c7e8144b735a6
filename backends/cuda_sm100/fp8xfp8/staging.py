"""Input staging for this variant: SM100 DeepGEMM ``fp8_fp4_mega_moe`` (mma ``fp8xfp8``): same buffers
as sm100_fp8xfp4.

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
