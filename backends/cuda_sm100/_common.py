"""Rules shared by the SM100 variants."""

from __future__ import annotations

from moe_oracle.rules import Check
from moe_oracle.rules import checks as c
from moe_oracle.spec.device import Arch

ARCHS = (Arch.SM100, Arch.SM103)
VLLM_GATE = (
    "https://github.com/vllm-project/vllm/blob/v0.33.0/vllm/model_executor/layers/fused_moe/deep_gemm_mega_moe.py: "
    "check_deep_gemm_mega_moe_supported (SM 10.x family, H and I % 128)"
)
SGL_SHAPES = (
    "https://github.com/sgl-project/sglang/tree/v0.5.23: SGLang check_mega_moe_shapes (H % 16*group, I % 128 or "
    "16*group)"
)


def arch_check(kernel: str) -> Check:
    return c.arch_in(
        ARCHS,
        kernel=kernel,
        remediation="On SM90 use --moe-backend deep_gemm_mega_moe:sm90_fp8xfp8 (or :sm90_fp8xfp4); on gfx950 "
        "--moe-backend aiter_mega_moe.",
        sources=(VLLM_GATE, "https://github.com/deepseek-ai/DeepGEMM: arch_major == 10 only"),
    )


def shape_checks(hidden: int, inter: int, why_h: str, why_i: str) -> tuple[Check, ...]:
    return (
        c.multiple_of(
            "hidden_size",
            hidden,
            why=why_h,
            remediation="No fused SM100 kernel for this hidden size; leave --moe-backend unset (non-fused MoE).",
            sources=(VLLM_GATE, SGL_SHAPES),
        ),
        c.multiple_of(
            "moe_intermediate_size",
            inter,
            why=why_i,
            remediation="No fused SM100 kernel for this intermediate size; leave --moe-backend unset (non-fused MoE).",
            sources=(VLLM_GATE, SGL_SHAPES),
        ),
    )
