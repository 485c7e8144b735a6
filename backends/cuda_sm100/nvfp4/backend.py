"""``deep_gemm_mega_moe:sm100_nvfp4``: DeepGEMM ``nvfp4_mega_moe`` (vllm-project/DeepGEMM fork, 2.8.x).

API (vLLM 0.33 §2.1/§2.6/§2.8/§5.2; vllm-project/DeepGEMM ``deep_gemm/mega/nvfp4.py``):
``NVFP4SymmBuffer(group, E, max_tokens, topk, H, I)`` (views ``x``, ``x_sf``, ``x_scales``,
``topk_idx``, ``topk_weights``), ``nvfp4_mega_moe(y, l1, l2, buf, activation_clamp=L,
l1_alpha=w13_weight_scale_2 [E], l2_alpha=w2_weight_scale_2 * l2_activation_scale [E],
l2_activation_scale=max(w2_input_scale), use_x_scales=True)``.

Staging (``StagingSpec.declared(VARIANT)``, bit-exact to ``moe_oracle.numerics``): SM100 DeepGEMM
``nvfp4_mega_moe(use_x_scales=True)``: ``buf.x`` packed E2M1 ``[T, H/2]``, ``buf.x_sf`` int32 ``[T,
H/64]`` (E4M3 per 16, four per int32), ``buf.x_scales`` fp32 ``[T]`` = max(amax, 1e-12)/2688 (vLLM 0.33
§2.8).
"""

from __future__ import annotations

from typing import Any, ClassVar

from moe_oracle.runtime.errors import BackendUnavailableError
from moe_oracle.runtime.vendor import has_attr

from ..._deep_gemm_layer import DeepGemmMegaMoE
from . import weights
from .config import VARIANT


class Sm100Nvfp4MegaMoE(DeepGemmMegaMoE):
    SPEC = VARIANT
    WEIGHTS = weights.LAYOUT
    KERNEL = "nvfp4_mega_moe"
    BUFFER_FNS = ("NVFP4SymmBuffer",)
    BUFFER_KWARGS: ClassVar[dict] = {}
    KERNEL_KWARGS: ClassVar[dict] = {"use_x_scales": True}

    def _get_buffer(self) -> Any:
        # sgl-deep-gemm has the kernel too (SymmBuffer with mma_type), but this layer calls the fork's front end
        if not has_attr(self.dg, "NVFP4SymmBuffer"):
            raise BackendUnavailableError(
                f"{self.key}: this deep_gemm has nvfp4_mega_moe but no NVFP4SymmBuffer, the front end moe-oracle's "
                "NVFP4 layer calls",
                fix="install vLLM's DeepGEMM fork (vendored in vLLM >= 0.33), or serve through SGLang, which calls "
                "sgl-deep-gemm's SymmBuffer itself",
            )
        return super()._get_buffer()

    def extra_kernel_kwargs(self) -> dict[str, Any]:
        ex = self.loaded().extras
        return {
            "l1_alpha": ex["l1_alpha"],
            "l2_alpha": ex["l2_alpha"],
            "l2_activation_scale": float(ex["l2_activation_scale"]),
        }
