"""Shared SM100 (DeepGEMM ``fp8_fp4_mega_moe`` / ``nvfp4_mega_moe`` / ``bf16_mega_moe``) layout helpers.

Kernel layout (deepseek-ai/DeepGEMM ``deep_gemm/mega/__init__.py::transform_weights_for_mega_moe``
@ 54e2261, vLLM 0.33 ``deep_gemm_mega_moe.py`` §2.4):

* L1 values: gate/up rows interleaved in groups of 8; L2 values unchanged.
* Scales: one byte per group (UE8M0 per 32 for MX formats, E4M3 per 16 for NVFP4) packed four per
  int32 along K (group ``4j`` in the low byte) -> ``[E, N, K / (4 g)]``, stored MN-major
  (strides ``(N*K', 1, N)``, ``transform_sf_into_required_layout``), L1 scale rows interleaved like
  the values, then both L1 and L2 scales UTCCP-transposed (rows ``128b+32j+i -> 128b+4i+j``).
"""

from __future__ import annotations

import torch

from moe_oracle.runtime.layouts import (
    KernelWeights,
    deinterleave_gate_up,
    empty_mn_major,
    interleave_gate_up,
    utccp_transpose,
    utccp_untranspose,
)


def pack_bytes_i32(b: torch.Tensor) -> torch.Tensor:
    """``uint8 [..., 4G]`` -> ``int32 [..., G]`` (byte ``4j`` least significant)."""
    if b.shape[-1] % 4:
        raise ValueError(f"scale groups ({b.shape[-1]}) must be a multiple of 4 to pack into int32")
    return b.contiguous().view(torch.int32)


def unpack_i32_bytes(p: torch.Tensor) -> torch.Tensor:
    return p.contiguous().view(torch.uint8)


def sm100_l1_scale(sf_bytes: torch.Tensor) -> torch.Tensor:
    return utccp_transpose(interleave_gate_up(pack_bytes_i32(sf_bytes)))


def sm100_l2_scale(sf_bytes: torch.Tensor) -> torch.Tensor:
    return utccp_transpose(pack_bytes_i32(sf_bytes))


def sm100_l1_scale_inverse(sf: torch.Tensor) -> torch.Tensor:
    return unpack_i32_bytes(deinterleave_gate_up(utccp_untranspose(sf)))


def sm100_l2_scale_inverse(sf: torch.Tensor) -> torch.Tensor:
    return unpack_i32_bytes(utccp_untranspose(sf))


def allocate_sm100(
    e: int,
    hidden: int,
    inter: int,
    *,
    value_dtype: torch.dtype,
    values_per_elem: int,
    scale_group: int | None,
    device: torch.device | str,
) -> KernelWeights:
    """Empty kernel-layout tensors (scales MN-major) for ``e`` experts."""
    w13 = torch.empty((e, 2 * inter, hidden // values_per_elem), dtype=value_dtype, device=device)
    w2 = torch.empty((e, hidden, inter // values_per_elem), dtype=value_dtype, device=device)
    if scale_group is None:
        return KernelWeights(w13, w2)
    w13_sf = empty_mn_major(e, 2 * inter, hidden // (4 * scale_group), torch.int32, device)
    w2_sf = empty_mn_major(e, hidden, inter // (4 * scale_group), torch.int32, device)
    return KernelWeights(w13, w2, w13_sf, w2_sf)
