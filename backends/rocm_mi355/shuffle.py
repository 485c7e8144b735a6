"""AITER MegaMoEV2's weight shuffles (pure torch, any device), each with its exact inverse.

ROCm/aiter ``aiter/ops/shuffle.py::shuffle_weight_a16w4`` (layout ``(NLane, 16)``, gate/up lane
interleave) and ``shuffle_scale_a16w4`` (MXFP4 E8M0 scales, 2x2 packs of 16 lanes x 4). Every
function takes an expert-leading tensor ``[E, ...]`` and transforms each expert independently.
"""

from __future__ import annotations

import torch

from moe_oracle.runtime.layouts import inverse_perm

_AITER_W_GATE_UP = (0, 2, 1, 4, 5, 3, 6)
_AITER_W_PLAIN = (0, 1, 3, 4, 2, 5)
_AITER_S_GATE_UP = (0, 2, 4, 6, 3, 5, 1)
_AITER_S_PLAIN = (0, 1, 4, 6, 3, 5, 2)
AITER_SCALE_PAD_BYTE = 0x7F


def _aiter_weight_view(e: int, n: int, k_pk: int, n_lane: int, gate_up: bool) -> tuple[int, ...]:
    k_pack, k_lane = 16, 64 // n_lane
    rows = n // 2 if gate_up else n
    if rows % n_lane or k_pk % (k_lane * k_pack):
        raise ValueError(
            f"AITER a16w4 shuffle needs rows ({rows}) % {n_lane} == 0 and packed K ({k_pk}) % {k_lane * k_pack} == 0"
        )
    n0, k0 = rows // n_lane, k_pk // (k_lane * k_pack)
    if gate_up:
        return (e, 2, n0, n_lane, k0, k_lane, k_pack)
    return (e, n0, n_lane, k0, k_lane, k_pack)


def aiter_shuffle_weight(w: torch.Tensor, n_lane: int = 16, gate_up: bool = False) -> torch.Tensor:
    """``shuffle_weight_a16w4(w, n_lane, gate_up)`` for packed-FP4 bytes ``[E, N, K/2]``."""
    e, n, k_pk = w.shape
    perm = _AITER_W_GATE_UP if gate_up else _AITER_W_PLAIN
    return w.reshape(_aiter_weight_view(e, n, k_pk, n_lane, gate_up)).permute(perm).reshape(e, n, k_pk).contiguous()


def aiter_unshuffle_weight(w: torch.Tensor, n_lane: int = 16, gate_up: bool = False) -> torch.Tensor:
    """Inverse of :func:`aiter_shuffle_weight`."""
    e, n, k_pk = w.shape
    perm = _AITER_W_GATE_UP if gate_up else _AITER_W_PLAIN
    view = _aiter_weight_view(e, n, k_pk, n_lane, gate_up)
    shuffled_view = tuple(view[d] for d in perm)
    return w.reshape(shuffled_view).permute(inverse_perm(perm)).reshape(e, n, k_pk).contiguous()


def _aiter_scale_view(e: int, n: int, kg: int, gate_up: bool) -> tuple[int, ...]:
    if n % 32 or kg % 8:
        raise ValueError(f"AITER a16w4 scale shuffle needs N ({n}) % 32 == 0 and K/32 ({kg}) % 8 == 0")
    if 32 * kg < 256:
        raise ValueError(f"AITER a16w4 scale shuffle needs K ({32 * kg}) >= 256")
    n1, k1 = n // 32, kg // 8
    if gate_up:
        return (e, 2, n1, 16, k1, 2, 4)
    return (e, n1, 2, 16, k1, 2, 4)


def aiter_scale_padded_groups(kg: int) -> int:
    """Scale columns after AITER's padding of K/32 to a multiple of 8."""
    return (kg + 7) // 8 * 8


def aiter_shuffle_scale(sf: torch.Tensor, gate_up: bool = False) -> torch.Tensor:
    """``shuffle_scale_a16w4(sf.view(E*N, K/32), E, gate_up)`` for E8M0 bytes ``[E, N, K/32]``.

    Returns ``[E, N, Kp]`` (``Kp`` = K/32 padded to a multiple of 8 with byte 0x7F, as AITER pads);
    the vendor returns the same bytes as ``[E*N, Kp]``.
    """
    e, n, kg = sf.shape
    kp = aiter_scale_padded_groups(kg)
    if kp != kg:
        padded = torch.empty((e, n, kp), dtype=sf.dtype, device=sf.device)
        padded.view(torch.uint8).fill_(AITER_SCALE_PAD_BYTE)
        padded[:, :, :kg] = sf
        sf = padded
    perm = _AITER_S_GATE_UP if gate_up else _AITER_S_PLAIN
    return sf.reshape(_aiter_scale_view(e, n, kp, gate_up)).permute(perm).reshape(e, n, kp).contiguous()


def aiter_unshuffle_scale(sf: torch.Tensor, gate_up: bool = False, groups: int | None = None) -> torch.Tensor:
    """Inverse of :func:`aiter_shuffle_scale`; ``groups`` (K/32) drops AITER's padding."""
    e, n, kp = sf.shape
    perm = _AITER_S_GATE_UP if gate_up else _AITER_S_PLAIN
    view = _aiter_scale_view(e, n, kp, gate_up)
    shuffled_view = tuple(view[d] for d in perm)
    out = sf.reshape(shuffled_view).permute(inverse_perm(perm)).reshape(e, n, kp)
    if groups is not None and groups != kp:
        out = out[:, :, :groups]
    return out.contiguous()
