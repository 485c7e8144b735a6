"""Capability declaration of ``deep_gemm_mega_moe:sm100_fp8xfp4``.

DeepGEMM ``fp8_fp4_mega_moe`` (mma_type ``fp8xfp4``, recipe (1, 1, 32)): MXFP4 weights with
UE8M0 per-32 scales, MXFP8 activations (UE8M0 per 32, packed four per int32). The path vLLM
0.33 uses for DeepSeek V4 (``MEGA_MOE_MXFP4``).
"""

from __future__ import annotations

from moe_oracle_backends._deep_gemm import BACKEND, common_checks, sm100_activation
from moe_oracle_backends._deep_gemm_buffer import SIZING
from moe_oracle_backends._deep_gemm_builds import BUILDS
from moe_oracle_backends.cuda_sm100._common import arch_check, shape_checks

from moe_oracle.model.types import QuantSpec, ScaleFormat, WeightFormat
from moe_oracle.rules import VariantSpec
from moe_oracle.rules import checks as c
from moe_oracle.rules.recipe import ActQuant, Recipe
from moe_oracle.rules.variant import Staging


def _mxfp4(q: QuantSpec) -> bool:
    return q.format is WeightFormat.MXFP4 and q.block == (1, 32) and q.scale_format is ScaleFormat.UE8M0


VARIANT = VariantSpec(
    backend=BACKEND,
    variant="sm100_fp8xfp4",
    target="cuda_sm100",
    summary="Blackwell MXFP8 x MXFP4 mega-MoE",
    weights="mxfp4 g32 ue8m0",
    activations="MXFP8 (E4M3, UE8M0 per 32)",
    kernel="deep_gemm.fp8_fp4_mega_moe (mma_type fp8xfp4)",
    recipe=Recipe(ActQuant.MXFP8, ActQuant.MXFP8, l1_output_bf16=True),
    checks=(
        arch_check("DeepGEMM fp8_fp4_mega_moe"),
        c.weight_format(
            _mxfp4,
            wants="mxfp4 g32 ue8m0",
            remediation="Use an MXFP4-expert checkpoint; FP8 experts take sm100_fp8xfp8, NVFP4 sm100_nvfp4.",
            sources=(
                "https://github.com/vllm-project/vllm/blob/v0.33.0/vllm/model_executor/layers/fused_moe/deep_gemm_mega_moe.py"
                ": MEGA_MOE_MXFP4 row",
            ),
        ),
        *shape_checks(
            512,
            128,
            "stricter of SGLang check_mega_moe_shapes (512) and DeepGEMM/vLLM (128)",
            "DeepGEMM, vLLM and SGLang agree",
        ),
        *common_checks(),
        sm100_activation(("swiglu", "situ")),
        c.entry_points(
            "deep_gemm",
            builds=BUILDS,
            all_of=("fp8_fp4_mega_moe", "get_symm_buffer_for_mega_moe"),
            provided_by="DeepGEMM >= 2.4.2, sgl-deep-gemm, or vLLM >= 0.33 (vendored)",
            sources=("https://github.com/deepseek-ai/DeepGEMM",),
        ),
    ),
    sources=(
        "https://github.com/deepseek-ai/DeepGEMM (PR #316: EP8 V4-Flash 56.5 us at bs1)",
        "https://github.com/vllm-project/vllm/blob/v0.33.0/vllm/model_executor/layers/fused_moe/deep_gemm_mega_moe.py",
    ),
    sizing=SIZING,
    runtime="moe_oracle_backends.cuda_sm100.fp8xfp4.backend:Sm100Fp8Fp4MegaMoE",
    layout="moe_oracle_backends.cuda_sm100.fp8xfp4.weights",
    staging=Staging("ue8m0", triton_recipe="mxfp8"),
    priority=10,
)
