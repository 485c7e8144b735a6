"""UE8M0 / E8M0 power-of-two scales: rounding, byte codecs, int32 packing and the MX scale rules.

Units and dtypes: a *scale* here is the dequantization multiplier (``x ~= element * scale``).
Scales are carried either as fp32 tensors holding exact powers of two, as ``uint8`` exponent bytes
(``2**(byte - 127)``, 0xFF = NaN), or packed four bytes per ``int32``.

Functions
---------
``ceil_to_ue8m0(x)``
    DeepGEMM's ``ceil_to_ue8m0`` (deep_gemm/utils/math.py): |x| rounded up to a power of two by
    bumping the fp32 exponent field when any mantissa bit is set, the exponent then clamped to
    [1, 254], i.e. the result lies in [2**-126, 2**127].  Consequences of the clamp (vendor
    behaviour, reproduced): 0 and fp32 subnormals give 2**-126; anything above 2**127 (finite
    or ``inf``) gives 2**127 (rounding *down*); NaN (exponent field 255) also gives 2**127.
``fp32_to_ue8m0_bytes`` / ``ue8m0_bytes_to_fp32``
    Exact codecs following the OCP MX v1.0 E8M0 definition: byte 0 <-> 2**-127 (fp32 subnormal
    0x00400000), bytes 1..254 <-> normal powers of two, 0xFF <-> NaN.  DeepGEMM's
    ``unpack_ue8m0_from_int`` instead decodes 0x00 as 0.0 and 0xFF as +inf (it shifts the byte
    into the exponent field); its quantizers never emit those two bytes, so every DeepGEMM scale
    round-trips identically.  AITER's ``fp4_utils.e8m0_to_f32`` decodes exactly like this module
    (0 -> 2**-127, 0xFF -> NaN; AITER uses the NaN bit pattern 0x7F800001, we use 0x7FC00000).
``pack_ue8m0_to_int32`` / ``unpack_int32_to_ue8m0``
    Four consecutive scales (along the last dim) per int32, group ``4j`` in the least significant
    byte: the same bytes as DeepGEMM's ``pack_ue8m0_to_int`` (which reinterprets the contiguous
    ``uint8`` exponent bytes as ``int32`` on a little-endian machine; every torch device is
    little-endian).
``mx_scale_bytes(amax, element=..., rule=...)``
    The shared-exponent rules of the vendors and of the OCP spec, from a group's amax:

    ============== ============================================================================
    rule           byte (before the 0..255 range handling noted)
    ============== ============================================================================
    "deepgemm"     ceil_to_ue8m0(max(amax, 1e-4) / elem_max)      (DeepGEMM math.py)
    "round_up"     ceil_pow2(amax / elem_max), exponent bump refused at 0xFF
                   (AITER ``MxScaleRoundMode.RoundUp``, its default since ROCm/aiter#3212;
                   torchao RCEIL; NVIDIA/DSv4/FlashInfer)
    "round_down"   floor_pow2(amax / 2**emax_elem)                (AITER RoundDown; torchao FLOOR)
    "ocp"          floor(log2(amax)) - emax_elem clamped to [-127, 127]; NaN/Inf -> 0xFF
                   (OCP MX v1.0 section 6.3; computed here via frexp; equal to "round_down"
                   except for amax = the fp32 just below 2**(emax_elem - 126), where the fp32
                   quotient of "round_down" rounds up into the normal range: byte 1 vs 0)
    "even"         floor_pow2(((bits(amax) + 2**(22 - mbits)) & 0xFF800000) / 2**emax_elem)
                   (AITER Even = AMD Quark even_round, the scale of AITER's Triton
                   ``dynamic_mxfp4_quant``)
    "ceil"         ceil_pow2(amax / 2**emax_elem)                 (AITER Ceil; torchao CEIL)
    "aiter_legacy" AITER's pre-#3212 ``fp4_utils.f32_to_e8m0(amax / 2**emax_elem)``: round the
                   power of two up when the mantissa is >= 0.5 (bit 22 set; a subnormal tie at
                   exactly 2**-127 stays), i.e. round to the *nearest* power in linear terms
    ============== ============================================================================

    ``elem_max``/``emax_elem``/``mbits`` are 6/2/1 for E2M1 and 448/8/3 for E4M3.  All
    divisions are fp32 tensor ops exactly as the vendors write them.  NaN or Inf amax gives 0xFF
    for every rule except "deepgemm" (which gives 254, see ``ceil_to_ue8m0``) and except "even"
    for NaNs with a large payload: AITER adds in int32, so NVIDIA's canonical NaN 0x7FFFFFFF wraps
    to -0.0 and gives byte 0, while x86's NaNs (0x7FC00000 after abs) give 0xFF; both are
    reproduced since the same int32 arithmetic runs on the same device.  amax = 0 gives
    byte 0 (2**-127) for every rule except "deepgemm", whose 1e-4 clamp gives byte 112
    (2**-15 = ceil_pow2(1e-4 / 6)) for E2M1 and byte 105 (2**-22 = ceil_pow2(1e-4 / 448)) for E4M3.
"""

from __future__ import annotations

from typing import Literal

import torch

from .formats import (
    DEEPGEMM_AMAX_FLOOR,
    E2M1_MANTISSA_BITS,
    E2M1_MAX,
    E2M1_MAX_POW2,
    FLOAT8_E8M0_DTYPE,
    FP8_E4M3_MANTISSA_BITS,
    FP8_E4M3_MAX,
    FP8_E4M3_MAX_POW2,
    FP32_SUBNORMAL_2_POW_M127_BITS,
    UE8M0_BIAS,
    UE8M0_MAX_EXP,
    UE8M0_MIN_EXP,
    UE8M0_NAN,
)

ScaleRule = Literal["deepgemm", "round_up", "round_down", "ocp", "even", "ceil", "aiter_legacy"]
MxElement = Literal["e2m1", "e4m3"]

SCALE_RULES: tuple[str, ...] = ("deepgemm", "round_up", "round_down", "ocp", "even", "ceil", "aiter_legacy")

_EXP_MASK = 0xFF
_MANTISSA_MASK = 0x7FFFFF
_QUIET_NAN_BITS = 0x7FC00000


def _element_params(element: MxElement) -> tuple[float, int, int]:
    """(elem_max, emax_elem, mantissa bits) of an MX element format."""
    if element == "e2m1":
        return E2M1_MAX, E2M1_MAX_POW2, E2M1_MANTISSA_BITS
    if element == "e4m3":
        return FP8_E4M3_MAX, FP8_E4M3_MAX_POW2, FP8_E4M3_MANTISSA_BITS
    raise ValueError(f"unknown MX element format {element!r}; expected 'e2m1' or 'e4m3'")


def _fp32_bits(x: torch.Tensor) -> torch.Tensor:
    """The int32 bit pattern of ``x`` as fp32 (x is converted to fp32 first)."""
    return x.float().contiguous().view(torch.int32)


def _exponent_field(bits: torch.Tensor) -> torch.Tensor:
    """Biased exponent field (0..255, int32) of fp32 bit patterns."""
    return (bits >> 23) & _EXP_MASK


def ceil_to_ue8m0(x: torch.Tensor) -> torch.Tensor:
    """Round |x| up to a power of two representable as UE8M0, exactly as DeepGEMM does.

    Args:
        x: any floating tensor (typically an fp32 scale ``amax / 448``), any shape and device.

    Returns:
        fp32 tensor of the same shape holding ``2**e`` with e in [-126, 127]: the smallest power
        of two >= |x| for |x| in [2**-126, 2**127]; 2**-126 below that range (0 and fp32
        subnormals included); 2**127 above it, for +-inf, and for NaN.
    """
    bits = _fp32_bits(x.abs())
    exponent = _exponent_field(bits) + ((bits & _MANTISSA_MASK) != 0).to(torch.int32)
    return (exponent.clamp(1, 254) << 23).view(torch.float32)


def fp32_to_ue8m0_bytes(scale: torch.Tensor, *, check: bool = True) -> torch.Tensor:
    """Encode fp32 power-of-two scales as UE8M0 bytes.

    Args:
        scale: fp32 (or any float) tensor of scales, each exactly ``2**e`` with e in [-127, 127]
            (2**-127 being the fp32 subnormal 0x00400000), or NaN.
        check: when True (default) raise ``ValueError`` if any entry is not such a value
            (negative, zero, +-inf, not a power of two).  This reads the tensor back (a device
            sync on accelerators).  When False no check is made and the biased exponent field is
            returned as is (i.e. a non power of two is truncated towards a smaller power).

    Returns:
        ``uint8`` tensor of the same shape: ``e + 127``; 0xFF for NaN.
    """
    bits = _fp32_bits(scale)
    nan = torch.isnan(scale)
    subnormal_min = bits == FP32_SUBNORMAL_2_POW_M127_BITS
    if check:
        exponent = _exponent_field(bits)
        normal_pow2 = (bits & _MANTISSA_MASK == 0) & (exponent >= 1) & (exponent <= 254) & (bits >= 0)
        valid = normal_pow2 | subnormal_min | nan
        if not bool(valid.all()):
            bad = scale.float()[~valid].flatten()[:4].tolist()
            raise ValueError(f"not UE8M0-representable (power of two in [2**-127, 2**127] or NaN): {bad}")
    out = torch.where(subnormal_min, torch.zeros_like(bits), _exponent_field(bits))
    out = torch.where(nan, torch.full_like(out, UE8M0_NAN), out)
    return out.to(torch.uint8)


def _as_byte_tensor(codes: torch.Tensor) -> torch.Tensor:
    """View E8M0 storage (uint8, int8 or float8_e8m0fnu) as uint8."""
    if codes.dtype == torch.uint8:
        return codes
    if codes.dtype == torch.int8 or (FLOAT8_E8M0_DTYPE is not None and codes.dtype == FLOAT8_E8M0_DTYPE):
        return codes.view(torch.uint8)
    raise TypeError(f"expected uint8 / int8 / float8_e8m0fnu UE8M0 bytes, got {codes.dtype}")


def ue8m0_bytes_to_fp32(codes: torch.Tensor) -> torch.Tensor:
    """Decode UE8M0 bytes to fp32 scales.

    Args:
        codes: ``uint8`` (or ``int8`` / ``torch.float8_e8m0fnu``, reinterpreted) tensor, any shape.

    Returns:
        fp32 tensor of the same shape: ``2**(b - 127)``; byte 0 is 2**-127 (an fp32 subnormal),
        0xFF is NaN.
    """
    b = _as_byte_tensor(codes).to(torch.int32)
    bits = b << 23
    bits = torch.where(b == 0, torch.full_like(bits, FP32_SUBNORMAL_2_POW_M127_BITS), bits)
    bits = torch.where(b == UE8M0_NAN, torch.full_like(bits, _QUIET_NAN_BITS), bits)
    return bits.view(torch.float32)


def pack_ue8m0_to_int32(scales: torch.Tensor, *, pad_value: float | None = None) -> torch.Tensor:
    """Pack UE8M0 scales four per int32 along the last dim (group 4j in the least significant byte).

    Args:
        scales: fp32 power-of-two scales (see ``fp32_to_ue8m0_bytes``) or already-encoded bytes
            (``uint8`` / ``float8_e8m0fnu``), shape (..., G).
        pad_value: if G is not a multiple of 4, pad the last dim with this scale (DeepGEMM's
            forks pad with 1.0) before packing; when None, such a G raises ``ValueError``
            (DeepGEMM's ``pack_ue8m0_to_int`` asserts ``G % 4 == 0``).

    Returns:
        ``int32`` tensor of shape (..., ceil(G / 4)); identical to DeepGEMM's
        ``pack_ue8m0_to_int`` for its inputs.
    """
    if scales.dtype.is_floating_point and scales.dtype != FLOAT8_E8M0_DTYPE:
        codes = fp32_to_ue8m0_bytes(scales)
    else:
        codes = _as_byte_tensor(scales)
    groups = codes.shape[-1]
    if groups % 4:
        if pad_value is None:
            raise ValueError(f"the number of scales ({groups}) must be a multiple of 4 to pack")
        pad_byte = int(fp32_to_ue8m0_bytes(torch.tensor([pad_value], dtype=torch.float32))[0])
        codes = torch.nn.functional.pad(codes, (0, 4 - groups % 4), value=pad_byte)
    return codes.contiguous().view(torch.int32)


def unpack_int32_to_ue8m0_bytes(packed: torch.Tensor) -> torch.Tensor:
    """Inverse of the packing: int32 (..., P) -> ``uint8`` exponent bytes (..., 4P)."""
    if packed.dtype != torch.int32:
        raise TypeError(f"expected int32 packed scales, got {packed.dtype}")
    return packed.contiguous().view(torch.uint8)


def unpack_int32_to_ue8m0(packed: torch.Tensor) -> torch.Tensor:
    """Inverse of ``pack_ue8m0_to_int32``: int32 (..., P) -> fp32 scales (..., 4P).

    Decoding follows ``ue8m0_bytes_to_fp32`` (byte 0 -> 2**-127, 0xFF -> NaN); for bytes 1..254
    (everything DeepGEMM produces) this equals DeepGEMM's ``unpack_ue8m0_from_int``.  Padding
    scales added by the packer are returned too; slice them off with the known group count.
    """
    return ue8m0_bytes_to_fp32(unpack_int32_to_ue8m0_bytes(packed))


def _ceil_pow2_bytes(value: torch.Tensor) -> torch.Tensor:
    """AITER ``_f32_to_e8m0_ceil_impl``: bump the exponent when mantissa != 0 unless it is 0xFF."""
    bits = _fp32_bits(value)
    exponent = _exponent_field(bits)
    bump = ((bits & _MANTISSA_MASK) != 0) & (exponent < UE8M0_NAN)
    return (exponent + bump.to(torch.int32)).to(torch.uint8)


def _floor_pow2_bytes(value: torch.Tensor) -> torch.Tensor:
    """AITER ``_f32_to_e8m0_floor_impl``: the biased exponent field (0xFF kept for NaN/Inf)."""
    return _exponent_field(_fp32_bits(value)).to(torch.uint8)


def _ocp_bytes(amax: torch.Tensor, emax_elem: int) -> torch.Tensor:
    """OCP MX v1.0: X = 2**(floor(log2(amax)) - emax_elem), clamped to E8M0; NaN/Inf -> NaN."""
    a = amax.float()
    _, exp = torch.frexp(a)  # a = m * 2**exp, m in [0.5, 1)  =>  floor(log2(a)) = exp - 1
    shared = (exp.to(torch.int32) - 1 - emax_elem).clamp(UE8M0_MIN_EXP, UE8M0_MAX_EXP)
    shared = torch.where(a == 0, torch.full_like(shared, UE8M0_MIN_EXP), shared)
    out = shared + UE8M0_BIAS
    out = torch.where(torch.isfinite(a), out, torch.full_like(out, UE8M0_NAN))
    return out.to(torch.uint8)


def _even_bytes(amax: torch.Tensor, emax_elem: int, mbits: int) -> torch.Tensor:
    """AMD Quark / AITER 'Even': round amax at mantissa bit (mbits + 1), then floor pow2 / 2**emax."""
    bits = _fp32_bits(amax)
    rounded = ((bits + (1 << (22 - mbits))) & -0x800000).view(torch.float32)  # -0x800000 == 0xFF800000
    return _floor_pow2_bytes(rounded / float(2**emax_elem))


def _aiter_legacy_bytes(value: torch.Tensor) -> torch.Tensor:
    """AITER ``fp4_utils.f32_to_e8m0`` before ROCm/aiter#3212 (applied to amax / 2**emax_elem)."""
    bits = _fp32_bits(value)
    exponent = _exponent_field(bits)
    half_or_more = (bits & 0x400000) != 0
    round_up = half_or_more & (((bits & 0x3FFFFF) != 0) | (exponent > 0))
    out = exponent + round_up.to(torch.int32)  # 254 + 1 = 255: rounds to NaN, as AITER's uint8 did
    out = torch.where(exponent == UE8M0_NAN, torch.full_like(out, UE8M0_NAN), out)
    return out.to(torch.uint8)


def mx_scale_bytes(amax: torch.Tensor, *, element: MxElement, rule: ScaleRule) -> torch.Tensor:
    """Shared E8M0 scale byte of each group from its amax, under one of the vendor / spec rules.

    Args:
        amax: non-negative group maxima ``max |x|`` (any float dtype; used as fp32), any shape.
        element: "e2m1" (MXFP4) or "e4m3" (MXFP8).
        rule: see the module docstring table.

    Returns:
        ``uint8`` tensor of the same shape; decode with ``ue8m0_bytes_to_fp32``.
    """
    elem_max, emax_elem, mbits = _element_params(element)
    a = amax.float()
    if rule == "deepgemm":
        return fp32_to_ue8m0_bytes(ceil_to_ue8m0(a.clamp(min=DEEPGEMM_AMAX_FLOOR) / elem_max), check=False)
    if rule == "round_up":
        return _ceil_pow2_bytes(a / elem_max)
    if rule == "round_down":
        return _floor_pow2_bytes(a / float(2**emax_elem))
    if rule == "ocp":
        return _ocp_bytes(a, emax_elem)
    if rule == "even":
        return _even_bytes(a, emax_elem, mbits)
    if rule == "ceil":
        return _ceil_pow2_bytes(a / float(2**emax_elem))
    if rule == "aiter_legacy":
        return _aiter_legacy_bytes(a / float(2**emax_elem))
    raise ValueError(f"unknown scale rule {rule!r}; expected one of {SCALE_RULES}")
