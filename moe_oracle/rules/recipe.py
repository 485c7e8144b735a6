"""Numerics recipe of a backend variant, as torch-free data.

Where the fused kernel quantizes and rounds: the dispatched activations, the SwiGLU output that
feeds the second GEMM, the per-expert output and the combine. The emulation backend
(:mod:`moe_oracle.runtime.emulation`) reproduces a variant from its recipe alone, so the recipe
is declared next to the variant's other facts (its ``config.py``).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum


class ActQuant(str, Enum):
    """How a kernel quantizes an activation tensor before a GEMM."""

    BF16 = "bf16"  # no quantization, BF16 operands
    FP8_G128_FP32 = "fp8_g128_fp32"  # E4M3, one FP32 scale (amax/448) per 128 channels (SM90)
    FP8_G64_FP32 = "fp8_g64_fp32"  # E4M3, one FP32 scale per 64 channels (SM90 L2 input)
    MXFP8 = "mxfp8"  # E4M3, one UE8M0 scale per 32 (SM100, AITER)
    MXFP4 = "mxfp4"  # E2M1, one UE8M0 scale per 32 (AITER a4w4)
    NVFP4 = "nvfp4"  # E2M1, E4M3 scale per 16 and a per-token FP32 scale (SM100 NVFP4)


@dataclass(frozen=True)
class Recipe:
    """The quantization points of one fused MoE kernel.

    ``l1_input``: dispatched activations; ``l2_input``: SwiGLU output fed to the down GEMM;
    ``weight_before_l2``: the top-k weight multiplies the SwiGLU output (before the down GEMM)
    rather than the expert output; ``expert_output_bf16``: each expert's output is rounded to
    BF16 before the weighted sum; the combine accumulates in FP32 and writes BF16.
    ``l1_output_bf16``: the L1 accumulators (gate and up) are rounded to BF16 before the clamp and
    SwiGLU (DeepGEMM's SM100 epilogues do, ``__float22bfloat162_rn``; its SM90 ones do not).
    With ``weight_before_l2=False`` the emulation multiplies the FP32 expert output by the top-k
    weight before the BF16 rounding (AITER's stage-2 epilogue).
    """

    l1_input: ActQuant
    l2_input: ActQuant
    weight_before_l2: bool = True
    expert_output_bf16: bool = True
    l1_output_bf16: bool = False
