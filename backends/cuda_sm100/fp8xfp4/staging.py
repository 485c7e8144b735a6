"""Input staging for this variant: SM100 DeepGEMM ``fp8_fp4_mega_moe``: ``buf.x`` E4M3 ``[T, H]``,
``buf.x_sf`` int32 ``[T, H/128]`` (UE8M0 per 32 packed four per int32; ``per_token_cast_to_fp8(x,
True, 32, use_packed_ue8m0=True)``, ``tests/test_mega_moe.py``).

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
