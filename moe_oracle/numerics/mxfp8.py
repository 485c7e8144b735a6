"""MXFP8: E4M3 elements with one UE8M0 (E8M0) scale per 32 — SM100 DeepGEMM and AITER activations.

``convention="deepgemm"`` (default): deepseek-ai/DeepGEMM ``per_token_cast_to_fp8(x,
use_ue8m0=True, gran_k=group_size, use_packed_ue8m0=packed)`` (deep_gemm/utils/math.py at
54e22612409371d6364144b69086735beb54e98b), i.e. ``quantize_fp8(x, group_size, "ue8m0", packed)``:
amax clamped to 1e-4, scale ``ceil_to_ue8m0(amax / 448)``, values
``(x * (1 / scale)).to(float8_e4m3fn)``; rows padded to whole groups.  See ``fp8.py`` for the
NaN/Inf behaviour.

``convention="aiter"``: ROCm/aiter ``aiter/ops/quant.py::per_1x32_f8_scale_f8_quant(x,
quant_dtype=dtypes.fp8, scale_type=dtypes.fp8_e8m0)`` (the ``get_torch_quant`` reference for the
MXFP8 path of ``per_1x32_mx_quant_hip``) read at e4048607a535ace3a2b51ded31b1c8c2d45c0879, on an
OCP-FP8 GPU (gfx950+, ``dtypes.fp8 == float8_e4m3fn``):
    * K a multiple of 32, ``amax = max |x.float()|`` without clamp;
    * scale byte ``ceil_pow2(amax / 448)`` ("round_up", AITER's ``MX_DEFAULT_ROUND_MODE`` since
      ROCm/aiter#3212; before it: ``f32_to_e8m0(amax / 256)``, ``round_mode="aiter_legacy"``),
      decoded by ``e8m0_to_f32`` (byte 0 -> 2**-127, 0xFF -> NaN);
    * ``values = (x.float() / scale).to(float8_e4m3fn)``;
    * all-zero group -> byte 0 and zero values (signed zeros kept); NaN/Inf in a group -> byte
      0xFF and every value NaN (0x7F/0xFF).
    On gfx942 AITER uses ``float8_e4m3fnuz`` (max 240, emax 7) instead; not implemented.
    AITER's ``scale_type=fp32`` variant (scale = amax / 256, not a power of two, 0/0 = NaN for
    zero groups) is not MX and not implemented.

``convention="ocp"``: OCP MX v1.0 section 6.3: shared exponent ``floor(log2(amax)) - 8`` clamped
to [-127, 127] (NaN/Inf -> NaN scale), values ``x / X`` rounded to nearest-even and saturated to
+-448 (the clamp is applied explicitly, so the result does not depend on the torch version's
overflow behaviour; NaN stays NaN).  With this floor rule |x / X| can reach 512 and is
saturated.

Differences: DeepGEMM and AITER RoundUp give identical bytes for groups with
1e-4 <= amax < 448 * 2**127 (the x * (1/s) vs x / s forms agree for power-of-two s); they differ for
zero/tiny groups (DeepGEMM: byte 105 = 2**-22 for amax <= 1e-4) and for NaN/Inf.  OCP picks the
scale one binade lower than RoundUp whenever amax / 2**floor(log2 amax) > 1.75, saturating.
"""

from __future__ import annotations

from typing import Literal

import torch

from .formats import FP8_E4M3_DTYPE, FP8_E4M3_MAX, MX_BLOCK
from .fp4 import AiterRoundMode, _resolve_mx_convention
from .fp8 import _check_float_input, dequantize_fp8, quantize_fp8
from .ue8m0 import mx_scale_bytes, pack_ue8m0_to_int32, ue8m0_bytes_to_fp32

Mxfp8Convention = Literal["deepgemm", "aiter", "ocp"]


def quantize_mxfp8(
    x: torch.Tensor,
    group_size: int = MX_BLOCK,
    packed: bool = False,
    *,
    convention: Mxfp8Convention = "deepgemm",
    round_mode: AiterRoundMode | int | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """MXFP8 quantization along the last dim.

    Args:
        x: (..., K) floating tensor, any device (K a multiple of ``group_size`` for "aiter"/"ocp").
        group_size: elements per scale (32 for MX).
        packed: return the scales packed four per int32 (padded with 1.0 to a multiple of 4).
        convention: "deepgemm", "aiter" or "ocp" (see the module docstring).
        round_mode: AITER scale rounding ("round_up" default, "round_down", "even", "ceil",
            "aiter_legacy", or ints 0..3); only with ``convention="aiter"``.

    Returns:
        ``(values, scales)``: values ``float8_e4m3fn`` (..., K); scales fp32 powers of two (NaN
        for an E8M0 NaN byte) of shape (..., ceil(K / group_size)), or int32 when ``packed``.
    """
    _check_float_input(x)
    rule = _resolve_mx_convention(convention, round_mode)
    if rule == "deepgemm":
        return quantize_fp8(x, group_size=group_size, scale_format="ue8m0", packed=packed)
    if group_size < 1:
        raise ValueError(f"group_size must be positive, got {group_size}")
    lead, k = x.shape[:-1], x.shape[-1]
    if k % group_size:
        raise ValueError(f"convention={convention!r} needs K ({k}) to be a multiple of group_size")
    groups = k // group_size
    grouped = x.reshape(-1, groups, group_size)
    amax = grouped.float().abs().amax(dim=2)
    scale = ue8m0_bytes_to_fp32(mx_scale_bytes(amax, element="e4m3", rule=rule))
    scaled = grouped.float() / scale.unsqueeze(2)
    if convention == "ocp":
        scaled = scaled.clamp(-FP8_E4M3_MAX, FP8_E4M3_MAX)
    values = scaled.to(FP8_E4M3_DTYPE).reshape(*lead, k)
    scale = scale.reshape(*lead, groups)
    if packed:
        return values, pack_ue8m0_to_int32(scale, pad_value=1.0)
    return values, scale


def dequantize_mxfp8(
    values: torch.Tensor,
    scales: torch.Tensor,
    group_size: int = MX_BLOCK,
    out_dtype: torch.dtype = torch.float32,
) -> torch.Tensor:
    """Inverse of ``quantize_mxfp8``: ``values.float() * scale`` per group (fp32, packed int32 or bytes)."""
    return dequantize_fp8(values, scales, group_size=group_size, out_dtype=out_dtype)
