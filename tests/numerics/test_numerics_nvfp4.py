"""NVFP4 (E2M1 + E4M3 scale per 16, optional global scale) against independent oracles."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from moe_oracle.numerics import dequantize_nvfp4, e2m1_to_float, quantize_nvfp4, unpack_e2m1


def _rand(shape, dtype=torch.bfloat16, seed=0, decades=3):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(*shape, generator=g) * torch.logspace(-decades, decades, shape[0]).unsqueeze(1)
    return x.to(dtype)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32])
@pytest.mark.parametrize("global_scale", [None, 1.0, 0.37, 1e-3, 17.0])
def test_nvfp4_matches_oracle(ref, to_bytes, dtype, global_scale):
    x = _rand((24, 256), dtype, seed=7)
    fp4, sf = quantize_nvfp4(x, global_scale)
    packed, sf_code = ref.nvfp4_reference(x, global_scale)
    assert fp4.dtype == torch.uint8 and fp4.shape == (24, 128)
    assert sf.dtype == torch.float8_e4m3fn and sf.shape == (24, 16)
    assert np.array_equal(fp4.numpy(), packed)
    assert np.array_equal(to_bytes(sf), sf_code)


def test_every_positive_e4m3_code_is_a_reachable_block_scale(ref, to_bytes):
    """Block amax 6 * v gives the scale v exactly, for all 126 positive finite E4M3 values."""
    codes = list(range(1, 0x7F))
    amax = torch.tensor([6.0 * ref.E4M3_VALUES[c] for c in codes], dtype=torch.float32)
    x = torch.zeros(len(codes), 16)
    x[:, 0] = amax
    x[:, 1] = -amax / 2
    fp4, sf = quantize_nvfp4(x)
    assert to_bytes(sf)[:, 0].tolist() == codes
    assert unpack_e2m1(fp4)[:, :2].tolist() == [[7, 0xD]] * len(codes)  # 6 and -3
    _fp4g, sfg = quantize_nvfp4(x, 1.0)
    assert to_bytes(sfg)[:, 0].tolist() == codes
    assert torch.equal(dequantize_nvfp4(fp4, sf)[:, :2], x[:, :2])


def test_zero_block_and_scale_clamps(ref, to_bytes):
    x = torch.zeros(3, 64)
    x[1, :16] = 1e-4  # amax / 6 below half the smallest subnormal (2**-10): math.py scale rounds to 0
    x[2, :16] = 5000.0  # amax / 6 = 833 > 448
    fp4, sf = quantize_nvfp4(x)
    assert to_bytes(sf)[0].tolist() == [0, 0, 0, 0] and fp4[0].tolist() == [0] * 32
    assert to_bytes(sf)[1, 0] == 0
    assert unpack_e2m1(fp4)[1, :16].tolist() == [0] * 16  # scale 0 zeroes the block
    assert to_bytes(sf)[2, 0] == (0x7E if ref.E4M3_SATURATES else 0x7F)  # torch's cast decides
    fp4, sf = quantize_nvfp4(x, 1.0)  # nvfp4.py clamps the block scale to [2**-9, 448]
    assert to_bytes(sf)[0].tolist() == [1, 1, 1, 1] and fp4[0].tolist() == [0] * 32
    assert to_bytes(sf)[1, 0] == 1 and to_bytes(sf)[2, 0] == 0x7E
    assert unpack_e2m1(fp4)[1, :16].tolist() == [0] * 16  # 1e-4 / 2**-9 = 0.05 -> 0
    assert unpack_e2m1(fp4)[2, :16].tolist() == [7] * 16  # 5000 / 448 = 11.2 saturates to 6


def test_ties_and_signed_zero():
    ties = [0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0]
    row = torch.tensor([6.0] + ties + [-t for t in ties] + [-0.0])
    for gs in (None, 1.0):
        fp4, sf = quantize_nvfp4(row[None], gs)
        assert float(sf.float()[0, 0]) == 1.0
        codes = unpack_e2m1(fp4)[0]
        vals = e2m1_to_float(codes).tolist()
        assert vals[1:8] == [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0]  # DeepGEMM: ties towards zero
        assert vals[9:15] == [-0.5, -1.0, -1.5, -2.0, -3.0, -4.0]
        assert codes[8].item() == 0 and codes[15].item() == 0  # -0.25 and -0.0: no negative zero


def test_nonfinite_behaviour(to_bytes):
    x = torch.ones(2, 16)
    x[0, 3] = math.nan
    x[1, 4] = math.inf
    fp4, sf = quantize_nvfp4(x)
    assert math.isnan(float(sf.float()[0, 0])) and unpack_e2m1(fp4)[0].tolist() == [0] * 16
    fp4, sf = quantize_nvfp4(x, 1.0)
    assert math.isnan(float(sf.float()[0, 0])) and unpack_e2m1(fp4)[0].tolist() == [0] * 16
    assert to_bytes(sf)[1, 0] == 0x7E  # inf clamps to 448
    assert unpack_e2m1(fp4)[1, 4].item() == 7 and unpack_e2m1(fp4)[1, 0].item() == 0


def test_packed_scales_and_dequantize(to_bytes, same):
    x = _rand((8, 128), torch.bfloat16)
    for gs in (None, 0.5):
        fp4, sf = quantize_nvfp4(x, gs)
        fp4p, sfp = quantize_nvfp4(x, gs, packed_scales=True)
        assert torch.equal(fp4, fp4p) and sfp.dtype == torch.int32 and sfp.shape == (8, 2)
        assert np.array_equal(sfp.numpy().view(np.uint8).reshape(8, 8), to_bytes(sf))
        deq = dequantize_nvfp4(fp4, sf, gs)
        assert same(dequantize_nvfp4(fp4p, sfp, gs), deq)  # NaN scales possible with torch < 2.13
        block_scale = sf.float() * (1.0 if gs is None else gs)
        assert same(deq, e2m1_to_float(unpack_e2m1(fp4)) * block_scale.repeat_interleave(16, 1))
    with pytest.raises(ValueError):
        quantize_nvfp4(x[:, :48], packed_scales=True)


def test_argument_errors():
    x = torch.ones(2, 32)
    with pytest.raises(ValueError):
        quantize_nvfp4(x[:, :24])
    with pytest.raises(ValueError):
        quantize_nvfp4(x, 1.0, convention="deepgemm")
    for bad in (0.0, -1.0, math.inf, math.nan):
        with pytest.raises(ValueError):
            quantize_nvfp4(x, bad)
    with pytest.raises(ValueError):
        quantize_nvfp4(x, convention="nvidia")  # type: ignore[arg-type]
    a = quantize_nvfp4(x, convention="deepgemm_nvfp4")
    b = quantize_nvfp4(x, 1.0)
    assert torch.equal(a[0], b[0]) and torch.equal(a[1].view(torch.uint8), b[1].view(torch.uint8))


ROWS = hnp.arrays(
    np.float32,
    st.tuples(st.integers(1, 3), st.sampled_from([16, 32, 64])),
    elements=st.floats(-2000, 2000, width=32),
)


@settings(max_examples=60, deadline=None)
@given(ROWS, st.sampled_from([None, 1.0, 0.25, 3.0]))
def test_nvfp4_round_trip_error_bound(ref, to_bytes, x_np, gs):
    """Error <= half the E2M1 spacing at the block scale, or the saturation excess above 6."""
    x = torch.from_numpy(x_np)
    fp4, sf = quantize_nvfp4(x, gs)
    packed, sf_code = ref.nvfp4_reference(x, gs)
    assert np.array_equal(fp4.numpy(), packed) and np.array_equal(to_bytes(sf), sf_code)
    scale = (sf.float() * (1.0 if gs is None else gs)).repeat_interleave(16, 1).double()
    err = (dequantize_nvfp4(fp4, sf, gs).double() - x.double()).abs()
    zero_scale = scale == 0  # math.py: blocks with amax / 6 < 2**-10 are zeroed
    assert torch.all(err[zero_scale] == x.double().abs()[zero_scale])
    y = x.double()[~zero_scale] / scale[~zero_scale]
    half = torch.where(y.abs() < 2, 0.25, torch.where(y.abs() < 4, 0.5, 1.0)).double()
    bound = torch.maximum(half, (y.abs() - 6).clamp(min=0)) * scale[~zero_scale]
    assert torch.all(err[~zero_scale] <= bound * (1 + 2.0**-20))
    g = 1.0 if gs is None else gs
    normal = (scale[~zero_scale] >= 2.0**-6 * g) & (scale[~zero_scale] < 448 * g)
    assert torch.all(y.abs()[normal] <= 6 * (1 + 2.0**-4) * (1 + 2.0**-20))  # RNE E4M3 scale: <= 1/16 low
