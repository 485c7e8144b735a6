"""Capability declaration of ``deep_gemm_mega_moe:sm100_bf16``: DeepGEMM ``bf16_mega_moe``."""

from __future__ import annotations

from moe_oracle_backends._deep_gemm import BACKEND, common_checks, sm100_activation
from moe_oracle_backends._deep_gemm_buffer import SIZING
from moe_oracle_backends._deep_gemm_builds import BUILDS
from moe_oracle_backends.cuda_sm100._common import arch_check, shape_checks

from moe_oracle.model.types import QuantSpec, WeightFormat
from moe_oracle.rules import VariantSpec
from moe_oracle.rules import checks as c
from moe_oracle.rules.recipe import ActQuant, Recipe
from moe_oracle.rules.variant import Staging


def _bf16(q: QuantSpec) -> bool:
    return q.format is WeightFormat.BF16


VARIANT = VariantSpec(
    backend=BACKEND,
    variant="sm100_bf16",
    target="cuda_sm100",
    summary="Blackwell BF16 mega-MoE",
    weights="bf16",
    activations="BF16",
    kernel="deep_gemm.bf16_mega_moe",
    recipe=Recipe(ActQuant.BF16, ActQuant.BF16, l1_output_bf16=True),
    checks=(
        arch_check("DeepGEMM bf16_mega_moe"),
        c.weight_format(
            _bf16,
            wants="bf16",
            remediation="Quantized experts take the matching sm100 variant (or leave --moe-backend unset).",
            sources=(
                "https://github.com/vllm-project/vllm/blob/v0.33.0/vllm/model_executor/layers/fused_moe/deep_gemm_mega_moe.py"
                ": MEGA_MOE_BF16 row",
            ),
        ),
        *shape_checks(128, 128, "DeepGEMM and vLLM host checks", "DeepGEMM and vLLM host checks"),
        *common_checks(),
        sm100_activation(),
        c.entry_points(
            "deep_gemm",
            builds=BUILDS,
            all_of=("bf16_mega_moe", "get_symm_buffer_for_mega_moe"),
            provided_by="DeepGEMM >= 2.4.2 or vLLM >= 0.33 (vendored)",
            sources=("https://github.com/deepseek-ai/DeepGEMM",),
        ),
    ),
    sources=(
        "https://github.com/deepseek-ai/DeepGEMM",
        "https://github.com/vllm-project/vllm/tree/v0.33.0/vllm/third_party/deep_gemm",
    ),
    sizing=SIZING,
    runtime="moe_oracle_backends.cuda_sm100.bf16.backend:Sm100Bf16MegaMoE",
    layout="moe_oracle_backends.cuda_sm100.bf16.weights",
    staging=Staging("none"),
    priority=40,
)
