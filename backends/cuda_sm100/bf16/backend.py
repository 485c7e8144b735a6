"""``deep_gemm_mega_moe:sm100_bf16``: DeepGEMM ``bf16_mega_moe`` (BF16 experts, SM100/SM103).

API (``deep_gemm/mega/__init__.py`` @ 54e2261): ``get_symm_buffer_for_mega_moe(...,
mma_type='bf16xbf16')``, ``bf16_mega_moe(y, l1, l2, buf, activation_clamp=L)``; ``buf.x`` is BF16.

Staging (``StagingSpec.declared(VARIANT)``, bit-exact to ``moe_oracle.numerics``): SM100 DeepGEMM
``bf16_mega_moe``: ``buf.x`` BF16 ``[T, H]`` (no quantization).
"""

from __future__ import annotations

from typing import ClassVar

from ..._deep_gemm_layer import DeepGemmMegaMoE
from . import weights
from .config import VARIANT


class Sm100Bf16MegaMoE(DeepGemmMegaMoE):
    SPEC = VARIANT
    WEIGHTS = weights.LAYOUT
    KERNEL = "bf16_mega_moe"
    BUFFER_FNS = ("get_symm_buffer_for_mega_moe",)
    BUFFER_KWARGS: ClassVar[dict] = {"mma_type": "bf16xbf16"}
    KERNEL_KWARGS: ClassVar[dict] = {}
