"""``deep_gemm_mega_moe:sm100_bf16`` weights: BF16 experts for ``bf16_mega_moe``.

``transform_weights_for_mega_moe(l1, l2)`` on plain tensors (DeepGEMM ``deep_gemm/mega/__init__.py``
@ 54e2261): L1 gate/up rows interleaved in groups of 8, L2 unchanged; no scales.
"""

from __future__ import annotations

import torch

from moe_oracle.model.types import WeightFormat
from moe_oracle.runtime.interface import CheckpointExperts
from moe_oracle.runtime.layouts import (
    Chunk,
    Interleaved,
    KernelLayout,
    KernelWeights,
    deinterleave_gate_up,
)
from moe_oracle.runtime.quantize import BF16


def canonical(experts: CheckpointExperts) -> CheckpointExperts:
    if experts.quant.format is not WeightFormat.BF16:
        raise ValueError(f"sm100_bf16 takes BF16 experts, got {experts.quant.label()}")
    if experts.w13.dtype != torch.bfloat16 or experts.w2.dtype != torch.bfloat16:
        raise ValueError(f"sm100_bf16 takes bfloat16 tensors, got {experts.w13.dtype} / {experts.w2.dtype}")
    return CheckpointExperts(BF16, experts.w13, experts.w2, first_expert=experts.first_expert)


def allocate(e: int, hidden: int, inter: int, device: torch.device | str = "cpu") -> KernelWeights:
    return KernelWeights(
        torch.empty((e, 2 * inter, hidden), dtype=torch.bfloat16, device=device),
        torch.empty((e, hidden, inter), dtype=torch.bfloat16, device=device),
    )


def chunk(experts: CheckpointExperts, start: int, stop: int) -> Chunk:
    return {"w13": Interleaved(experts.w13[start:stop]), "w2": experts.w2[start:stop]}


def from_kernel(kw: KernelWeights) -> CheckpointExperts:
    return CheckpointExperts(BF16, deinterleave_gate_up(kw.w13), kw.w2.clone())


LAYOUT = KernelLayout(canonical, allocate, chunk, from_kernel)
transform_into, to_kernel = LAYOUT.transform_into, LAYOUT.to_kernel


def vendor_transform(experts: CheckpointExperts) -> KernelWeights:
    import deep_gemm

    experts = canonical(experts)
    w1, w2 = deep_gemm.transform_weights_for_mega_moe(experts.w13, experts.w2)
    return KernelWeights(w1, w2)
