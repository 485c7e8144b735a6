"""``deep_gemm_mega_moe:sm90_fp8xfp8`` weights: FP8 E4M3 with FP32 128x128 block scales.

Kernel layout (``transform_weights_for_mega_moe_sm90`` in ``sgl_deep_gemm/__init__.py`` @ DeepGEMM
PR #323 head 8ddf7f96; the kernel ``sm90_fp8_mega_moe.cuh`` reads the L1 scale of gate block
``n/2`` and up block ``I/128 + n/2`` from the un-interleaved ``[E, 2I/128, H/128]`` array):

* ``l1 = (interleave_gate_up(w13), w13_scale)``: values ``[E, 2I, H]`` e4m3 with gate/up rows
  interleaved in groups of 8; scales ``[E, 2I/128, H/128]`` fp32 unchanged (K-major, contiguous);
* ``l2 = (w2, w2_scale)`` unchanged (``[E, H, I]``, ``[E, H/128, I/128]``).

UE8M0 block scales (DeepSeek-style ``scale_fmt: ue8m0``) are decoded to fp32 exactly.
"""

from __future__ import annotations

import torch

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
from moe_oracle.runtime.quantize import FP8_BLOCK_FP32, scale_to_fp32

BLOCK = 128


def canonical(experts: CheckpointExperts) -> CheckpointExperts:
    q = experts.quant
    if q.format is not WeightFormat.FP8_BLOCK or q.block != (BLOCK, BLOCK):
        raise ValueError(f"sm90_fp8xfp8 takes fp8_block 128x128 experts, got {q.label()}")
    w13_scale, w2_scale = experts.scales()
    return CheckpointExperts(
        FP8_BLOCK_FP32,
        experts.w13.view(FP8_E4M3_DTYPE),
        experts.w2.view(FP8_E4M3_DTYPE),
        scale_to_fp32(w13_scale),
        scale_to_fp32(w2_scale),
        first_expert=experts.first_expert,
    )


def allocate(e: int, hidden: int, inter: int, device: torch.device | str = "cpu") -> KernelWeights:
    return KernelWeights(
        torch.empty((e, 2 * inter, hidden), dtype=FP8_E4M3_DTYPE, device=device),
        torch.empty((e, hidden, inter), dtype=FP8_E4M3_DTYPE, device=device),
        torch.empty((e, 2 * inter // BLOCK, hidden // BLOCK), dtype=torch.float32, device=device),
        torch.empty((e, hidden // BLOCK, inter // BLOCK), dtype=torch.float32, device=device),
    )


def chunk(experts: CheckpointExperts, start: int, stop: int) -> Chunk:
    w13_scale, w2_scale = experts.scales()
    return {
        "w13": Interleaved(experts.w13[start:stop]),
        "w2": experts.w2[start:stop],
        "w13_sf": w13_scale[start:stop],
        "w2_sf": w2_scale[start:stop],
    }


def from_kernel(kw: KernelWeights) -> CheckpointExperts:
    w13_sf, w2_sf = kw.scales()
    return CheckpointExperts(FP8_BLOCK_FP32, deinterleave_gate_up(kw.w13), kw.w2.clone(), w13_sf.clone(), w2_sf.clone())


LAYOUT = KernelLayout(canonical, allocate, chunk, from_kernel)
transform_into, to_kernel = LAYOUT.transform_into, LAYOUT.to_kernel


def vendor_transform(experts: CheckpointExperts) -> KernelWeights:
    """Through ``deep_gemm.transform_weights_for_mega_moe_sm90`` (ImportError without it)."""
    import deep_gemm

    experts = canonical(experts)
    w13_scale, w2_scale = experts.scales()
    (w1, s1), (w2, s2) = deep_gemm.transform_weights_for_mega_moe_sm90((experts.w13, w13_scale), (experts.w2, w2_scale))
    return KernelWeights(w1, w2, s1, s2)
