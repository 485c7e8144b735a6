"""``deep_gemm_mega_moe:sm100_fp8xfp4`` weights: MXFP4 experts for ``fp8_fp4_mega_moe`` (mma ``fp8xfp4``).

Kernel layout: see ``backends/cuda_sm100/_runtime.py`` (DeepGEMM ``transform_weights_for_mega_moe``
after ``transform_sf_into_required_layout(sf, n, k, (1, 32), E)``, as ``tests/test_mega_moe.py``
@ 54e2261 prepares them): values int8 ``[E, 2I, H/2]`` (L1 rows interleaved by 8), scales UE8M0
packed ``int32 [E, N, K/128]`` MN-major, L1 interleaved, both UTCCP-transposed.
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

from moe_oracle.runtime.interface import CheckpointExperts
from moe_oracle.runtime.layouts import (
    Chunk,
    Interleaved,
    KernelLayout,
    KernelWeights,
    deinterleave_gate_up,
)
from moe_oracle.runtime.quantize import MXFP4, canonical_mxfp4, scale_to_fp32


def canonical(experts: CheckpointExperts) -> CheckpointExperts:
    return canonical_mxfp4(experts, "sm100_fp8xfp4")


def allocate(e: int, hidden: int, inter: int, device: torch.device | str = "cpu") -> KernelWeights:
    return allocate_sm100(e, hidden, inter, value_dtype=torch.int8, values_per_elem=2, scale_group=32, device=device)


def chunk(experts: CheckpointExperts, start: int, stop: int) -> Chunk:
    w13_scale, w2_scale = experts.scales()
    return {
        "w13": Interleaved(experts.w13[start:stop]),
        "w2": experts.w2[start:stop].view(torch.int8),
        "w13_sf": sm100_l1_scale(w13_scale[start:stop]),
        "w2_sf": sm100_l2_scale(w2_scale[start:stop]),
    }


def from_kernel(kw: KernelWeights) -> CheckpointExperts:
    w13_sf, w2_sf = kw.scales()
    return CheckpointExperts(
        MXFP4,
        deinterleave_gate_up(kw.w13.view(torch.uint8)),
        kw.w2.view(torch.uint8).clone(),
        sm100_l1_scale_inverse(w13_sf),
        sm100_l2_scale_inverse(w2_sf),
    )


LAYOUT = KernelLayout(canonical, allocate, chunk, from_kernel)
transform_into, to_kernel = LAYOUT.transform_into, LAYOUT.to_kernel


def vendor_transform(experts: CheckpointExperts) -> KernelWeights:
    """Through DeepGEMM (``transform_sf_into_required_layout`` + ``transform_weights_for_mega_moe``; SM100 only)."""
    import deep_gemm

    experts = canonical(experts)
    e, n2, hp = experts.w13.shape
    h, ip = experts.w2.shape[1], experts.w2.shape[2]
    w13_scale, w2_scale = experts.scales()
    s1 = deep_gemm.transform_sf_into_required_layout(scale_to_fp32(w13_scale), n2, hp * 2, (1, 32), e)
    s2 = deep_gemm.transform_sf_into_required_layout(scale_to_fp32(w2_scale), h, ip * 2, (1, 32), e)
    (w1, s1), (w2, s2) = deep_gemm.transform_weights_for_mega_moe(
        (experts.w13.view(torch.int8), s1), (experts.w2.view(torch.int8), s2)
    )
    return KernelWeights(w1, w2, s1, s2)
