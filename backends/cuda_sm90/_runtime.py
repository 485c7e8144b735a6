"""Shared SM90 helpers (DeepGEMM PR #323 front end ``sgl_deep_gemm/__init__.py`` @ 8ddf7f96)."""

from __future__ import annotations

import torch


def pack_ue8m0_kmajor(sf_bytes: torch.Tensor) -> torch.Tensor:
    """UE8M0 bytes ``[E, N, K/32]`` -> int32 ``[E, N, K/128]`` K-major contiguous (4 per int32, low byte first).

    ``transform_weights_for_mega_moe_sm90_fp4::_pack_fp32_sf_to_ue8m0_kmajor`` takes fp32 scales and
    keeps their exponent field (``bits >> 23 & 0xff``), i.e. these bytes.
    """
    if sf_bytes.shape[-1] % 4:
        raise ValueError(f"K/32 ({sf_bytes.shape[-1]}) must be a multiple of 4")
    return sf_bytes.contiguous().view(torch.int32)


def unpack_ue8m0_kmajor(sf: torch.Tensor) -> torch.Tensor:
    return sf.contiguous().view(torch.uint8)
