"""``deep_gemm_mega_moe:sm90_fp8xfp4``: DeepGEMM ``fp8_fp4_mega_moe`` -> ``_C.fp8_fp4_mega_moe_sm90``.

API (https://github.com/deepseek-ai/DeepGEMM/pull/323, ``sgl_deep_gemm/__init__.py`` @ DeepGEMM PR #323 8ddf7f96):
``get_symm_buffer_for_mega_moe(group, E, max_tokens, topk, H, I, mma_type='fp8xfp4')`` (an
``SM90SymmBuffer`` on capability 9), ``fp8_fp4_mega_moe(y, l1, l2, buf, recipe=(1, 1, 32),
activation='swiglu', activation_clamp=L)``. Host asserts: DG_USE_FP4_ACTS=0 and DG_USE_FP8_COMBINE=0.

Staging (``StagingSpec.declared(VARIANT)``, bit-exact to ``moe_oracle.numerics``): SM90 DeepGEMM
``fp8_fp4_mega_moe`` (``_C.fp8_fp4_mega_moe_sm90``): same buffers as sm90_fp8xfp8 (FP8 E4M3 + FP32 per
128).
"""

from __future__ import annotations

from typing import ClassVar

from ..._deep_gemm_layer import DeepGemmMegaMoE
from . import weights
from .config import VARIANT


class Sm90Fp8Fp4MegaMoE(DeepGemmMegaMoE):
    SPEC = VARIANT
    WEIGHTS = weights.LAYOUT
    KERNEL = "fp8_fp4_mega_moe"
    BUFFER_FNS = ("get_symm_buffer_for_mega_moe", "get_symm_buffer_for_sm90_mega_moe")
    BUFFER_KWARGS: ClassVar[dict] = {"mma_type": "fp8xfp4"}
    KERNEL_KWARGS: ClassVar[dict] = {"recipe": (1, 1, 32), "activation": "swiglu"}
    ENV_DEFAULTS: ClassVar[dict] = {"TORCH_SYMM_MEM_DISABLE_MULTICAST": "1"}
