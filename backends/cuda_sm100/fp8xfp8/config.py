"""Capability declaration of ``deep_gemm_mega_moe:sm100_fp8xfp8``.

DeepGEMM ``fp8_fp4_mega_moe`` with mma_type ``fp8xfp8`` (vLLM's ``MEGA_MOE_MXFP8`` row): MXFP8
weights (E4M3, UE8M0 per 32), MXFP8 activations. FP8 block checkpoints with UE8M0 block scales
re-lay to 1x32 groups exactly (each block scale repeats over its groups, as vLLM's
``_pack_scale`` does); FP32 block scales would need a lossy requantization.
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


def _mxfp8_compatible(q: QuantSpec) -> bool:
    if q.scale_format is not ScaleFormat.UE8M0 or q.block is None:
        return False
    if q.format is WeightFormat.MXFP8:
        return q.block == (1, 32)
    return q.format is WeightFormat.FP8_BLOCK and q.block[1] % 32 == 0


def _fix_for(q: QuantSpec) -> str | None:
    """The fix for experts this kernel does not consume: the FP32-scaled FP8 text (the declared remediation) only
    for FP8 blocks; for any other format, the formats it consumes and that the other variants are judged in the
    same list (MXFP4 experts: sm100_fp8xfp4 consumes them as stored)."""
    if q.format is WeightFormat.FP8_BLOCK:
        return None
    return (
        f"this variant consumes MXFP8 or UE8M0-scaled FP8 block experts, not {q.format.value}: serve such a "
        "checkpoint, or use the variant built for this format (each is judged in the same list)"
    )


VARIANT = VariantSpec(
    backend=BACKEND,
    variant="sm100_fp8xfp8",
    target="cuda_sm100",
    summary="Blackwell MXFP8 x MXFP8 mega-MoE",
    weights="mxfp8 g32 ue8m0, or fp8_block with ue8m0 scales (exact re-layout)",
    activations="MXFP8 (E4M3, UE8M0 per 32)",
    kernel="deep_gemm.fp8_fp4_mega_moe (mma_type fp8xfp8)",
    recipe=Recipe(ActQuant.MXFP8, ActQuant.MXFP8, l1_output_bf16=True),
    checks=(
        arch_check("DeepGEMM fp8_fp4_mega_moe (fp8xfp8)"),
        c.weight_format(
            _mxfp8_compatible,
            wants="mxfp8 g32 ue8m0 or fp8_block with ue8m0 scales",
            remediation="FP8 blocks with FP32 scales have no exact UE8M0 re-layout and moe-oracle declares no "
            "requantization to it: serve a UE8M0-scaled or MXFP8 checkpoint, or pass --allow-lossy-conversion for "
            "the NVFP4 route (sm100_nvfp4 after requantizing the experts; with --engine sglang, --quantization "
            "modelopt_fp4), or use --engine sglang --device h200 (sm90_fp8xfp8 runs the checkpoint as stored).",
            remediation_for=_fix_for,
            sources=(
                "https://github.com/vllm-project/vllm/blob/v0.33.0/vllm/model_executor/layers/fused_moe/deep_gemm_mega_moe.py"
                ": MEGA_MOE_MXFP8 row; _pack_scale",
                "https://github.com/vllm-project/vllm/tree/v0.33.0/vllm/models/step5 (Step5)",
            ),
        ),
        *shape_checks(
            512,
            512,
            "SGLang check_mega_moe_shapes: 16 x scale group 32 (stricter than DeepGEMM's 128)",
            "SGLang check_mega_moe_shapes: 16 x scale group 32 (stricter than DeepGEMM's 128)",
        ),
        *common_checks(),
        sm100_activation(("swiglu", "situ")),
        c.entry_points(
            "deep_gemm",
            builds=BUILDS,
            all_of=("fp8_fp4_mega_moe", "get_symm_buffer_for_mega_moe"),
            provided_by="DeepGEMM with mma_type fp8xfp8 (vLLM's fork, vLLM >= 0.33 vendored)",
            sources=("https://github.com/deepseek-ai/DeepGEMM forks",),
        ),
    ),
    sources=(
        "https://github.com/vllm-project/vllm/blob/v0.33.0/vllm/model_executor/layers/fused_moe/deep_gemm_mega_moe.py",
    ),
    sizing=SIZING,
    runtime="moe_oracle_backends.cuda_sm100.fp8xfp8.backend:Sm100Fp8Fp8MegaMoE",
    layout="moe_oracle_backends.cuda_sm100.fp8xfp8.weights",
    staging=Staging("ue8m0", triton_recipe="mxfp8"),
    priority=20,
)
