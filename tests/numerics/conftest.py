"""Independent reference oracles for the ``moe_oracle.numerics`` tests.

The oracles are written from the format definitions in float64 / numpy-float32 arithmetic and
brute-force searches, deliberately in a different way from the implementation (which uses torch
bit manipulation, ``bucketize`` thresholds and torch casts):

* E4M3 and E2M1 rounding: nearest grid point by distance in float64 over the full table of
  representable values (decoded from the bit fields here), ties resolved by the rule under test;
* power-of-two scales: ``math.frexp`` / ``math.ldexp``;
* fp32 scale arithmetic: numpy float32 scalar/array operations (IEEE correctly rounded).

They are handed to tests through the session fixture ``ref`` (importing helper modules from a
test directory depends on pytest's import mode; a fixture does not).
"""

from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np
import pytest
import torch


# --------------------------------------------------------------------------------------------
# Tables from the bit-field definitions
# --------------------------------------------------------------------------------------------
def _e4m3_value(code: int) -> float:
    """Value of an e4m3fn byte: s.eeee.mmm, bias 7, S.1111.111 = NaN, no inf."""
    s, e, m = code >> 7, (code >> 3) & 15, code & 7
    if e == 15 and m == 7:
        return math.nan
    mag = (m / 8.0) * 2.0**-6 if e == 0 else (1.0 + m / 8.0) * 2.0 ** (e - 7)
    return -mag if s else mag


def _e2m1_value(code: int) -> float:
    """Value of a 4-bit e2m1 code: s.ee.m, bias 1, subnormal 0.m * 2**0."""
    s, e, m = code >> 3, (code >> 1) & 3, code & 1
    mag = m * 0.5 if e == 0 else (1.0 + m / 2.0) * 2.0 ** (e - 1)
    return -mag if s else mag


E4M3_VALUES = np.array([_e4m3_value(c) for c in range(256)], dtype=np.float64)
E4M3_POS = E4M3_VALUES[:0x7F]  # codes 0x00..0x7E, increasing
E2M1_VALUES = np.array([_e2m1_value(c) for c in range(16)], dtype=np.float64)
E2M1_POS = E2M1_VALUES[:8]


def _torch_e4m3_saturates() -> bool:
    """torch >= 2.13 saturates overflow to +-448 when casting to float8_e4m3fn; older gave NaN."""
    code = int(torch.tensor([1000.0]).to(torch.float8_e4m3fn).view(torch.uint8)[0])
    return code == 0x7E


E4M3_SATURATES = _torch_e4m3_saturates()


def e4m3_codes(v: np.ndarray) -> np.ndarray:
    """Round float64 values to e4m3fn codes: nearest, ties to even code, torch's overflow rule.

    Brute-force over the 127 non-negative finite values (searchsorted only narrows the two
    neighbours; the choice is by float64 distance).
    """
    v = np.asarray(v, dtype=np.float64)
    mag = np.abs(v)
    hi = np.clip(np.searchsorted(E4M3_POS, mag, side="left"), 1, len(E4M3_POS) - 1)
    lo = hi - 1
    d_lo = mag - E4M3_POS[lo]
    d_hi = E4M3_POS[hi] - mag
    take_hi = (d_hi < d_lo) | ((d_hi == d_lo) & (hi % 2 == 0))
    code = np.where(take_hi, hi, lo)
    code = np.where(mag <= 0, 0, code)
    code = np.where(mag >= 448.0, 0x7E, code)
    # above the 448/480 midpoint (464) torch either saturates or gives NaN
    code = np.where(mag > 464.0, 0x7E if E4M3_SATURATES else 0x7F, code)
    code = code | np.where(np.signbit(v), 0x80, 0)
    code = np.where(np.isnan(v), np.where(np.signbit(v), 0xFF, 0x7F), code)
    return code.astype(np.uint8)


def e2m1_codes(v: np.ndarray, rounding: str) -> np.ndarray:
    """Round float64 values to e2m1 codes by brute-force nearest search over the 8 magnitudes.

    rounding="deepgemm": ties to the smaller magnitude, sign only for non-zero codes, NaN -> 0.
    rounding="rne": ties to the even code, sign from the sign bit.  NaN is not modelled here.
    Both saturate magnitudes above 6 to 6.
    """
    v = np.asarray(v, dtype=np.float64)
    mag = np.abs(v)
    finite_mag = np.where(np.isfinite(mag), mag, 0.0)
    dist = np.abs(finite_mag[..., None] - E2M1_POS)
    best = dist.min(axis=-1, keepdims=True)
    is_best = dist == best
    if rounding == "deepgemm":
        idx = np.argmax(is_best, axis=-1)  # first (smallest) magnitude among the ties
    elif rounding == "rne":
        even_best = is_best & (np.arange(8) % 2 == 0)
        idx = np.where(even_best.any(axis=-1), np.argmax(even_best, axis=-1), np.argmax(is_best, axis=-1))
    else:
        raise ValueError(rounding)
    idx = np.where(mag >= 6.0, 7, idx)
    if rounding == "deepgemm":
        idx = np.where(np.isnan(v), 0, idx)
        sign = (v < 0) & (idx != 0)
    else:
        sign = np.signbit(v)
    return (idx | np.where(sign, 8, 0)).astype(np.uint8)


def pack_nibbles(codes: np.ndarray) -> np.ndarray:
    """Pack codes pairwise, element 2i in the low nibble (arithmetic, not bit ops on views)."""
    codes = np.asarray(codes, dtype=np.int64)
    return (codes[..., 0::2] + 16 * codes[..., 1::2]).astype(np.uint8)


# --------------------------------------------------------------------------------------------
# Power-of-two scale rules, from math.frexp
# --------------------------------------------------------------------------------------------
def floor_log2(a: float) -> int:
    _m, e = math.frexp(a)  # a = m * 2**e, 0.5 <= m < 1
    return e - 1


def ceil_log2(a: float) -> int:
    m, e = math.frexp(a)
    return e - 1 if m == 0.5 else e


def ceil_pow2_deepgemm(v: float) -> float:
    """DeepGEMM ceil_to_ue8m0 by the spec: smallest 2**e >= |v|, e clamped to [-126, 127]."""
    v = abs(v)
    if math.isnan(v) or math.isinf(v):
        return 2.0**127
    if v == 0:
        return 2.0**-126
    return math.ldexp(1.0, min(max(ceil_log2(v), -126), 127))


def f32(x: float) -> float:
    """Round a Python float to the nearest fp32 value."""
    return float(np.float32(x))


def mx_scale_byte(amax: float, element: str, rule: str) -> int:
    """Oracle E8M0 byte for one group amax (finite, >= 0) under a scale rule."""
    elem_max, emax = (6.0, 2) if element == "e2m1" else (448.0, 8)
    mbits = 1 if element == "e2m1" else 3
    a = f32(amax)
    if rule == "deepgemm":
        return ceil_log2(ceil_pow2_deepgemm(f32(max(a, f32(1e-4)) / elem_max))) + 127
    if rule in ("round_up", "ceil", "round_down"):
        # AITER: the fp32 quotient v, then its exponent field (bumped for the ceil rules when
        # v is not a power of two; every non-zero fp32 subnormal counts as 2**-126 there)
        v = f32(a / elem_max) if rule == "round_up" else f32(a / 2.0**emax)
        if v == 0:
            return 0
        if v < 2.0**-126:
            return 0 if rule == "round_down" else 1
        e = floor_log2(v) if rule == "round_down" else ceil_log2(v)
        return min(e, 128) + 127  # 128 + 127 = 255 (NaN) when the bump overflows
    if rule == "ocp":
        if a == 0:
            return 0
        return min(max(floor_log2(a) - emax, -127), 127) + 127
    if rule == "even":
        if a == 0:
            return 0
        e = floor_log2(a)
        frac = a / 2.0**e - 1.0  # in [0, 1)
        if frac >= 1.0 - 2.0 ** -(mbits + 1):
            e += 1
        if e >= 128:
            return 255
        return max(e - emax, -127) + 127
    if rule == "aiter_legacy":
        v = f32(a / 2.0**emax)
        if v == 0:
            return 0
        e = floor_log2(v)
        if e < -126:  # fp32 subnormal: bump only above half of 2**-126
            return 1 if v > 2.0**-127 else 0
        frac = v / 2.0**e - 1.0
        return min(e + (1 if frac >= 0.5 else 0), 128) + 127
    raise ValueError(rule)


# --------------------------------------------------------------------------------------------
# Whole-quantizer oracles (numpy float32 arithmetic for scales, the rounding oracles above)
# --------------------------------------------------------------------------------------------
def _np32(x: torch.Tensor) -> np.ndarray:
    return x.detach().float().cpu().numpy().astype(np.float32)


def _groups(x: np.ndarray, g: int) -> tuple[np.ndarray, int]:
    m, k = x.shape
    groups = -(-k // g)
    padded = np.zeros((m, groups * g), dtype=np.float32)
    padded[:, :k] = x
    return padded.reshape(m, groups, g), groups


def fp8_reference(x: torch.Tensor, g: int, ue8m0: bool) -> tuple[np.ndarray, np.ndarray]:
    """(codes uint8 (m, k), scales float32 (m, G)) of DeepGEMM per-token FP8, finite inputs."""
    x32 = _np32(x)
    m, k = x32.shape
    grouped, groups = _groups(x32, g)
    amax = np.maximum(np.abs(grouped).max(axis=2), np.float32(1e-4))
    sf = (amax / np.float32(448.0)).astype(np.float32)
    if ue8m0:
        sf = np.vectorize(ceil_pow2_deepgemm, otypes=[np.float64])(sf).astype(np.float32)
    inv = (np.float32(1.0) / sf).astype(np.float32)
    y = (grouped * inv[..., None]).astype(np.float32)
    codes = e4m3_codes(y.astype(np.float64)).reshape(m, groups * g)[:, :k]
    return codes, sf


def fp8_block_reference(x: torch.Tensor, bm: int, bn: int, ue8m0: bool) -> tuple[np.ndarray, np.ndarray]:
    x32 = _np32(x)
    m, n = x32.shape
    gm, gn = -(-m // bm), -(-n // bn)
    padded = np.zeros((gm * bm, gn * bn), dtype=np.float32)
    padded[:m, :n] = x32
    tiles = padded.reshape(gm, bm, gn, bn)
    amax = np.maximum(np.abs(tiles).max(axis=(1, 3)), np.float32(1e-4))
    sf = (amax / np.float32(448.0)).astype(np.float32)
    if ue8m0:
        sf = np.vectorize(ceil_pow2_deepgemm, otypes=[np.float64])(sf).astype(np.float32)
    inv = (np.float32(1.0) / sf).astype(np.float32)
    y = (tiles * inv[:, None, :, None]).astype(np.float32)
    codes = e4m3_codes(y.astype(np.float64)).reshape(gm * bm, gn * bn)[:m, :n]
    return codes, sf


def mxfp4_reference(x: torch.Tensor, g: int, convention: str, rule: str | None = None):
    """(packed uint8 (m, k/2), scales float32 (m, G)) for finite inputs."""
    x32 = _np32(x)
    m, k = x32.shape
    grouped, groups = _groups(x32, g)
    amax = np.abs(grouped).max(axis=2)
    if convention == "deepgemm":
        byte = np.vectorize(lambda a: mx_scale_byte(a, "e2m1", "deepgemm"))(amax)
        sf = np.ldexp(np.float32(1.0), byte - 127).astype(np.float32)
        y = (grouped * (np.float32(1.0) / sf)[..., None]).astype(np.float32)
        codes = e2m1_codes(y.astype(np.float64), "deepgemm")
    else:
        byte = np.vectorize(lambda a: mx_scale_byte(a, "e2m1", rule))(amax)
        sf = np.ldexp(np.float32(1.0), byte - 127).astype(np.float32)
        y = (grouped / sf[..., None]).astype(np.float32)
        codes = e2m1_codes(y.astype(np.float64), "rne")
    codes = codes.reshape(m, groups * g)[:, :k]
    return pack_nibbles(codes), sf


def nvfp4_reference(x: torch.Tensor, global_scale: float | None):
    """(packed uint8 (m, k/2), scale codes uint8 (m, k/16)) for finite inputs."""
    x32 = _np32(x)
    m, k = x32.shape
    blocks = x32.reshape(m, k // 16, 16)
    amax = np.abs(blocks).max(axis=2)
    if global_scale is None:
        raw = (amax / np.float32(6.0)).astype(np.float32)
        sf_code = e4m3_codes(raw.astype(np.float64))
        sf = E4M3_VALUES[sf_code].astype(np.float32)
        with np.errstate(divide="ignore"):
            inv = np.where(sf > 0, np.float32(1.0) / sf, np.float32(0.0)).astype(np.float32)
        y = (blocks * inv[..., None]).astype(np.float32)
    else:
        g32 = np.float32(global_scale)
        raw = (amax / np.float32(6.0 * global_scale)).astype(np.float32)
        raw = np.clip(raw, np.float32(2.0**-9), np.float32(448.0))
        sf_code = e4m3_codes(raw.astype(np.float64))
        sf = E4M3_VALUES[sf_code].astype(np.float32)
        y = (blocks / (sf * g32).astype(np.float32)[..., None]).astype(np.float32)
    codes = e2m1_codes(y.astype(np.float64), "deepgemm").reshape(m, k)
    return pack_nibbles(codes), sf_code


def mxfp8_reference(x: torch.Tensor, g: int, rule: str, saturate: bool):
    """(codes uint8 (m, k), scale bytes (m, G)) for the AITER/OCP MXFP8 conventions, finite inputs."""
    x32 = _np32(x)
    m, k = x32.shape
    grouped = x32.reshape(m, k // g, g)
    amax = np.abs(grouped).max(axis=2)
    byte = np.vectorize(lambda a: mx_scale_byte(a, "e4m3", rule))(amax)
    sf = np.ldexp(np.float32(1.0), byte - 127).astype(np.float32)
    y = (grouped / sf[..., None]).astype(np.float64)
    if saturate:
        y = np.clip(y, -448.0, 448.0)
    return e4m3_codes(y).reshape(m, k), byte.astype(np.uint8)


@pytest.fixture(scope="session")
def ref() -> SimpleNamespace:
    """Namespace of the oracles above."""
    return SimpleNamespace(
        E4M3_VALUES=E4M3_VALUES,
        E4M3_POS=E4M3_POS,
        E2M1_VALUES=E2M1_VALUES,
        E4M3_SATURATES=E4M3_SATURATES,
        e4m3_codes=e4m3_codes,
        e2m1_codes=e2m1_codes,
        pack_nibbles=pack_nibbles,
        floor_log2=floor_log2,
        ceil_log2=ceil_log2,
        ceil_pow2_deepgemm=ceil_pow2_deepgemm,
        f32=f32,
        mx_scale_byte=mx_scale_byte,
        fp8_reference=fp8_reference,
        fp8_block_reference=fp8_block_reference,
        mxfp4_reference=mxfp4_reference,
        nvfp4_reference=nvfp4_reference,
        mxfp8_reference=mxfp8_reference,
    )


def as_bytes(t: torch.Tensor) -> np.ndarray:
    """Raw bytes of a 1-byte tensor as a numpy uint8 array."""
    return t.detach().cpu().contiguous().view(torch.uint8).numpy()


@pytest.fixture(scope="session")
def to_bytes():
    """``as_bytes`` as a fixture."""
    return as_bytes


def same_bits(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Bitwise equality on CPU copies, except that all NaNs count as equal.

    The sign and payload of a NaN that an operation creates are the device's (x86 CPUs produce
    0xFFC00000, NVIDIA GPUs 0x7FFFFFFF), so NaN bits may legitimately differ across devices.
    """
    a, b = a.detach().cpu().contiguous(), b.detach().cpu().contiguous()
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    if a.dtype.is_floating_point:
        nan_a, nan_b = torch.isnan(a), torch.isnan(b)
        if not torch.equal(nan_a, nan_b):
            return False
        view = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}[a.element_size()]
        return torch.equal(a.view(view)[~nan_a], b.view(view)[~nan_b])
    return torch.equal(a, b)


@pytest.fixture(scope="session")
def same():
    """``same_bits`` as a fixture."""
    return same_bits
