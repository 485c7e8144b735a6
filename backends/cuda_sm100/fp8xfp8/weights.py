"""``deep_gemm_mega_moe:sm100_fp8xfp8`` weights: MXFP8 experts (E4M3 + UE8M0 per 32), mma ``fp8xfp8``.

Accepts MXFP8 experts, or FP8 128x128 block experts with power-of-two (UE8M0) scales, which are
re-laid out exactly to 1x32 groups (each group takes its block's scale: vLLM 0.33 §2.4
``_pack_scale``). FP8 blocks with arbitrary fp32 scales cannot be re-laid out losslessly: requantize
them first (``moe_oracle.runtime.quantize``), as vLLM's Step5 path does.

Kernel layout as ``sm100_fp8xfp4`` (``backends/cuda_sm100/_runtime.py``) with E4M3 values
``[E, 2I, H]`` / ``[E, H, I]``.
"""

from __future__ import annotations

import torch
from moe_oracle_backends.cuda_sm100._runtime import (
    allocate_sm100,
    sm100_l1_scale,
    sm100_l1_scale_inverse,
    sm100_l2_scale,
    sm100_l2_scale_inverse,
)

from moe_oracle.model.types import WeightFormat
from moe_oracle.numerics import FP8_E4M3_DTYPE
from moe_oracle.runtime.interface import CheckpointExperts
from moe_oracle.runtime.layouts import (
    Chunk,
    Interleaved,
    KernelLayout,
    KernelWeights,
    deinterleave_gate_up,
)
from moe_oracle.runtime.quantize import MXFP8, fp8_block_to_mxfp8, scale_to_fp32, ue8m0_bytes


def canonical(experts: CheckpointExperts) -> CheckpointExperts:
    q = experts.quant
    if q.format is WeightFormat.FP8_BLOCK:
        try:
            experts = fp8_block_to_mxfp8(experts)
        except ValueError as exc:
            raise ValueError(
                f"sm100_fp8xfp8 needs power-of-two (ue8m0) block scales for an exact 1x32 re-layout: {exc}"
            ) from None
    elif q.format is not WeightFormat.MXFP8:
        raise ValueError(f"sm100_fp8xfp8 takes MXFP8 or fp8_block ue8m0 experts, got {q.label()}")
    w13_scale, w2_scale = experts.scales()
    return CheckpointExperts(
        MXFP8,
        experts.w13.view(FP8_E4M3_DTYPE),
        experts.w2.view(FP8_E4M3_DTYPE),
        ue8m0_bytes(w13_scale),
        ue8m0_bytes(w2_scale),
        first_expert=experts.first_expert,
    )


def allocate(e: int, hidden: int, inter: int, device: torch.device | str = "cpu") -> KernelWeights:
    return allocate_sm100(
        e, hidden, inter, value_dtype=FP8_E4M3_DTYPE, values_per_elem=1, scale_group=32, device=device
    )


def chunk(experts: CheckpointExperts, start: int, stop: int) -> Chunk:
    w13_scale, w2_scale = experts.scales()
    return {
        "w13": Interleaved(experts.w13[start:stop]),
        "w2": experts.w2[start:stop],
        "w13_sf": sm100_l1_scale(w13_scale[start:stop]),
        "w2_sf": sm100_l2_scale(w2_scale[start:stop]),
    }


def from_kernel(kw: KernelWeights) -> CheckpointExperts:
    w13_sf, w2_sf = kw.scales()
    return CheckpointExperts(
        MXFP8,
        deinterleave_gate_up(kw.w13),
        kw.w2.clone(),
        sm100_l1_scale_inverse(w13_sf),
        sm100_l2_scale_inverse(w2_sf),
    )


LAYOUT = KernelLayout(canonical, allocate, chunk, from_kernel)
transform_into, to_kernel = LAYOUT.transform_into, LAYOUT.to_kernel


def vendor_transform(experts: CheckpointExperts) -> KernelWeights:
    """Through DeepGEMM (SM100 only)."""
    import deep_gemm

    experts = canonical(experts)
    e, n2, h = experts.w13.shape
    i = experts.w2.shape[2]
    w13_scale, w2_scale = experts.scales()
    s1 = deep_gemm.transform_sf_into_required_layout(scale_to_fp32(w13_scale), n2, h, (1, 32), e)
    s2 = deep_gemm.transform_sf_into_required_layout(scale_to_fp32(w2_scale), h, i, (1, 32), e)
    (w1, s1), (w2, s2) = deep_gemm.transform_weights_for_mega_moe((experts.w13, s1), (experts.w2, s2))
    return KernelWeights(w1, w2, s1, s2)
