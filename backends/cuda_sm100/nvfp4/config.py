"""Capability declaration of ``deep_gemm_mega_moe:sm100_nvfp4``.

DeepGEMM ``nvfp4_mega_moe`` with ``NVFP4SymmBuffer`` (vLLM's DeepGEMM fork, vendored in vLLM
0.33): NVFP4 weights (E2M1, E4M3 per 16, per-expert FP32 global scale), NVFP4 activations with
per-token FP32 scales.
"""

from __future__ import annotations

from moe_oracle_backends._deep_gemm import BACKEND, common_checks, sm100_activation
from moe_oracle_backends._deep_gemm_buffer import SIZING
from moe_oracle_backends._deep_gemm_builds import BUILDS
from moe_oracle_backends.cuda_sm100._common import arch_check, shape_checks

from moe_oracle.model.types import QuantSpec, ScaleFormat, WeightFormat
from moe_oracle.rules import Conversion, Engine, ReasonCode, VariantSpec
from moe_oracle.rules import checks as c
from moe_oracle.rules.conversion import FP8_TO_NVFP4_TWIN
from moe_oracle.rules.recipe import ActQuant, Recipe
from moe_oracle.rules.variant import Staging


def _nvfp4(q: QuantSpec) -> bool:
    return q.format is WeightFormat.NVFP4 and q.block == (1, 16)


#: FP8 block checkpoints (DeepSeek-V3/R1, Kimi-K2, GLM-5-FP8: FP32 block scales) reach the NVFP4 kernel only after
#: a requantization to 4 bits: lossy, chosen only with --allow-lossy-conversion.
CONVERSIONS = (
    Conversion(
        source=WeightFormat.FP8_BLOCK,
        target=QuantSpec(
            format=WeightFormat.NVFP4,
            block=(1, 16),
            scale_format=ScaleFormat.E4M3,
            global_scale=True,
            source="load-time conversion",
        ),
        lossless=False,
        condition="FP8 E4M3 values requantized to NVFP4 (E2M1, E4M3 per 16, per-expert FP32 global scale): "
        f"4-bit weights; {FP8_TO_NVFP4_TWIN}",
        runtime="moe_oracle.runtime.format_conversion:fp8_block_to_nvfp4",
        sources=("SGLang 0.5.23 online NVFP4 (srt/layers/quantization/nvfp4_online.py)",),
    ),
)

VARIANT = VariantSpec(
    backend=BACKEND,
    variant="sm100_nvfp4",
    target="cuda_sm100",
    summary="Blackwell NVFP4 x NVFP4 mega-MoE",
    weights="nvfp4 g16 e4m3 + global scale",
    activations="NVFP4 (E4M3 per 16, per-token FP32 scale)",
    kernel="deep_gemm.nvfp4_mega_moe",
    recipe=Recipe(ActQuant.NVFP4, ActQuant.NVFP4, l1_output_bf16=True),
    checks=(
        arch_check("DeepGEMM nvfp4_mega_moe"),
        c.weight_format(
            _nvfp4,
            wants="nvfp4 g16 e4m3",
            remediation="Use an NVFP4 (ModelOpt) checkpoint, or the variant matching the expert format; FP8 block "
            "experts reach it after a lossy requantization: --allow-lossy-conversion (with --engine sglang the plan "
            "adds --quantization modelopt_fp4).",
            sources=(
                "https://github.com/vllm-project/vllm/blob/v0.33.0/vllm/model_executor/layers/fused_moe/deep_gemm_mega_moe.py"
                ": MEGA_MOE_NVFP4 row",
            ),
        ),
        *shape_checks(
            256,
            256,
            "SGLang check_mega_moe_shapes: 16 x scale group 16 (stricter than DeepGEMM's 128)",
            "SGLang check_mega_moe_shapes: 16 x scale group 16 (stricter than DeepGEMM's 128)",
        ),
        *common_checks(),
        sm100_activation(),
        c.entry_points(
            "deep_gemm",
            builds=BUILDS,
            all_of=("nvfp4_mega_moe",),
            any_of=("NVFP4SymmBuffer", "SymmBuffer"),
            provided_by="vLLM's DeepGEMM fork (vendored in vLLM >= 0.33: NVFP4SymmBuffer) or sgl-deep-gemm "
            ">= 0.2.3.post2 (SymmBuffer with mma_type='nvfp4xnvfp4')",
            sources=(
                "https://github.com/vllm-project/vllm/tree/v0.33.0/vllm/third_party/deep_gemm",
                "sgl-deep-gemm 0.2.3.post2 deep_gemm/mega/__init__.py:43-56, 296-330 (SymmBuffer, nvfp4_mega_moe)",
            ),
        ),
        c.scenario_predicate(
            ReasonCode.KERNEL_MISSING,
            lambda sc: sc.engine is not Engine.NONE or sc.software.has("deep_gemm", "NVFP4SymmBuffer"),
            rule="moe-oracle's own NVFP4 layer (--engine none) allocates NVFP4SymmBuffer",
            message=lambda sc: (
                f"software profile '{sc.software.name}' has no NVFP4SymmBuffer: moe-oracle's own NVFP4 layer calls "
                "the vLLM DeepGEMM fork's front end (an engine calls the kernel through its own)"
            ),
            remediation="Install vLLM's DeepGEMM fork (vendored in vLLM >= 0.33), or plan for an engine.",
            sources=("https://github.com/vllm-project/vllm/tree/v0.33.0/vllm/third_party/deep_gemm",),
        ),
    ),
    sources=(
        "https://github.com/vllm-project/vllm/blob/v0.33.0/vllm/model_executor/layers/fused_moe/deep_gemm_mega_moe.py",
    ),
    sizing=SIZING,
    runtime="moe_oracle_backends.cuda_sm100.nvfp4.backend:Sm100Nvfp4MegaMoE",
    layout="moe_oracle_backends.cuda_sm100.nvfp4.weights",
    staging=Staging("e4m3"),
    priority=30,
    conversions=CONVERSIONS,
)
