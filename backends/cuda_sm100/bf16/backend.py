"""``deep_gemm_mega_moe:sm100_bf16``: DeepGEMM ``bf16_mega_moe`` (BF16 experts, SM100/SM103).

API (``deep_gemm/mega/__init__.py`` @ 54e2261): ``get_symm_buffer_for_mega_moe(...,
mma_type='bf16xbf16')``, ``bf16_mega_moe(y, l1, l2, buf, activation_clamp=L)``; ``buf.x`` is BF16.
"""

from __future__ import annotations

from typing import ClassVar

from moe_oracle.runtime.kernels import DeepGemmMegaMoE


class Sm100Bf16MegaMoE(DeepGemmMegaMoE):
    key = "deep_gemm_mega_moe:sm100_bf16"
    VARIANT = "sm100_bf16"
    ARCH_MAJORS = (10,)
    KERNEL = "bf16_mega_moe"
    REQUIRED = ("bf16_mega_moe", "transform_weights_for_mega_moe")
    BUFFER_FNS = ("get_symm_buffer_for_mega_moe",)
    BUFFER_KWARGS: ClassVar[dict] = {"mma_type": "bf16xbf16"}
    KERNEL_KWARGS: ClassVar[dict] = {}
    WEIGHTS = "moe_oracle_backends.cuda_sm100.bf16.weights"
    STAGING = "moe_oracle_backends.cuda_sm100.bf16.staging"
    PROVIDED_BY = "DeepGEMM >= 2.4.2 (deep_gemm.bf16_mega_moe)"
    SUPPORTS_ALPHA_BETA = True
