"""``deep_gemm_mega_moe:sm90_fp8xfp4``: DeepGEMM ``fp8_fp4_mega_moe`` -> ``_C.fp8_fp4_mega_moe_sm90``.

API (kernels.md §0, ``sgl_deep_gemm/__init__.py`` @ DeepGEMM PR #323 8ddf7f96):
``get_symm_buffer_for_mega_moe(group, E, max_tokens, topk, H, I, mma_type='fp8xfp4')`` (an
``SM90SymmBuffer`` on capability 9), ``fp8_fp4_mega_moe(y, l1, l2, buf, recipe=(1, 1, 32),
activation='swiglu', activation_clamp=L)``. Host asserts: DG_USE_FP4_ACTS=0 and DG_USE_FP8_COMBINE=0.
"""

from __future__ import annotations

from typing import ClassVar

from moe_oracle.runtime.kernels import DeepGemmMegaMoE


class Sm90Fp8Fp4MegaMoE(DeepGemmMegaMoE):
    key = "deep_gemm_mega_moe:sm90_fp8xfp4"
    VARIANT = "sm90_fp8xfp4"
    ARCH_MAJORS = (9,)
    KERNEL = "fp8_fp4_mega_moe"
    REQUIRED = ("fp8_fp4_mega_moe", "_C.fp8_fp4_mega_moe_sm90")
    BUFFER_FNS = ("get_symm_buffer_for_mega_moe", "get_symm_buffer_for_sm90_mega_moe")
    BUFFER_KWARGS: ClassVar[dict] = {"mma_type": "fp8xfp4"}
    KERNEL_KWARGS: ClassVar[dict] = {"recipe": (1, 1, 32), "activation": "swiglu"}
    WEIGHTS = "moe_oracle_backends.cuda_sm90.fp8xfp4.weights"
    STAGING = "moe_oracle_backends.cuda_sm90.fp8xfp4.staging"
    PROVIDED_BY = "a DeepGEMM build with the SM90 FP8xFP4 kernel (PR #323/#411)"
    ENV_MUST_BE_OFF = ("DG_USE_FP4_ACTS", "DG_USE_FP8_COMBINE")
    ENV_DEFAULTS: ClassVar[dict] = {"TORCH_SYMM_MEM_DISABLE_MULTICAST": "1"}
