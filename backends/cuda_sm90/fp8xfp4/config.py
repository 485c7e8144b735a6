"""Capability declaration of ``deep_gemm_mega_moe:sm90_fp8xfp4``.

DeepGEMM ``fp8_fp4_mega_moe`` dispatching to ``_C.fp8_fp4_mega_moe_sm90`` (recipe (1, 1, 32)):
MXFP4 (E2M1 + UE8M0 per 32) weights, FP8 activations with FP32 per-128 scales. Only in
DeepGEMM PR #323 / #411 builds and personal forks; in no release (https://github.com/deepseek-ai/DeepGEMM/pull/323).
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
from moe_oracle.rules import ReasonCode, VariantSpec
from moe_oracle.rules import checks as c
from moe_oracle.rules.recipe import ActQuant, Recipe
from moe_oracle.rules.variant import Validation
from moe_oracle.spec.device import Arch

_HOST = "https://github.com/deepseek-ai/DeepGEMM/pull/323: sm90_mega.hpp @ DeepGEMM PR #323 (8ddf7f9)"
_SGL = "https://github.com/sgl-project/sglang/tree/v0.5.23: SGLang check_mega_moe_shapes (16 x scale group 32 = 512)"


def _mxfp4(q: QuantSpec) -> bool:
    return q.format is WeightFormat.MXFP4 and q.block == (1, 32) and q.scale_format is ScaleFormat.UE8M0


VARIANT = VariantSpec(
    backend=BACKEND,
    variant="sm90_fp8xfp4",
    target="cuda_sm90",
    summary="Hopper FP8 x MXFP4 mega-MoE",
    weights="mxfp4 g32 ue8m0",
    activations="FP8 E4M3, FP32 scale per 128",
    kernel="deep_gemm.fp8_fp4_mega_moe (_C.fp8_fp4_mega_moe_sm90)",
    recipe=Recipe(ActQuant.FP8_G128_FP32, ActQuant.FP8_G64_FP32),
    checks=(
        c.arch_in(
            (Arch.SM90,),
            kernel="DeepGEMM fp8_fp4_mega_moe_sm90",
            remediation="On SM100 use --moe-backend deep_gemm_mega_moe:sm100_fp8xfp4.",
            sources=(_HOST,),
        ),
        c.weight_format(
            _mxfp4,
            wants="mxfp4 g32 ue8m0",
            remediation="Use an MXFP4-expert checkpoint, or sm90_fp8xfp8 for FP8 block-128 experts.",
            sources=(_HOST,),
        ),
        c.multiple_of(
            "hidden_size",
            512,
            why="stricter of SGLang check_mega_moe_shapes (512) and DeepGEMM's host check (128)",
            remediation="No fused SM90 FP4 kernel for this hidden size; leave --moe-backend unset (non-fused MoE).",
            sources=(_HOST, _SGL),
        ),
        c.multiple_of(
            "moe_intermediate_size",
            128,
            why="DeepGEMM host check and SGLang check_mega_moe_shapes agree",
            remediation="No fused SM90 FP4 kernel for this intermediate size; leave --moe-backend "
            "unset (non-fused MoE).",
            sources=(_HOST, _SGL),
        ),
        c.expert_width_at_most(
            4096,
            why="one bit per 64-wide L1 N-block in a uint64 mask: I/64 <= 64",
            remediation="No fused SM90 FP4 kernel for experts wider than 4096; leave --moe-backend "
            "unset (non-fused MoE).",
            sources=(_HOST,),
        ),
        *common_checks(),
        sm90_activation(),
        c.entry_points(
            "deep_gemm",
            builds=BUILDS,
            all_of=("fp8_fp4_mega_moe", "_C.fp8_fp4_mega_moe_sm90"),
            any_of=("get_symm_buffer_for_mega_moe", "get_symm_buffer_for_sm90_mega_moe"),
            provided_by="a DeepGEMM PR #323 build (no release has the SM90 FP8xFP4 kernel; PR #411 names its own "
            "kernel fp8_mxfp4_mega_moe, which moe-oracle does not call)",
            sources=("https://github.com/deepseek-ai/DeepGEMM/pull/323, https://github.com/deepseek-ai/DeepGEMM",),
        ),
        c.env_unset(
            ReasonCode.QUANT_UNSUPPORTED,
            ("DG_USE_FP4_ACTS", "DG_USE_FP8_COMBINE"),
            why="the SM90 kernel asserts both are 0",
            remediation="Unset DG_USE_FP4_ACTS and DG_USE_FP8_COMBINE.",
            sources=(_HOST,),
        ),
    ),
    sources=(_HOST, "docs/performance.md (measured at EP=1)"),
    sizing=SIZING,
    validation=Validation.RUNTIME_ON_HARDWARE,
    validated_how=SM90_VALIDATED,
    validated_builds=SM90_VALIDATED_BUILDS,
    runtime="moe_oracle_backends.cuda_sm90.fp8xfp4.backend:Sm90Fp8Fp4MegaMoE",
    layout="moe_oracle_backends.cuda_sm90.fp8xfp4.weights",
    staging=SM90_STAGING,
    priority=20,
)
