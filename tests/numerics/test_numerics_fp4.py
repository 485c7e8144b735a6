"""MXFP4 (E2M1 + UE8M0 per 32) in the DeepGEMM, AITER and OCP conventions, against oracles."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from moe_oracle.numerics import (
    dequantize_mxfp4,
    e2m1_to_float,
    fp32_to_ue8m0_bytes,
    quantize_mxfp4,
    unpack_e2m1,
    unpack_int32_to_ue8m0,
)

AITER_MODES = ["round_up", "round_down", "even", "ceil", "aiter_legacy"]
TIES_DOWN = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0]  # 0.25 0.75 1.25 1.75 2.5 3.5 5 -> towards zero
TIES_EVEN = [0.0, 1.0, 1.0, 2.0, 2.0, 4.0, 4.0]  # -> the even code


def _rand(shape, dtype=torch.bfloat16, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(*shape, generator=g) * torch.logspace(-5, 5, shape[0]).unsqueeze(1)
    return x.to(dtype)


def _scale_bytes(scales: torch.Tensor) -> np.ndarray:
    return fp32_to_ue8m0_bytes(scales).numpy()


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32])
@pytest.mark.parametrize(("k", "g"), [(256, 32), (96, 32), (300, 32), (256, 128), (64, 16), (2, 32)])
def test_deepgemm_mxfp4_matches_oracle(ref, dtype, k, g):
    x = _rand((20, k), dtype, seed=k)
    fp4, sf = quantize_mxfp4(x, g)
    packed, sf_ref = ref.mxfp4_reference(x, g, "deepgemm")
    assert fp4.dtype == torch.uint8 and fp4.shape == (20, k // 2)
    assert sf.dtype == torch.float32 and sf.shape == (20, -(-k // g))
    assert np.array_equal(fp4.numpy(), packed)
    assert np.array_equal(sf.numpy(), sf_ref)


@pytest.mark.parametrize("mode", AITER_MODES)
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16, torch.float32])
def test_aiter_mxfp4_matches_oracle(ref, mode, dtype):
    x = (
        _rand((20, 256), dtype, seed=3)
        if dtype != torch.float16
        else _rand((20, 256), torch.float32).clamp(-6e4, 6e4).half()
    )
    fp4, sf = quantize_mxfp4(x, 32, "aiter", round_mode=mode)
    packed, sf_ref = ref.mxfp4_reference(x, 32, "aiter", mode)
    assert np.array_equal(fp4.numpy(), packed)
    assert np.array_equal(sf.numpy(), sf_ref)


def test_aiter_round_mode_ints_and_errors():
    x = _rand((4, 64), torch.float32)
    for i, name in enumerate(["round_down", "round_up", "even", "ceil"]):
        a = quantize_mxfp4(x, 32, "aiter", round_mode=i)
        b = quantize_mxfp4(x, 32, "aiter", round_mode=name)
        assert torch.equal(a[0], b[0]) and torch.equal(a[1], b[1])
    with pytest.raises(ValueError):
        quantize_mxfp4(x, 32, "aiter", round_mode=7)
    with pytest.raises(ValueError):
        quantize_mxfp4(x, 32, "deepgemm", round_mode="even")
    with pytest.raises(ValueError):
        quantize_mxfp4(x[:, :48], 32, "aiter")  # K must be a multiple of the group
    with pytest.raises(ValueError):
        quantize_mxfp4(x[:, :33], 32)  # odd K cannot be packed
    with pytest.raises(ValueError):
        quantize_mxfp4(x, 32, "mx")  # type: ignore[arg-type]


def test_ocp_matches_spec_oracle_and_aiter_round_down(ref):
    x = _rand((20, 256), torch.float32, seed=5)
    fp4, sf = quantize_mxfp4(x, 32, "ocp")
    packed, sf_ref = ref.mxfp4_reference(x, 32, "aiter", "ocp")
    assert np.array_equal(fp4.numpy(), packed) and np.array_equal(sf.numpy(), sf_ref)
    rd = quantize_mxfp4(x, 32, "aiter", round_mode="round_down")
    assert torch.equal(rd[0], fp4) and torch.equal(rd[1], sf)


def test_ties_at_group_scale(to_bytes):
    """amax 6 gives scale 1 in every convention; the ties then land exactly on midpoints."""
    ties = [0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0]
    row = torch.tensor([6.0] + ties + [-t for t in ties] + [0.0] * 17)
    for conv in ("deepgemm", "aiter", "ocp"):
        fp4, sf = quantize_mxfp4(row[None], 32, conv)
        assert float(sf[0, 0]) == 1.0
        vals = e2m1_to_float(unpack_e2m1(fp4))[0, 1:15].tolist()
        up = TIES_DOWN if conv == "deepgemm" else TIES_EVEN
        assert vals[:7] == up and vals[7:] == [-v for v in up]


def test_all_zero_groups_and_signed_zero():
    x = torch.zeros(2, 64)
    x[1, 32:] = -0.0
    x[1, :32] = torch.tensor([-1e-3] * 31 + [6.0])  # -1e-3 rounds to zero at scale 1
    fp4, sf = quantize_mxfp4(x, 32)
    assert sf.tolist() == [[2.0**-15, 2.0**-15], [1.0, 2.0**-15]]  # ceil_pow2(1e-4 / 6) for zero groups
    assert unpack_e2m1(fp4)[1, :31].tolist() == [0] * 31 and fp4[0].tolist() == [0] * 32
    assert unpack_e2m1(fp4)[1, 32:].tolist() == [0] * 32  # DeepGEMM drops the sign of zero
    fp4, sf = quantize_mxfp4(x, 32, "aiter")
    assert _scale_bytes(sf).tolist() == [[0, 0], [127, 0]]  # AITER: byte 0 (2**-127), no clamp
    assert unpack_e2m1(fp4)[1, :31].tolist() == [8] * 31  # AITER keeps -0 (code 0x8)
    assert unpack_e2m1(fp4)[1, 32:].tolist() == [8] * 32 and fp4[0].tolist() == [0] * 32


def test_tiny_group_hits_the_deepgemm_clamp(ref):
    x = torch.full((1, 32), 3e-6)
    fp4, sf = quantize_mxfp4(x, 32)
    assert float(sf[0, 0]) == 2.0**-15  # max(3e-6, 1e-4) / 6 rounded up
    packed, _ = ref.mxfp4_reference(x, 32, "deepgemm")
    assert np.array_equal(fp4.numpy(), packed)  # 3e-6 * 2**15 = 0.098 -> 0
    fp4, sf = quantize_mxfp4(x, 32, "aiter")
    assert float(sf[0, 0]) == 2.0**-20 and float(e2m1_to_float(unpack_e2m1(fp4))[0, 0]) == 3.0  # 3.15 -> 3


def test_outlier_group(ref):
    x = torch.full((1, 32), 0.3)
    x[0, 7] = -1000.0
    fp4, sf = quantize_mxfp4(x, 32)
    assert float(sf[0, 0]) == 256.0  # ceil_pow2(1000 / 6)
    deq = dequantize_mxfp4(fp4, sf)
    assert float(deq[0, 7]) == -1024.0 and float(deq[0, 0]) == 0.0
    fp4, sf = quantize_mxfp4(x, 32, "ocp")
    assert float(sf[0, 0]) == 128.0  # 2**(floor(log2 1000) - 2)
    assert float(dequantize_mxfp4(fp4, sf)[0, 7]) == -768.0  # 1000 / 128 = 7.8 saturates to 6


def test_nonfinite_behaviour():
    x = torch.ones(3, 32)
    x[0, 1] = math.nan
    x[1, 2] = math.inf
    x[2, 3] = -math.inf
    fp4, sf = quantize_mxfp4(x, 32)
    assert sf[:, 0].tolist() == [2.0**127] * 3
    codes = unpack_e2m1(fp4)
    assert codes[0].tolist() == [0] * 32  # NaN -> 0, 1 / 2**127 -> 0
    assert int(codes[1, 2]) == 0x7 and int(codes[2, 3]) == 0xF and int(codes[1, 0]) == 0
    fp4, sf = quantize_mxfp4(x, 32, "aiter")
    assert torch.isnan(sf).all() and _scale_bytes(sf).tolist() == [[255]] * 3
    assert torch.isnan(dequantize_mxfp4(fp4, sf)).all()


def test_packed_scales_and_dequantize():
    x = _rand((6, 64), torch.bfloat16)  # 2 groups: padded with 1.0 to 4
    fp4, sf = quantize_mxfp4(x, 32)
    fp4p, sfp = quantize_mxfp4(x, 32, packed=True)
    assert torch.equal(fp4, fp4p) and sfp.dtype == torch.int32 and sfp.shape == (6, 1)
    unpacked = unpack_int32_to_ue8m0(sfp)
    assert torch.equal(unpacked[:, :2], sf) and torch.all(unpacked[:, 2:] == 1.0)
    assert torch.equal(dequantize_mxfp4(fp4p, sfp), dequantize_mxfp4(fp4, sf))
    assert torch.equal(dequantize_mxfp4(fp4, fp32_to_ue8m0_bytes(sf)), dequantize_mxfp4(fp4, sf))
    deq = dequantize_mxfp4(fp4, sf)
    assert torch.equal(deq, e2m1_to_float(unpack_e2m1(fp4)) * sf.repeat_interleave(32, 1))


def test_leading_dims():
    x = _rand((6, 128), torch.float32).reshape(2, 3, 128)
    for conv in ("deepgemm", "aiter"):
        fp4, sf = quantize_mxfp4(x, 32, conv)
        fp4b, sfb = quantize_mxfp4(x.reshape(6, 128), 32, conv)
        assert fp4.shape == (2, 3, 64) and sf.shape == (2, 3, 4)
        assert torch.equal(fp4.reshape(6, 64), fp4b) and torch.equal(sf.reshape(6, 4), sfb)


def _half_spacing(y: torch.Tensor) -> torch.Tensor:
    """Half the E2M1 grid spacing at |y| (0.25 below 2, 0.5 in [2, 4), 1 above)."""
    a = y.abs()
    return torch.where(a < 2, 0.25, torch.where(a < 4, 0.5, 1.0)).double()


ROWS = hnp.arrays(
    np.float32,
    st.tuples(st.integers(1, 3), st.sampled_from([32, 64, 96])),
    elements=st.floats(-1e5, 1e5, width=32),
)


@settings(max_examples=60, deadline=None)
@given(ROWS, st.sampled_from(["deepgemm", "aiter", "ocp"]))
def test_mxfp4_round_trip_error_bound(ref, x_np, conv):
    """|dequant(quant(x)) - x| <= half the E2M1 spacing at the group's scale (plus saturation for OCP)."""
    x = torch.from_numpy(x_np)
    fp4, sf = quantize_mxfp4(x, 32, conv)
    packed, sf_ref = ref.mxfp4_reference(
        x, 32, conv, None if conv == "deepgemm" else ("round_up" if conv == "aiter" else "ocp")
    )
    assert np.array_equal(fp4.numpy(), packed) and np.array_equal(sf.numpy(), sf_ref)
    scale = sf.repeat_interleave(32, 1).double()
    y = x.double() / scale
    err = (dequantize_mxfp4(fp4, sf).double() - x.double()).abs()
    overflow = (y.abs() - 6.0).clamp(min=0)
    assert torch.all(err <= (torch.maximum(_half_spacing(y), overflow)) * scale * (1 + 2.0**-20))
    if conv != "ocp":  # ceil-type scales never saturate
        assert torch.all(y.abs() <= 6.0)
