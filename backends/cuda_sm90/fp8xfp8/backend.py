"""``deep_gemm_mega_moe:sm90_fp8xfp8``: DeepGEMM ``fp8_mega_moe`` on Hopper (SM90).

API (https://github.com/deepseek-ai/DeepGEMM/pull/323, https://github.com/deepseek-ai/DeepGEMM;
``sgl_deep_gemm/__init__.py`` @ DeepGEMM PR #323 8ddf7f96, sgl-deep-gemm
>= 0.2.0, upstream nv_dev): ``get_symm_buffer_for_sm90_mega_moe(group, E, max_tokens, topk, H, I,
use_fp8_dispatch=True)`` (or ``get_symm_buffer_for_mega_moe``, which dispatches to it on SM90),
``fp8_mega_moe(y, l1, l2, buf, recipe=(128, 128, 128), activation='swiglu', activation_clamp=L)``.
The SM90 buffer always uses torch symmetric memory, so EP=1 runs on a 1-rank process group
(``TORCH_SYMM_MEM_DISABLE_MULTICAST=1`` set by default, as docs/performance.md did).

Staging (``StagingSpec.declared(VARIANT)``, bit-exact to ``moe_oracle.numerics``): SM90 DeepGEMM
``fp8_mega_moe``: ``buf.x`` E4M3 ``[T, H]``, ``buf.x_sf`` FP32 ``[T, H/128]`` (amax/448 per 128,
``per_token_cast_to_fp8(x, use_ue8m0=False, gran_k=128)`` as
``sgl_deep_gemm/tests/test_mega_moe_hopper.py`` stages it).
"""

from __future__ import annotations

from typing import ClassVar

from ..._deep_gemm_layer import DeepGemmMegaMoE
from . import weights
from .config import VARIANT


class Sm90Fp8MegaMoE(DeepGemmMegaMoE):
    SPEC = VARIANT
    WEIGHTS = weights.LAYOUT
    KERNEL = "fp8_mega_moe"
    BUFFER_FNS = ("get_symm_buffer_for_sm90_mega_moe", "get_symm_buffer_for_mega_moe")
    BUFFER_KWARGS: ClassVar[dict] = {}
    KERNEL_KWARGS: ClassVar[dict] = {"recipe": (128, 128, 128), "activation": "swiglu"}
    ENV_DEFAULTS: ClassVar[dict] = {"TORCH_SYMM_MEM_DISABLE_MULTICAST": "1"}
