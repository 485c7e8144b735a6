"""Input staging for this variant: SM90 DeepGEMM ``fp8_mega_moe``: ``buf.x`` E4M3 ``[T, H]``,
``buf.x_sf`` FP32 ``[T, H/128]`` (amax/448 per 128, ``per_token_cast_to_fp8(x, use_ue8m0=False,
gran_k=128)`` as ``sgl_deep_gemm/tests/test_mega_moe_hopper.py`` stages it).

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
