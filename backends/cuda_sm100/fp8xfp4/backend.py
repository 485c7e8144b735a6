"""``deep_gemm_mega_moe:sm100_fp8xfp4``: DeepGEMM ``fp8_fp4_mega_moe`` (SM100/SM103, mma ``fp8xfp4``).

API (deepseek-ai/DeepGEMM ``deep_gemm/mega/__init__.py`` @ 54e2261; vLLM 0.33 §5.2):
``get_symm_buffer_for_mega_moe(group, E, max_tokens, topk, H, I, mma_type='fp8xfp4')`` (plain
``torch.empty`` at group size 1), ``fp8_fp4_mega_moe(y, l1, l2, buf, recipe=(1, 1, 32),
activation_clamp=L)``.

Staging (``StagingSpec.declared(VARIANT)``, bit-exact to ``moe_oracle.numerics``): SM100 DeepGEMM
``fp8_fp4_mega_moe``: ``buf.x`` E4M3 ``[T, H]``, ``buf.x_sf`` int32 ``[T, H/128]`` (UE8M0 per 32 packed
four per int32; ``per_token_cast_to_fp8(x, True, 32, use_packed_ue8m0=True)``,
``tests/test_mega_moe.py``).
"""

from __future__ import annotations

from typing import ClassVar

from ..._deep_gemm_layer import DeepGemmMegaMoE
from . import weights
from .config import VARIANT


class Sm100Fp8Fp4MegaMoE(DeepGemmMegaMoE):
    SPEC = VARIANT
    WEIGHTS = weights.LAYOUT
    KERNEL = "fp8_fp4_mega_moe"
    #: sm100_fp8_fp4_mega_moe.cuh waits on the grid dependency (DeepGEMM PR #447 review, 2026-09-15)
    KERNEL_WAITS_FOR_GRID_DEPENDENCY = True
    BUFFER_FNS = ("get_symm_buffer_for_mega_moe",)
    BUFFER_KWARGS: ClassVar[dict] = {"mma_type": "fp8xfp4"}
    KERNEL_KWARGS: ClassVar[dict] = {"recipe": (1, 1, 32)}
