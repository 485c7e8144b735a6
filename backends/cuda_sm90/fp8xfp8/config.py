"""Capability declaration of ``deep_gemm_mega_moe:sm90_fp8xfp8``.

DeepGEMM ``fp8_mega_moe`` (recipe (128, 128, 128)): FP8 E4M3 weights with FP32 128x128 block
scales, activations FP8 with one FP32 scale per 128 channels. Shipped in sgl-deep-gemm >= 0.2.0
and upstream DeepGEMM ``nv_dev`` (PR #383); also in the PR #323 tree that docs/performance.md built.
"""

from __future__ import annotations

from moe_oracle_backends._deep_gemm import (
    BACKEND,
    SM90_STAGING,
    SM90_VALIDATED,
    SM90_VALIDATED_BUILDS,
    common_checks,
    sm90_activation,
)
from moe_oracle_backends._deep_gemm_buffer import SIZING
from moe_oracle_backends._deep_gemm_builds import BUILDS

from moe_oracle.model.types import QuantSpec, ScaleFormat, WeightFormat
from moe_oracle.rules import Conversion, VariantSpec
from moe_oracle.rules import checks as c
from moe_oracle.rules.recipe import ActQuant, Recipe
from moe_oracle.rules.variant import Validation
from moe_oracle.spec.device import Arch

#: The SM90 FP8 host checks on DeepGEMM nv_dev (its head on 2026-09-08).
_HOST = "https://github.com/deepseek-ai/DeepGEMM/blob/572557e7ae9ad5331b81a1c250f141fba2c57962/csrc/apis/sm90_mega.hpp"


def _fp8_block_128(q: QuantSpec) -> bool:
    return (
        q.format is WeightFormat.FP8_BLOCK
        and q.block == (128, 128)
        and q.scale_format in (ScaleFormat.FP32, ScaleFormat.UE8M0)
    )


_FP8_POW2 = QuantSpec(
    format=WeightFormat.FP8_BLOCK, block=(128, 128), scale_format=ScaleFormat.UE8M0, source="load-time conversion"
)

#: MXFP4 -> FP8 block-128 is exact while a block's 32-groups span at most 14 binades (docs/performance.md
#: motivates it: the FP8 kernel is faster on SM90); BF16 -> FP8 quantizes and changes numerics.
CONVERSIONS = (
    Conversion(
        source=WeightFormat.MXFP4,
        target=_FP8_POW2,
        lossless=True,
        condition="every 128x128 block's MXFP4 group exponents span <= 14 (checked per block at load)",
        runtime="moe_oracle.runtime.format_conversion:mxfp4_to_fp8_block",
        sources=("issue: load-time format conversion", "docs/performance.md (FP8 1.1-1.3x faster than FP8xMXFP4)"),
    ),
    Conversion(
        source=WeightFormat.BF16,
        target=QuantSpec(
            format=WeightFormat.FP8_BLOCK,
            block=(128, 128),
            scale_format=ScaleFormat.FP32,
            source="load-time conversion",
        ),
        lossless=False,
        condition="BF16 -> FP8 E4M3 quantization (per 128x128 block, amax/448 scales)",
        runtime="moe_oracle.runtime.format_conversion:bf16_to_fp8_block",
        sources=("issue: load-time format conversion",),
    ),
)

VARIANT = VariantSpec(
    backend=BACKEND,
    variant="sm90_fp8xfp8",
    target="cuda_sm90",
    summary="Hopper FP8 x FP8 block-128 mega-MoE",
    weights="fp8_block 128x128 (fp32 or ue8m0 scales)",
    activations="FP8 E4M3, FP32 scale per 128",
    kernel="deep_gemm.fp8_mega_moe",
    recipe=Recipe(ActQuant.FP8_G128_FP32, ActQuant.FP8_G64_FP32),
    checks=(
        c.arch_in(
            (Arch.SM90,),
            kernel="DeepGEMM fp8_mega_moe",
            remediation="On SM100 use deep_gemm_mega_moe:sm100_fp8xfp8; elsewhere leave "
            "--moe-backend unset (non-fused MoE).",
            sources=(_HOST,),
        ),
        c.weight_format(
            _fp8_block_128,
            wants="fp8_block 128x128 with fp32 or ue8m0 scales",
            remediation="Use an FP8 block-128 checkpoint (e.g. *-FP8), or an MXFP4 one with sm90_fp8xfp4.",
            sources=(
                _HOST,
                "https://github.com/sgl-project/sglang/tree/v0.5.23: SGLang SM90 branch runs FP8 block-128 experts",
            ),
        ),
        c.multiple_of(
            "hidden_size",
            256,
            why="combine vectorization in sm90_mega.hpp",
            remediation="No fused SM90 FP8 kernel for this hidden size; leave --moe-backend unset (non-fused MoE).",
            sources=(_HOST,),
        ),
        c.multiple_of(
            "moe_intermediate_size",
            128,
            why="sm90_mega.hpp host check",
            remediation="No fused SM90 FP8 kernel for this intermediate size; leave --moe-backend "
            "unset (non-fused MoE).",
            sources=(_HOST,),
        ),
        *common_checks(),
        sm90_activation(),
        c.entry_points(
            "deep_gemm",
            builds=BUILDS,
            all_of=("fp8_mega_moe",),
            any_of=("get_symm_buffer_for_sm90_mega_moe", "get_symm_buffer_for_mega_moe"),
            provided_by="sgl-deep-gemm >= 0.2.0, DeepGEMM nv_dev, or a DeepGEMM PR #323 build",
            sources=("https://github.com/deepseek-ai/DeepGEMM/pull/323, https://github.com/deepseek-ai/DeepGEMM",),
        ),
    ),
    sources=(_HOST, "docs/performance.md (measured at EP=1)"),
    sizing=SIZING,
    validation=Validation.RUNTIME_ON_HARDWARE,
    validated_how=SM90_VALIDATED,
    validated_builds=SM90_VALIDATED_BUILDS,
    runtime="moe_oracle_backends.cuda_sm90.fp8xfp8.backend:Sm90Fp8MegaMoE",
    layout="moe_oracle_backends.cuda_sm90.fp8xfp8.weights",
    staging=SM90_STAGING,
    priority=10,
    conversions=CONVERSIONS,
)
