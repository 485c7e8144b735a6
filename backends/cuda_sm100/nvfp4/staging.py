"""Input staging for this variant: SM100 DeepGEMM ``nvfp4_mega_moe(use_x_scales=True)``: ``buf.x``
packed E2M1 ``[T, H/2]``, ``buf.x_sf`` int32 ``[T, H/64]`` (E4M3 per 16, four per int32),
``buf.x_scales`` fp32 ``[T]`` = max(amax, 1e-12)/2688 (vLLM 0.33 §2.8).

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
