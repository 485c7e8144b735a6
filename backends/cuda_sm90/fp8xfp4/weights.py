"""``deep_gemm_mega_moe:sm90_fp8xfp4`` weights: MXFP4 (E2M1 + UE8M0 per 32).

Kernel layout (``transform_weights_for_mega_moe_sm90_fp4`` in ``sgl_deep_gemm/__init__.py`` @
DeepGEMM PR #323 head 8ddf7f96):

* values: packed E2M1 bytes as int8, ``[E, 2I, H/2]`` with gate/up rows interleaved in groups of
  8 (L1), ``[E, H, I/2]`` unchanged (L2);
* scales: UE8M0 exponent bytes (``fp32_bits >> 23 & 0xff``) packed four per int32 along K,
  K-major contiguous ``[E, N, K/128]`` (NOT the SM100 MN-major/UTCCP layout); L1 scale rows
  interleaved like the values before packing.
"""

from __future__ import annotations

import torch
from moe_oracle_backends.cuda_sm90._runtime import pack_ue8m0_kmajor, unpack_ue8m0_kmajor

from moe_oracle.runtime.interface import CheckpointExperts
from moe_oracle.runtime.layouts import (
    Chunk,
    Interleaved,
    KernelLayout,
    KernelWeights,
    deinterleave_gate_up,
    interleave_gate_up,
)
from moe_oracle.runtime.quantize import MXFP4, canonical_mxfp4, scale_to_fp32


def canonical(experts: CheckpointExperts) -> CheckpointExperts:
    return canonical_mxfp4(experts, "sm90_fp8xfp4")


def allocate(e: int, hidden: int, inter: int, device: torch.device | str = "cpu") -> KernelWeights:
    return KernelWeights(
        torch.empty((e, 2 * inter, hidden // 2), dtype=torch.int8, device=device),
        torch.empty((e, hidden, inter // 2), dtype=torch.int8, device=device),
        torch.empty((e, 2 * inter, hidden // 128), dtype=torch.int32, device=device),
        torch.empty((e, hidden, inter // 128), dtype=torch.int32, device=device),
    )


def chunk(experts: CheckpointExperts, start: int, stop: int) -> Chunk:
    w13_scale, w2_scale = experts.scales()
    return {
        "w13": Interleaved(experts.w13[start:stop]),
        "w2": experts.w2[start:stop].view(torch.int8),
        "w13_sf": pack_ue8m0_kmajor(interleave_gate_up(w13_scale[start:stop])),
        "w2_sf": pack_ue8m0_kmajor(w2_scale[start:stop]),
    }


def from_kernel(kw: KernelWeights) -> CheckpointExperts:
    w13_sf, w2_sf = kw.scales()
    return CheckpointExperts(
        MXFP4,
        deinterleave_gate_up(kw.w13.view(torch.uint8)),
        kw.w2.view(torch.uint8).clone(),
        deinterleave_gate_up(unpack_ue8m0_kmajor(w13_sf)),
        unpack_ue8m0_kmajor(w2_sf).clone(),
    )


LAYOUT = KernelLayout(canonical, allocate, chunk, from_kernel)
transform_into, to_kernel = LAYOUT.transform_into, LAYOUT.to_kernel


def vendor_transform(experts: CheckpointExperts) -> KernelWeights:
    """Through ``deep_gemm.transform_weights_for_mega_moe_sm90_fp4`` (fp32 scales in, as its tests pass)."""
    import deep_gemm

    experts = canonical(experts)
    w13_scale, w2_scale = experts.scales()
    (w1, s1), (w2, s2) = deep_gemm.transform_weights_for_mega_moe_sm90_fp4(
        (experts.w13.view(torch.int8), scale_to_fp32(w13_scale)),
        (experts.w2.view(torch.int8), scale_to_fp32(w2_scale)),
    )
    return KernelWeights(w1, w2, s1, s2)
