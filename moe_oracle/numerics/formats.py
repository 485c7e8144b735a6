"""Constants and code tables of the low-precision formats used on the MoE data path.

Everything here is a plain constant or a small pure-Python decoder, written from the format
definitions (OCP 8-bit floating point (OFP8) and OCP Microscaling Formats (MX) v1.0, NVIDIA's
NVFP4), not from any vendor's code.  The quantizers in the sibling modules use these tables; the
tests check the tables against independent bit-field decoders.

Formats
-------
FP8 E4M3 ("e4m3fn", ``torch.float8_e4m3fn``)
    1 sign, 4 exponent (bias 7), 3 mantissa bits.  No infinities; the two codes ``0x7F`` and
    ``0xFF`` are NaN, so the largest finite magnitude is ``0x7E`` = 1.75 * 2**8 = 448.  Subnormals
    (exponent field 0) are ``m/8 * 2**-6``; the smallest is ``2**-9``.  ``0x80`` is negative zero.
E2M1 (FP4, the MXFP4 / NVFP4 element)
    1 sign, 2 exponent (bias 1), 1 mantissa bit, no NaN/Inf.  A 4-bit *code* ``c`` (0..15) has
    sign ``c >> 3`` and magnitude ``E2M1_MAGNITUDES[c & 7]`` =
    {0, 0.5, 1, 1.5, 2, 3, 4, 6}; code 8 is negative zero.  Two codes are packed per byte, the
    element with the even index in the LOW nibble (DeepGEMM, AITER and the PTX/CDNA conventions
    all agree on this).
UE8M0 / E8M0 (the MX shared scale)
    An unsigned 8-bit biased exponent: byte ``b`` means ``2**(b - 127)``; ``0xFF`` is NaN; there
    is no zero and no infinity.  ``0x00`` is ``2**-127``, which is an fp32 *subnormal*
    (bit pattern ``0x00400000``).  torch calls this dtype ``torch.float8_e8m0fnu``.
E4M3 as the NVFP4 block scale ("UE4M3")
    NVFP4 stores one E4M3 byte per 16 elements (only non-negative values are produced, so the
    encoding equals the positive half of ``float8_e4m3fn``) and optionally a per-tensor fp32
    global scale.
"""

from __future__ import annotations

import math
from typing import Final

import torch

# --------------------------------------------------------------------------------------------
# FP8 E4M3 (e4m3fn)
# --------------------------------------------------------------------------------------------
FP8_E4M3_DTYPE: Final = torch.float8_e4m3fn
FP8_E4M3_MAX: Final[float] = 448.0
"""Largest finite E4M3 magnitude (code 0x7E)."""
FP8_E4M3_EXP_BIAS: Final[int] = 7
FP8_E4M3_MANTISSA_BITS: Final[int] = 3
FP8_E4M3_MIN_NORMAL: Final[float] = 2.0**-6
FP8_E4M3_MIN_SUBNORMAL: Final[float] = 2.0**-9
FP8_E4M3_NAN_CODES: Final[tuple[int, int]] = (0x7F, 0xFF)
FP8_E4M3_MAX_POW2: Final[int] = 8
"""log2 of the largest power of two <= 448; the ``emax_elem`` of the OCP MX spec for E4M3."""

# --------------------------------------------------------------------------------------------
# FP4 E2M1
# --------------------------------------------------------------------------------------------
E2M1_MAX: Final[float] = 6.0
E2M1_MAX_POW2: Final[int] = 2
"""log2 of the largest power of two <= 6; the ``emax_elem`` of the OCP MX spec for E2M1."""
E2M1_MANTISSA_BITS: Final[int] = 1
E2M1_SIGN_BIT: Final[int] = 0x8
E2M1_MAGNITUDES: Final[tuple[float, ...]] = (0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0)
"""Magnitude of the codes 0..7 (and, with the sign bit, 8..15)."""
E2M1_VALUES: Final[tuple[float, ...]] = E2M1_MAGNITUDES + tuple(-v for v in E2M1_MAGNITUDES)
"""Value of each 4-bit code 0..15; ``E2M1_VALUES[8]`` is ``-0.0``."""
E2M1_MIDPOINTS: Final[tuple[float, ...]] = (0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0)
"""Midpoints between consecutive magnitudes: the round-to-nearest decision boundaries."""
E2M1_MIDPOINTS_TIE_DOWN_UNDER_RNE: Final[tuple[float, ...]] = (0.25, 1.25, 2.5, 5.0)
"""Midpoints whose lower neighbour has the even code (a tie rounds down under ties-to-even)."""
E2M1_MIDPOINTS_TIE_UP_UNDER_RNE: Final[tuple[float, ...]] = (0.75, 1.75, 3.5)
"""Midpoints whose upper neighbour has the even code (a tie rounds up under ties-to-even)."""

# --------------------------------------------------------------------------------------------
# UE8M0 / E8M0
# --------------------------------------------------------------------------------------------
UE8M0_BIAS: Final[int] = 127
UE8M0_NAN: Final[int] = 0xFF
UE8M0_MIN_EXP: Final[int] = -127
"""Exponent of byte 0x00 (2**-127, an fp32 subnormal)."""
UE8M0_MAX_EXP: Final[int] = 127
"""Exponent of byte 0xFE (2**127)."""
FP32_SUBNORMAL_2_POW_M127_BITS: Final[int] = 0x00400000
"""fp32 bit pattern of 2**-127 (what E8M0 byte 0x00 decodes to)."""

# --------------------------------------------------------------------------------------------
# Block sizes and vendor constants
# --------------------------------------------------------------------------------------------
MX_BLOCK: Final[int] = 32
"""OCP MX block size (MXFP4, MXFP8)."""
NVFP4_BLOCK: Final[int] = 16
"""NVFP4 block size."""
DEEPGEMM_FP8_BLOCK: Final[int] = 128
"""DeepGEMM's default ``gran_k`` (per-token 1x128 groups, 128x128 weight blocks)."""
DEEPGEMM_AMAX_FLOOR: Final[float] = 1e-4
"""DeepGEMM clamps every group's amax to at least this (as an fp32 scalar) before scaling."""
NVFP4_SCALE_DTYPE: Final = torch.float8_e4m3fn
NVFP4_SCALE_MIN: Final[float] = 2.0**-9
"""Smallest positive E4M3 value; the lower clamp of the block scale in DeepGEMM's nvfp4.py."""
NVFP4_SCALE_MAX: Final[float] = FP8_E4M3_MAX

FLOAT8_E8M0_DTYPE: Final = getattr(torch, "float8_e8m0fnu", None)
"""``torch.float8_e8m0fnu`` where this torch has it (AITER's ``dtypes.fp8_e8m0``), else None."""
FLOAT4_E2M1_X2_DTYPE: Final = getattr(torch, "float4_e2m1fn_x2", None)
"""``torch.float4_e2m1fn_x2`` where this torch has it (AITER's ``dtypes.fp4x2``), else None."""


def e4m3_code_to_float(code: int) -> float:
    """Decode one E4M3 (e4m3fn) byte to a Python float from its bit fields (NaN for 0x7F/0xFF)."""
    if not 0 <= code <= 0xFF:
        raise ValueError(f"E4M3 code must be a byte, got {code}")
    sign = -1.0 if code & 0x80 else 1.0
    exponent = (code >> 3) & 0xF
    mantissa = code & 0x7
    if exponent == 0xF and mantissa == 0x7:
        return math.nan
    if exponent == 0:
        return sign * math.ldexp(mantissa, -6 - 3)
    return sign * math.ldexp(8 + mantissa, exponent - FP8_E4M3_EXP_BIAS - 3)


def e2m1_code_to_float(code: int) -> float:
    """Decode one 4-bit E2M1 code (0..15) to a Python float from its bit fields (-0.0 for 8)."""
    if not 0 <= code <= 0xF:
        raise ValueError(f"E2M1 code must be 0..15, got {code}")
    sign = -1.0 if code & 0x8 else 1.0
    exponent = (code >> 1) & 0x3
    mantissa = code & 0x1
    if exponent == 0:
        return sign * 0.5 * mantissa
    return sign * math.ldexp(2 + mantissa, exponent - 1 - 1)


def ue8m0_byte_to_float(byte: int) -> float:
    """Decode one UE8M0 byte to a Python float: ``2**(byte - 127)``, NaN for 0xFF."""
    if not 0 <= byte <= 0xFF:
        raise ValueError(f"UE8M0 byte must be 0..255, got {byte}")
    if byte == UE8M0_NAN:
        return math.nan
    return math.ldexp(1.0, byte - UE8M0_BIAS)


def e2m1_values_tensor(device: torch.device | str | None = None) -> torch.Tensor:
    """The 16 E2M1 code values as an fp32 tensor of shape (16,), indexed by code."""
    return torch.tensor(E2M1_VALUES, dtype=torch.float32, device=device)
