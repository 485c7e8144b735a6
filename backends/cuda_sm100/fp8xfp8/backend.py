"""``deep_gemm_mega_moe:sm100_fp8xfp8``: DeepGEMM ``fp8_fp4_mega_moe`` with mma ``fp8xfp8`` (MXFP8 weights).

API (vLLM 0.33 §2.1 row ``MEGA_MOE_MXFP8``, §5.2-§5.3): ``get_symm_buffer_for_mega_moe(...,
mma_type='fp8xfp8')``, ``fp8_fp4_mega_moe(y, l1, l2, buf, recipe=(1, 1, 32), activation_clamp=L)``.

Staging (``StagingSpec.declared(VARIANT)``, bit-exact to ``moe_oracle.numerics``): SM100 DeepGEMM
``fp8_fp4_mega_moe`` (mma ``fp8xfp8``): same buffers as sm100_fp8xfp4.
"""

from __future__ import annotations

from typing import ClassVar

from ..._deep_gemm_layer import DeepGemmMegaMoE
from . import weights
from .config import VARIANT


class Sm100Fp8Fp8MegaMoE(DeepGemmMegaMoE):
    SPEC = VARIANT
    WEIGHTS = weights.LAYOUT
    KERNEL = "fp8_fp4_mega_moe"
    #: sm100_fp8_fp4_mega_moe.cuh waits on the grid dependency (DeepGEMM PR #447 review, 2026-09-15)
    KERNEL_WAITS_FOR_GRID_DEPENDENCY = True
    BUFFER_FNS = ("get_symm_buffer_for_mega_moe",)
    BUFFER_KWARGS: ClassVar[dict] = {"mma_type": "fp8xfp8"}
    KERNEL_KWARGS: ClassVar[dict] = {"recipe": (1, 1, 32)}
