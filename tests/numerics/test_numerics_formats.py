"""Exhaustive code-table tests: E2M1, E4M3, UE8M0 bytes, int32 packing, nibble packing, scale rules."""

from __future__ import annotations

import math
import struct

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from moe_oracle.numerics import (
    ceil_to_ue8m0,
    e2m1_to_float,
    float_to_e2m1,
    fp32_to_ue8m0_bytes,
    mx_scale_bytes,
    pack_e2m1,
    pack_ue8m0_to_int32,
    ue8m0_bytes_to_fp32,
    unpack_e2m1,
    unpack_int32_to_ue8m0,
    unpack_int32_to_ue8m0_bytes,
)
from moe_oracle.numerics import formats as F

FP32 = st.floats(width=32, allow_nan=False, allow_infinity=False)
POS_FP32 = st.floats(min_value=0.0, width=32, allow_nan=False, allow_infinity=False)


def _bits(t: torch.Tensor) -> np.ndarray:
    return t.float().contiguous().view(torch.int32).numpy()


# --------------------------------------------------------------------------------------------
# formats.py tables
# --------------------------------------------------------------------------------------------
def test_e2m1_table_matches_bit_fields(ref):
    assert len(F.E2M1_VALUES) == 16
    for code in range(16):
        assert math.copysign(1, F.E2M1_VALUES[code]) == math.copysign(1, ref.E2M1_VALUES[code])
        assert F.E2M1_VALUES[code] == ref.E2M1_VALUES[code]
        assert F.e2m1_code_to_float(code) == ref.E2M1_VALUES[code]
    assert max(F.E2M1_VALUES) == F.E2M1_MAX
    mids = [(a + b) / 2 for a, b in zip(F.E2M1_MAGNITUDES, F.E2M1_MAGNITUDES[1:], strict=False)]
    assert tuple(mids) == F.E2M1_MIDPOINTS
    assert sorted(F.E2M1_MIDPOINTS_TIE_DOWN_UNDER_RNE + F.E2M1_MIDPOINTS_TIE_UP_UNDER_RNE) == list(mids)


def test_e4m3_table_matches_bit_fields_and_torch(ref):
    torch_vals = torch.arange(256, dtype=torch.uint8).view(torch.float8_e4m3fn).float().numpy()
    for code in range(256):
        expected = ref.E4M3_VALUES[code]
        if code in F.FP8_E4M3_NAN_CODES:
            assert math.isnan(expected) and math.isnan(F.e4m3_code_to_float(code))
            assert math.isnan(torch_vals[code])
            continue
        assert F.e4m3_code_to_float(code) == expected
        assert torch_vals[code] == expected
        assert math.copysign(1, torch_vals[code]) == math.copysign(1, expected)
    assert F.FP8_E4M3_MAX == ref.E4M3_VALUES[0x7E] == 448.0
    assert ref.E4M3_VALUES[0x01] == F.FP8_E4M3_MIN_SUBNORMAL
    assert ref.E4M3_VALUES[0x08] == F.FP8_E4M3_MIN_NORMAL


def test_ue8m0_byte_decoder():
    for b in range(255):
        assert F.ue8m0_byte_to_float(b) == 2.0 ** (b - 127)
    assert math.isnan(F.ue8m0_byte_to_float(255))


# --------------------------------------------------------------------------------------------
# E4M3: all 256 bit patterns through torch's cast (what every FP8 quantizer relies on)
# --------------------------------------------------------------------------------------------
def test_every_e4m3_code_requantizes_to_itself(ref):
    """Dequantize each non-NaN code (0x7F, 0xFF skipped: NaN has no value to round-trip) and cast back."""
    codes = [c for c in range(256) if c not in F.FP8_E4M3_NAN_CODES]
    values = torch.tensor([ref.E4M3_VALUES[c] for c in codes], dtype=torch.float32)
    expected = torch.tensor(codes, dtype=torch.uint8)
    assert torch.equal(values.to(torch.float8_e4m3fn).view(torch.uint8), expected)
    assert np.array_equal(ref.e4m3_codes(values.double().numpy()), np.array(codes, dtype=np.uint8))
    nan = torch.tensor([math.nan]).to(torch.float8_e4m3fn).view(torch.uint8)
    assert int(nan[0]) & 0x7F == 0x7F


def test_e4m3_ties_round_to_even(ref):
    """Every midpoint between consecutive non-negative E4M3 values, both signs."""
    pos = ref.E4M3_POS
    mids = (pos[:-1] + pos[1:]) / 2
    for sign in (1.0, -1.0):
        v = torch.tensor(sign * mids, dtype=torch.float32)
        got = v.to(torch.float8_e4m3fn).view(torch.uint8).numpy()
        assert np.array_equal(got, ref.e4m3_codes(sign * mids))
        assert np.all(got & 1 == 0)  # even code (mantissa LSB 0) on every tie


def test_e4m3_overflow_rule_is_the_detected_torch_rule(ref):
    v = torch.tensor([448.0, 460.0, 464.0, 465.0, 479.0, 480.0, 1e6, math.inf, -math.inf])
    got = v.to(torch.float8_e4m3fn).view(torch.uint8).numpy()
    assert np.array_equal(got[:3], [0x7E, 0x7E, 0x7E])  # 464 is the 448/480 tie: even (448)
    assert np.array_equal(got, ref.e4m3_codes(v.double().numpy()))


# --------------------------------------------------------------------------------------------
# E2M1 codes
# --------------------------------------------------------------------------------------------
def test_every_fp4_code_round_trips():
    codes = torch.arange(16, dtype=torch.uint8)
    values = e2m1_to_float(codes)
    assert torch.equal(values, torch.tensor(F.E2M1_VALUES))
    assert torch.equal(torch.signbit(values), torch.tensor([c >= 8 for c in range(16)]))
    assert torch.equal(float_to_e2m1(values, "rne"), codes)
    # DeepGEMM never emits negative zero: code 8 (-0.0) re-quantizes to code 0
    expected_dg = codes.clone()
    expected_dg[8] = 0
    assert torch.equal(float_to_e2m1(values, "deepgemm"), expected_dg)


@pytest.mark.parametrize("rounding", ["deepgemm", "rne"])
def test_e2m1_ties_and_specials(ref, rounding):
    mags = [0.0, 0.25, 0.5, 0.75, 1.0, 1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 3.5, 4.0, 5.0, 6.0, 6.5, 7.0, 1e30]
    mags += [2.0**-149, 2.0**-126, 0.2499999, 0.2500001, 0.7499999, 0.7500001, 4.9999995, 5.0000005]
    v = np.array([s * m for m in mags for s in (1.0, -1.0)] + [math.inf, -math.inf], dtype=np.float32)
    got = float_to_e2m1(torch.from_numpy(v), rounding).numpy()
    assert np.array_equal(got, ref.e2m1_codes(v.astype(np.float64), rounding))


def test_e2m1_tie_directions_documented():
    ties = torch.tensor([0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0])
    dg = e2m1_to_float(float_to_e2m1(ties, "deepgemm")).tolist()
    rne = e2m1_to_float(float_to_e2m1(ties, "rne")).tolist()
    assert dg == [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0]  # DeepGEMM: ties towards zero
    assert rne == [0.0, 1.0, 1.0, 2.0, 2.0, 4.0, 4.0]  # AITER/OCP: ties to the even code


def test_e2m1_nan_and_signed_zero():
    nan_bits = torch.tensor([0x7FC00000, 0xFFC00000 - 2**32, 0x7F800001, 0x7FFFFFFF], dtype=torch.int32)
    nans = nan_bits.view(torch.float32)
    assert float_to_e2m1(nans, "deepgemm").tolist() == [0, 0, 0, 0]
    # torchao/AITER bit trick: payload dependent, 3 for the default quiet NaN; sign bit kept
    assert float_to_e2m1(nans, "rne").tolist() == [0x3, 0xB, 0x2, 0x4]
    z = torch.tensor([0.0, -0.0, -0.1, -1e-30])
    assert float_to_e2m1(z, "deepgemm").tolist() == [0, 0, 0, 0]
    assert float_to_e2m1(z, "rne").tolist() == [0, 8, 8, 8]


@settings(max_examples=60, deadline=None)
@given(st.lists(FP32, min_size=1, max_size=64), st.sampled_from(["deepgemm", "rne"]))
def test_e2m1_matches_bruteforce_nearest(ref, values, rounding):
    v = np.array(values, dtype=np.float32)
    got = float_to_e2m1(torch.from_numpy(v), rounding).numpy()
    assert np.array_equal(got, ref.e2m1_codes(v.astype(np.float64), rounding))


def test_nibble_pack_unpack_all_bytes():
    all_bytes = torch.arange(256, dtype=torch.uint8)
    codes = unpack_e2m1(all_bytes)
    assert codes.shape == (512,)
    assert torch.equal(codes[0::2], all_bytes % 16)  # element 2i: low nibble
    assert torch.equal(codes[1::2], all_bytes // 16)
    assert torch.equal(pack_e2m1(codes), all_bytes)
    # int8 and float4_e2m1fn_x2 storage are accepted
    assert torch.equal(unpack_e2m1(all_bytes.view(torch.int8)), codes)
    if F.FLOAT4_E2M1_X2_DTYPE is not None:
        assert torch.equal(unpack_e2m1(all_bytes.view(F.FLOAT4_E2M1_X2_DTYPE)), codes)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(0, 15), min_size=2, max_size=64).filter(lambda c: len(c) % 2 == 0))
def test_nibble_pack_matches_arithmetic(ref, codes):
    c = np.array(codes, dtype=np.uint8).reshape(1, -1)
    packed = pack_e2m1(torch.from_numpy(c))
    assert np.array_equal(packed.numpy(), ref.pack_nibbles(c))
    assert np.array_equal(unpack_e2m1(packed).numpy(), c)


def test_pack_e2m1_rejects_odd_length():
    with pytest.raises(ValueError):
        pack_e2m1(torch.zeros(3, dtype=torch.uint8))


# --------------------------------------------------------------------------------------------
# UE8M0
# --------------------------------------------------------------------------------------------
def test_every_ue8m0_byte_round_trips():
    b = torch.arange(255, dtype=torch.uint8)
    sf = ue8m0_bytes_to_fp32(b)
    assert [float(s) for s in sf] == [2.0 ** (i - 127) for i in range(255)]
    assert torch.equal(fp32_to_ue8m0_bytes(sf), b)
    assert _bits(sf[:1])[0] == F.FP32_SUBNORMAL_2_POW_M127_BITS
    nan = ue8m0_bytes_to_fp32(torch.tensor([255], dtype=torch.uint8))
    assert torch.isnan(nan).all()
    assert int(fp32_to_ue8m0_bytes(nan)[0]) == 255
    if F.FLOAT8_E8M0_DTYPE is not None:  # torch's own e8m0 dtype decodes the same way
        as_torch = torch.arange(256, dtype=torch.uint8).view(F.FLOAT8_E8M0_DTYPE).float()
        ours = ue8m0_bytes_to_fp32(torch.arange(256, dtype=torch.uint8))
        assert torch.equal(as_torch[:255], ours[:255]) and torch.isnan(as_torch[255])


@pytest.mark.parametrize("bad", [0.0, -1.0, 3.0, math.inf, 2.0**-128, 1.5 * 2.0**-127])
def test_fp32_to_ue8m0_bytes_rejects_non_ue8m0(bad):
    with pytest.raises(ValueError):
        fp32_to_ue8m0_bytes(torch.tensor([bad], dtype=torch.float32))
    fp32_to_ue8m0_bytes(torch.tensor([bad], dtype=torch.float32), check=False)  # no error


def test_ceil_to_ue8m0_edges(ref):
    v = [0.0, -0.0, 2.0**-149, 2.0**-127, 2.0**-126, 1.0, 1.0000001, 0.75, -3.0, 2.0**127, 2.0**127 * 1.5]
    v += [3.4e38, math.inf, -math.inf, math.nan]
    got = ceil_to_ue8m0(torch.tensor(v, dtype=torch.float32)).tolist()
    assert got == [ref.ceil_pow2_deepgemm(x) for x in v]
    assert got[-3:] == [2.0**127] * 3  # inf and NaN hit the clamp at exponent 254
    assert ceil_to_ue8m0(torch.tensor([1.5], dtype=torch.bfloat16)).dtype == torch.float32


@settings(max_examples=80, deadline=None)
@given(st.lists(FP32, min_size=1, max_size=32))
def test_ceil_to_ue8m0_matches_math(ref, values):
    got = ceil_to_ue8m0(torch.tensor(values, dtype=torch.float32)).tolist()
    assert got == [ref.ceil_pow2_deepgemm(ref.f32(x)) for x in values]


def _pack_oracle(b: np.ndarray) -> np.ndarray:
    """Little-endian 4-byte groups -> signed int32 via struct (independent of tensor views)."""
    rows = []
    for row in b:
        words = [struct.unpack("<i", bytes(int(x) for x in row[i : i + 4]))[0] for i in range(0, len(row), 4)]
        rows.append(words)
    return np.array(rows, dtype=np.int32)


def test_pack_ue8m0_int32_layout_and_round_trip():
    g = torch.Generator().manual_seed(0)
    b = torch.randint(0, 255, (5, 16), dtype=torch.uint8, generator=g)
    b[0, :4] = torch.tensor([1, 2, 3, 254], dtype=torch.uint8)
    sf = ue8m0_bytes_to_fp32(b)
    packed = pack_ue8m0_to_int32(sf)
    assert packed.dtype == torch.int32 and packed.shape == (5, 4)
    assert np.array_equal(packed.numpy(), _pack_oracle(b.numpy()))
    assert int(packed[0, 0]) == int.from_bytes(bytes([1, 2, 3, 254]), "little", signed=True)  # group 0 = LSB
    assert torch.equal(pack_ue8m0_to_int32(b), packed)  # bytes in, same words
    assert torch.equal(unpack_int32_to_ue8m0_bytes(packed), b)
    assert np.array_equal(_bits(unpack_int32_to_ue8m0(packed)), _bits(sf))


def test_pack_ue8m0_padding():
    sf = torch.tensor([[2.0, 0.5, 4.0], [1.0, 1.0, 1.0]])
    with pytest.raises(ValueError):
        pack_ue8m0_to_int32(sf)
    packed = pack_ue8m0_to_int32(sf, pad_value=1.0)
    assert packed.shape == (2, 1)
    assert unpack_int32_to_ue8m0_bytes(packed).tolist() == [[128, 126, 129, 127], [127, 127, 127, 127]]


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(0, 255), min_size=4, max_size=64).filter(lambda b: len(b) % 4 == 0))
def test_int32_pack_round_trip_any_bytes(values):
    b = torch.tensor([values], dtype=torch.uint8)
    packed = pack_ue8m0_to_int32(b)
    assert np.array_equal(packed.numpy(), _pack_oracle(b.numpy()))
    assert torch.equal(unpack_int32_to_ue8m0_bytes(packed), b)


# --------------------------------------------------------------------------------------------
# MX scale rules
# --------------------------------------------------------------------------------------------
RULES = ["deepgemm", "round_up", "round_down", "ocp", "even", "ceil", "aiter_legacy"]


def _edge_amaxes() -> list[float]:
    v = [0.0, 2.0**-149, 2.0**-127, 2.0**-126, 1e-30, 1e-4, 1.0, 1.5, 1.75, 1.875, 6.0, 7.0, 448.0, 500.0]
    v += [2.0**-124 * (1 - 2.0**-24), 2.0**-118 * (1 - 2.0**-24), 2.0**127, 3.4e38, 6 * 2.0**-126]
    v += [1.0 + 2.0**-23, 2.0 - 2.0**-23, 3.0, 3.5, 0.1]
    return v


@pytest.mark.parametrize("element", ["e2m1", "e4m3"])
@pytest.mark.parametrize("rule", RULES)
def test_mx_scale_rules_edges(ref, rule, element):
    amax = _edge_amaxes()
    got = mx_scale_bytes(torch.tensor(amax, dtype=torch.float32), element=element, rule=rule).tolist()
    assert got == [ref.mx_scale_byte(a, element, rule) for a in amax]


@pytest.mark.parametrize("rule", RULES)
def test_mx_scale_rules_nonfinite(rule):
    got = mx_scale_bytes(torch.tensor([math.nan, math.inf]), element="e2m1", rule=rule).tolist()
    assert got == ([254, 254] if rule == "deepgemm" else [255, 255])


@settings(max_examples=60, deadline=None)
@given(
    st.lists(POS_FP32, min_size=1, max_size=16),
    st.sampled_from(RULES),
    st.sampled_from(["e2m1", "e4m3"]),
)
def test_mx_scale_rules_match_math(ref, amax, rule, element):
    got = mx_scale_bytes(torch.tensor(amax, dtype=torch.float32), element=element, rule=rule).tolist()
    assert got == [ref.mx_scale_byte(a, element, rule) for a in amax]


def test_ocp_equals_round_down_but_one_value():
    """Dense scan of fp32 amax over [2**-130, 2**-110]: the rules differ at one value per element."""
    lo = np.array([2.0**-130], dtype=np.float32).view(np.int32)[0]
    hi = np.array([2.0**-110], dtype=np.float32).view(np.int32)[0]
    a = torch.from_numpy(np.arange(lo, hi, 97, dtype=np.int32).view(np.float32))
    specials = torch.tensor([2.0**-124 * (1 - 2.0**-24), 2.0**-118 * (1 - 2.0**-24)])
    a = torch.cat([a, specials])
    for element, special in (("e2m1", specials[0]), ("e4m3", specials[1])):
        rd = mx_scale_bytes(a, element=element, rule="round_down")
        oc = mx_scale_bytes(a, element=element, rule="ocp")
        diff = (rd != oc).nonzero().flatten()
        assert a[diff].tolist() == [float(special)]
        assert rd[diff].tolist() == [1] and oc[diff].tolist() == [0]


def test_mx_scale_rules_known_values():
    amax = torch.tensor([6.0, 6.5, 7.0, 0.0])
    assert mx_scale_bytes(amax, element="e2m1", rule="round_up").tolist() == [127, 128, 128, 0]
    assert mx_scale_bytes(amax, element="e2m1", rule="round_down").tolist() == [127, 127, 127, 0]
    assert mx_scale_bytes(amax, element="e2m1", rule="even").tolist() == [127, 127, 128, 0]
    assert mx_scale_bytes(amax, element="e2m1", rule="deepgemm").tolist() == [127, 128, 128, 112]
    assert mx_scale_bytes(torch.zeros(1), element="e4m3", rule="deepgemm").tolist() == [105]
    with pytest.raises(ValueError):
        mx_scale_bytes(amax, element="e2m1", rule="nearest")  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        mx_scale_bytes(amax, element="e5m2", rule="ocp")  # type: ignore[arg-type]
