"""FP4 E2M1 codes, nibble packing and MXFP4 (E2M1 elements, one UE8M0 scale per 32).

Conventions
-----------
``convention="deepgemm"`` (default) — deepseek-ai/DeepGEMM ``deep_gemm/utils/math.py``
``per_token_cast_to_fp4(x, use_ue8m0=True, gran_k=group_size, use_packed_ue8m0=packed)``,
``_quantize_to_fp4_e2m1``, ``cast_back_from_fp4`` (read at commit
54e22612409371d6364144b69086735beb54e98b):
    * rows zero-padded to a multiple of the group; ``amax`` (fp32) clamped to >= 1e-4;
    * ``scale = ceil_to_ue8m0(amax / 6)`` (smallest power of two >= amax/6, exponent in
      [-126, 127]);
    * ``scaled = x * (1 / scale)`` (fp32), then E2M1 by thresholds on |scaled| with the
      midpoints 0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5: the code is the number of midpoints
      *strictly* below |scaled|, so **ties round towards zero** (0.75 -> 0.5, 1.75 -> 1.5,
      3.5 -> 3, and likewise 0.25 -> 0, 1.25 -> 1, 2.5 -> 2, 5 -> 4); magnitudes above 6
      saturate to 6;
    * the sign bit is set only for a negative value with a non-zero code: -0.0 and negative
      values that round to zero give code 0x0 (never 0x8);
    * NaN compares false with every threshold: NaN elements give code 0x0;
    * +-inf saturate to +-6 (codes 0x7 / 0xF); a group containing inf has scale 2**127
      (``ceil_to_ue8m0`` clamp), a group containing NaN also 2**127;
    * DeepGEMM returns the packed bytes as ``int8``; here they are ``uint8`` with the same bits.

``convention="aiter"`` — ROCm/aiter ``aiter/ops/quant.py::per_1x32_f4_quant`` (the torch
reference behind ``get_torch_quant(QuantType.per_1x32)`` with ``dtypes.fp4x2``) and
``aiter/utility/fp4_utils.py`` (``f32_to_mx_e8m0_scale``, ``e8m0_to_f32``, ``f32_to_mxfp4``,
``mxfp4_to_f32``), read at commit e4048607a535ace3a2b51ded31b1c8c2d45c0879:
    * K must be a multiple of the group (no padding); ``amax = max |x.float()|``, no clamp;
    * scale byte from ``round_mode`` (see ``ue8m0.mx_scale_bytes``): default "round_up" =
      ceil_pow2(amax / 6), AITER's default since ROCm/aiter#3212 (2026-06-02).  Before that
      commit AITER used ``f32_to_e8m0(amax / 4)`` (``round_mode="aiter_legacy"``); its Triton
      ``dynamic_mxfp4_quant`` uses ``round_mode="even"``; ``"round_down"`` and ``"ceil"`` are the
      other values of its ``MxScaleRoundMode``;
    * the scale is decoded with ``e8m0_to_f32`` (byte 0 -> 2**-127, 0xFF -> NaN) and
      ``y = x.float() / scale``;
    * E2M1 with **round-to-nearest, ties to even code** and saturation to +-6 (torchao's
      ``_f32_to_floatx_unpacked``: 0.75 -> 1, 1.75 -> 2, 3.5 -> 4, 0.25 -> 0, 1.25 -> 1,
      2.5 -> 2, 5 -> 4); the sign is the input's sign bit, so -0.0 and negative values that
      round to zero give code 0x8;
    * NaN: the bit trick of ``_f32_to_floatx_unpacked`` gives code 2, 3 or 4 depending on the
      NaN's payload (3 for the default quiet NaN 0x7FC00000), plus the sign bit; reproduced here.
      A group containing NaN or +-inf also gets scale byte 0xFF (NaN) under every AITER mode;
    * all-zero group: scale byte 0 (2**-127), codes 0 (0x8 for -0.0).
    The HIP kernels (``per_1x32_mx_quant_hip``, ``quant_mxfp4_hip``) share the scale formula
    (``csrc/include/mx_quant_utils.h``, RoundUp computed as ``amax * (1/6)f``) and convert the
    elements in hardware; they were not run here.

``convention="ocp"`` — OCP Microscaling Formats v1.0, section 6.3: shared exponent
``floor(log2(amax)) - emax_elem`` (emax_elem = 2 for E2M1) clamped to the E8M0 range, NaN/Inf
amax -> NaN scale, elements ``x / X`` rounded to nearest-even with saturation to the largest
normal.  Byte-identical to ``convention="aiter", round_mode="round_down"`` except for a single
amax value, the fp32 just below 2**-124: AITER forms amax / 4 in fp32, which rounds (ties to
even) up to 2**-126 (byte 1), while floor(log2(amax)) - 2 is -127 (byte 0).  The tests check both.

Differences between the conventions (same input):
    * scale: DeepGEMM and AITER RoundUp agree whenever 1e-4 <= amax < 6 * 2**127 and amax is
      finite; DeepGEMM gives byte 112 (2**-15) where AITER gives byte 0 for an all-zero group,
      different (larger) scales for every group with amax < 1e-4, and 254 (2**127) where AITER
      gives 0xFF (NaN) for NaN/Inf.  OCP/RoundDown picks a scale 1 or 2 binades lower than
      RoundUp (values up to 8 are then saturated to 6);
    * elements: ties 0.75, 1.75 and 3.5 (at the group scale) round down in DeepGEMM and up in
      AITER/OCP; all other ties agree; signed zeros (0x0 vs 0x8) and NaN codes differ.

Devices: all MXFP4 scales are powers of two, so CPU and CUDA give the same bytes, except inside
groups containing NaN/inf under "aiter"/"ocp": their elements are ``x / NaN``, whose NaN bits (and
so the E2M1 code the torchao bit trick yields: 3 on x86, 4 for NVIDIA's 0x7FFFFFFF) are the
device's; the group's scale is NaN either way.  AITER's own reference behaves the same.
"""

from __future__ import annotations

from typing import Literal

import torch

from .formats import (
    DEEPGEMM_AMAX_FLOOR,
    E2M1_MAX,
    E2M1_MIDPOINTS,
    E2M1_MIDPOINTS_TIE_DOWN_UNDER_RNE,
    E2M1_MIDPOINTS_TIE_UP_UNDER_RNE,
    FLOAT4_E2M1_X2_DTYPE,
    MX_BLOCK,
    e2m1_values_tensor,
)
from .fp8 import _ceil_div, _check_float_input, _pad_last, expand_group_scales, scales_to_fp32
from .ue8m0 import (
    ScaleRule,
    ceil_to_ue8m0,
    mx_scale_bytes,
    pack_ue8m0_to_int32,
    ue8m0_bytes_to_fp32,
)

E2M1Rounding = Literal["deepgemm", "rne"]
MxConvention = Literal["deepgemm", "aiter", "ocp"]
AiterRoundMode = Literal["round_up", "round_down", "even", "ceil", "aiter_legacy"]

_AITER_ROUND_MODES: dict[object, ScaleRule] = {
    "round_up": "round_up",
    "round_down": "round_down",
    "even": "even",
    "ceil": "ceil",
    "aiter_legacy": "aiter_legacy",
    # AITER's MxScaleRoundMode integer values
    0: "round_down",
    1: "round_up",
    2: "even",
    3: "ceil",
}


def aiter_scale_rule(round_mode: object) -> ScaleRule:
    """Map an AITER round mode (name or ``MxScaleRoundMode`` int 0..3) to a ``ScaleRule``."""
    try:
        return _AITER_ROUND_MODES[round_mode]
    except (KeyError, TypeError):
        raise ValueError(
            f"unknown AITER round_mode {round_mode!r}; expected one of "
            "'round_up' (1), 'round_down' (0), 'even' (2), 'ceil' (3), 'aiter_legacy'"
        ) from None


def _boundaries(values: tuple[float, ...], like: torch.Tensor) -> torch.Tensor:
    return torch.tensor(values, dtype=like.dtype, device=like.device)


def _rne_nan_codes(x: torch.Tensor) -> torch.Tensor:
    """Code torchao's ``_f32_to_floatx_unpacked`` bit trick yields for NaN (magnitude part)."""
    bits = x.float().view(torch.int32) & 0x7FFFFFFF
    rounded = bits + ((1 - 127) << 23) + ((1 << 21) - 1) + ((bits >> 22) & 1)
    return ((rounded >> 22) & 0xFF).to(torch.uint8)


def float_to_e2m1(x: torch.Tensor, rounding: E2M1Rounding = "deepgemm") -> torch.Tensor:
    """Round values (already divided by their scale) to 4-bit E2M1 codes.

    Args:
        x: floating tensor of any shape/device (compared in its own dtype).
        rounding: "deepgemm" — nearest, ties towards zero, no negative zero, NaN -> 0 (DeepGEMM
            ``_quantize_to_fp4_e2m1``); "rne" — nearest, ties to the even code, sign from the
            sign bit (so -0.0 -> 0x8), NaN -> payload-dependent code (AITER/torchao
            ``_f32_to_floatx_unpacked``).  Both saturate |x| > 6 (and inf) to 6.

    Returns:
        ``uint8`` tensor of codes 0..15, same shape as ``x``.
    """
    if not x.dtype.is_floating_point:
        raise TypeError(f"x must be floating point, got {x.dtype}")
    mag = x.abs()
    nan = torch.isnan(x)
    if rounding == "deepgemm":
        code = torch.bucketize(mag, _boundaries(E2M1_MIDPOINTS, mag), right=False)
        code = torch.where(nan, torch.zeros_like(code), code).to(torch.uint8)
        negative = (x < 0) & (code != 0)
    elif rounding == "rne":
        code = torch.bucketize(mag, _boundaries(E2M1_MIDPOINTS_TIE_DOWN_UNDER_RNE, mag), right=False)
        code = code + torch.bucketize(mag, _boundaries(E2M1_MIDPOINTS_TIE_UP_UNDER_RNE, mag), right=True)
        code = torch.where(nan, _rne_nan_codes(x).to(code.dtype), code).to(torch.uint8)
        negative = torch.signbit(x)
    else:
        raise ValueError(f"rounding must be 'deepgemm' or 'rne', got {rounding!r}")
    return code | (negative.to(torch.uint8) << 3)


def e2m1_to_float(codes: torch.Tensor) -> torch.Tensor:
    """Decode 4-bit E2M1 codes (any integer dtype, only the low 4 bits are used) to fp32.

    Code 0x8 decodes to -0.0 (as AITER's ``mxfp4_to_f32``; DeepGEMM's
    ``_dequantize_from_fp4_e2m1`` returns +0.0 for it, which only differs in the sign of zero).
    """
    table = e2m1_values_tensor(codes.device)
    return table[(codes.to(torch.int64) & 0xF)]


def _as_packed_bytes(packed: torch.Tensor) -> torch.Tensor:
    if packed.dtype == torch.uint8:
        return packed
    if packed.dtype in (torch.int8, FLOAT4_E2M1_X2_DTYPE):
        return packed.view(torch.uint8)
    raise TypeError(f"expected uint8 / int8 / float4_e2m1fn_x2 packed FP4, got {packed.dtype}")


def pack_e2m1(codes: torch.Tensor) -> torch.Tensor:
    """Pack pairs of 4-bit codes along the last dim: element 2i -> low nibble, 2i+1 -> high nibble.

    Args:
        codes: (..., 2N) integer tensor of codes 0..15 (higher bits are masked off).

    Returns:
        (..., N) ``uint8``.
    """
    if codes.shape[-1] % 2:
        raise ValueError(f"the last dim must be even to pack FP4 pairs, got {codes.shape[-1]}")
    c = codes.to(torch.uint8) & 0xF
    return (c[..., 0::2] | (c[..., 1::2] << 4)).contiguous()


def unpack_e2m1(packed: torch.Tensor) -> torch.Tensor:
    """Inverse of ``pack_e2m1``: (..., N) bytes (uint8/int8/float4_e2m1fn_x2) -> (..., 2N) uint8 codes."""
    b = _as_packed_bytes(packed)
    return torch.stack((b & 0xF, b >> 4), dim=-1).flatten(-2)


def _resolve_mx_convention(convention: str, round_mode: object | None) -> ScaleRule:
    if convention == "deepgemm":
        if round_mode is not None:
            raise ValueError("round_mode is only meaningful with convention='aiter'")
        return "deepgemm"
    if convention == "aiter":
        return aiter_scale_rule("round_up" if round_mode is None else round_mode)
    if convention == "ocp":
        if round_mode is not None:
            raise ValueError("round_mode is only meaningful with convention='aiter'")
        return "ocp"
    raise ValueError(f"convention must be 'deepgemm', 'aiter' or 'ocp', got {convention!r}")


def quantize_mxfp4(
    x: torch.Tensor,
    group_size: int = MX_BLOCK,
    convention: MxConvention = "deepgemm",
    *,
    round_mode: AiterRoundMode | int | None = None,
    packed: bool = False,
) -> tuple[torch.Tensor, torch.Tensor]:
    """MXFP4: E2M1 elements with one power-of-two (UE8M0) scale per ``group_size`` along the last dim.

    Args:
        x: (..., K) floating tensor, any device.  K must be even ("deepgemm": rows are padded to
            whole groups) or a multiple of ``group_size`` ("aiter", "ocp").
        group_size: elements per scale (32 for MX; DeepGEMM's ``gran_k``).
        convention: "deepgemm", "aiter" or "ocp" (see the module docstring).
        round_mode: AITER's scale rounding ("round_up" default, "round_down", "even", "ceil",
            "aiter_legacy", or its ints 0..3); only with ``convention="aiter"``.
        packed: return the scales packed four per int32 (padded with 1.0 to a multiple of 4).

    Returns:
        ``(packed_fp4, scales)``: packed_fp4 ``uint8`` (..., K / 2), element 2i in the low
        nibble; scales fp32 powers of two (NaN for an E8M0 NaN byte) of shape
        (..., ceil(K / group_size)), or int32 (..., ceil(ceil(K / group_size) / 4)) when
        ``packed``.  ``fp32_to_ue8m0_bytes(scales)`` gives AITER's E8M0 bytes.
    """
    _check_float_input(x)
    rule = _resolve_mx_convention(convention, round_mode)
    if group_size < 1:
        raise ValueError(f"group_size must be positive, got {group_size}")
    lead, k = x.shape[:-1], x.shape[-1]
    if k % 2:
        raise ValueError(f"the last dim must be even for FP4 packing, got {k}")
    rows = x.reshape(-1, k)
    m = rows.shape[0]
    if rule == "deepgemm":
        groups = _ceil_div(k, group_size)
        grouped = _pad_last(rows, groups * group_size).view(m, groups, group_size)
        amax = grouped.abs().float().amax(dim=2).clamp(min=DEEPGEMM_AMAX_FLOOR)
        scale = ceil_to_ue8m0(amax / E2M1_MAX)
        codes = float_to_e2m1(grouped * (1.0 / scale).unsqueeze(2), "deepgemm")
    else:
        if k % group_size:
            raise ValueError(f"convention={convention!r} needs K ({k}) to be a multiple of group_size")
        groups = k // group_size
        grouped = rows.view(m, groups, group_size)
        amax = grouped.float().abs().amax(dim=2)
        scale = ue8m0_bytes_to_fp32(mx_scale_bytes(amax, element="e2m1", rule=rule))
        codes = float_to_e2m1(grouped.float() / scale.unsqueeze(2), "rne")
    fp4 = pack_e2m1(codes.view(m, groups * group_size))[:, : k // 2].reshape(*lead, k // 2).contiguous()
    scale = scale.reshape(*lead, groups)
    if packed:
        return fp4, pack_ue8m0_to_int32(scale, pad_value=1.0)
    return fp4, scale


def dequantize_mxfp4(
    packed_fp4: torch.Tensor,
    scales: torch.Tensor,
    group_size: int = MX_BLOCK,
    out_dtype: torch.dtype = torch.float32,
) -> torch.Tensor:
    """Inverse of ``quantize_mxfp4``: ``e2m1_to_float(code) * scale`` in fp32 (``cast_back_from_fp4``).

    Args:
        packed_fp4: (..., K / 2) uint8 / int8 / float4_e2m1fn_x2.
        scales: (..., G) fp32 scales, (..., G') int32 packed UE8M0, or uint8 / float8_e8m0fnu
            UE8M0 bytes.
        group_size: elements per scale.
        out_dtype: dtype of the result.

    Returns:
        (..., K) tensor of ``out_dtype``.
    """
    values = e2m1_to_float(unpack_e2m1(packed_fp4))
    per_elem = expand_group_scales(scales_to_fp32(scales), values.shape[-1], group_size)
    return (values * per_elem).to(out_dtype)
