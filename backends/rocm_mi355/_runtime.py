"""Shared AITER MegaMoEV2 weight layout (ROCm/aiter ``aiter/ops/shuffle.py`` @ e404860).

``w1`` = ``shuffle_weight_a16w4(w13, 16, gate_up=True)``, ``w1_scale`` =
``shuffle_scale_a16w4(w13_scale.view(-1, H/32), E, gate_up=True)``; ``w2`` / ``w2_scale`` the same
with ``gate_up=False`` (``op_tests/multigpu_tests/test_mega_moe_v2.py``, vLLM 0.33 §3.3). Values are
packed E2M1 bytes (uint8), scales E8M0 bytes; the scale tensor is kept ``[E, N, Kp]`` here (the
vendor's 2-D ``[E*N, Kp]`` view of the same bytes; ``Kp`` = K/32 padded to a multiple of 8).
"""

from __future__ import annotations

import torch

from moe_oracle.runtime.interface import CheckpointExperts
from moe_oracle.runtime.layouts import KernelLayout, KernelWeights
from moe_oracle.runtime.quantize import MXFP4, canonical_mxfp4

from .shuffle import (
    aiter_scale_padded_groups,
    aiter_shuffle_scale,
    aiter_shuffle_weight,
    aiter_unshuffle_scale,
    aiter_unshuffle_weight,
)

N_LANE = 16


def canonical(experts: CheckpointExperts) -> CheckpointExperts:
    return canonical_mxfp4(experts, "AITER MegaMoEV2")


def allocate(e: int, hidden: int, inter: int, device: torch.device | str = "cpu") -> KernelWeights:
    return KernelWeights(
        torch.empty((e, 2 * inter, hidden // 2), dtype=torch.uint8, device=device),
        torch.empty((e, hidden, inter // 2), dtype=torch.uint8, device=device),
        torch.empty((e, 2 * inter, aiter_scale_padded_groups(hidden // 32)), dtype=torch.uint8, device=device),
        torch.empty((e, hidden, aiter_scale_padded_groups(inter // 32)), dtype=torch.uint8, device=device),
    )


def chunk(experts: CheckpointExperts, start: int, stop: int) -> dict[str, torch.Tensor]:
    w13_scale, w2_scale = experts.scales()
    return {
        "w13": aiter_shuffle_weight(experts.w13[start:stop], N_LANE, gate_up=True),
        "w2": aiter_shuffle_weight(experts.w2[start:stop], N_LANE, gate_up=False),
        "w13_sf": aiter_shuffle_scale(w13_scale[start:stop], gate_up=True),
        "w2_sf": aiter_shuffle_scale(w2_scale[start:stop], gate_up=False),
    }


def from_kernel(kw: KernelWeights) -> CheckpointExperts:
    _, n2, hp = kw.w13.shape
    inter, hidden = n2 // 2, hp * 2
    w13_sf, w2_sf = kw.scales()
    return CheckpointExperts(
        MXFP4,
        aiter_unshuffle_weight(kw.w13, N_LANE, gate_up=True),
        aiter_unshuffle_weight(kw.w2, N_LANE, gate_up=False),
        aiter_unshuffle_scale(w13_sf, gate_up=True, groups=hidden // 32),
        aiter_unshuffle_scale(w2_sf, gate_up=False, groups=inter // 32),
    )


LAYOUT = KernelLayout(canonical, allocate, chunk, from_kernel)
transform_into, to_kernel = LAYOUT.transform_into, LAYOUT.to_kernel


def vendor_transform(experts: CheckpointExperts) -> KernelWeights:
    """The same transform through ``aiter.ops.shuffle`` (raises ImportError without AITER)."""
    from aiter.ops.shuffle import shuffle_scale_a16w4, shuffle_weight_a16w4

    experts = canonical(experts)
    e, n2, _hp = experts.w13.shape
    h = experts.w2.shape[1]
    w1 = shuffle_weight_a16w4(experts.w13, N_LANE, True)
    w2 = shuffle_weight_a16w4(experts.w2, N_LANE, False)
    w13_scale, w2_scale = experts.scales()
    s1 = shuffle_scale_a16w4(w13_scale.reshape(e * n2, -1), e, True)
    s2 = shuffle_scale_a16w4(w2_scale.reshape(e * h, -1), e, False)
    return KernelWeights(w1.view(torch.uint8), w2.view(torch.uint8), s1.view(e, n2, -1), s2.view(e, h, -1))
