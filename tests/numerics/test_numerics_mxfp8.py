"""MXFP8 (E4M3 + UE8M0 per 32) in the DeepGEMM, AITER and OCP conventions."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from moe_oracle.numerics import (
    dequantize_mxfp8,
    fp32_to_ue8m0_bytes,
    quantize_fp8,
    quantize_mxfp8,
    unpack_int32_to_ue8m0,
)


def _rand(shape, dtype=torch.bfloat16, seed=0):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(*shape, generator=g) * torch.logspace(-5, 5, shape[0]).unsqueeze(1)).to(dtype)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32])
def test_deepgemm_mxfp8_is_per_token_ue8m0_fp8(ref, to_bytes, dtype):
    x = _rand((16, 256), dtype)
    v, s = quantize_mxfp8(x)
    v2, s2 = quantize_fp8(x, 32, "ue8m0")
    assert torch.equal(v.view(torch.uint8), v2.view(torch.uint8)) and torch.equal(s, s2)
    codes, sf = ref.fp8_reference(x, 32, True)
    assert np.array_equal(to_bytes(v), codes) and np.array_equal(s.numpy(), sf)


@pytest.mark.parametrize("mode", ["round_up", "round_down", "even", "ceil", "aiter_legacy"])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32])
def test_aiter_mxfp8_matches_oracle(ref, to_bytes, mode, dtype):
    x = _rand((16, 256), dtype, seed=2)
    v, s = quantize_mxfp8(x, convention="aiter", round_mode=mode)
    codes, byte = ref.mxfp8_reference(x, 32, mode, saturate=False)
    assert np.array_equal(to_bytes(v), codes)
    assert np.array_equal(fp32_to_ue8m0_bytes(s).numpy(), byte)


def test_ocp_mxfp8_matches_oracle_and_saturates(ref, to_bytes):
    x = _rand((16, 256), torch.float32, seed=4)
    x[0, :32] = 500.0  # floor(log2 500) - 8 = 0: 500 > 448 saturates
    v, s = quantize_mxfp8(x, convention="ocp")
    codes, byte = ref.mxfp8_reference(x, 32, "ocp", saturate=True)
    assert np.array_equal(to_bytes(v), codes) and np.array_equal(fp32_to_ue8m0_bytes(s).numpy(), byte)
    assert float(s[0, 0]) == 1.0 and torch.all(v[0, :32].float() == 448.0)


def test_zero_groups_and_deepgemm_vs_aiter_agreement(to_bytes):
    x = _rand((8, 128), torch.bfloat16)
    x[0, :32] = 0.0
    x[1, 32:64] = -0.0
    x[2, :32] = 1e-6
    dg_v, dg_s = quantize_mxfp8(x)
    ai_v, ai_s = quantize_mxfp8(x, convention="aiter")
    assert fp32_to_ue8m0_bytes(dg_s)[0, 0] == 105 and fp32_to_ue8m0_bytes(ai_s)[0, 0] == 0
    assert np.all(to_bytes(dg_v)[1, 32:64] == 0x80) and np.all(to_bytes(ai_v)[1, 32:64] == 0x80)
    assert float(dg_s[2, 0]) == 2.0**-22 and float(ai_s[2, 0]) == 2.0**-28  # clamp vs none
    normal = x.float().abs().view(8, 4, 32).amax(dim=2) >= float(np.float32(1e-4))
    assert 0 < int(normal.sum()) < 32
    assert torch.equal(dg_s[normal], ai_s[normal])  # amax >= 1e-4: identical scales and bytes
    keep = normal.repeat_interleave(32, 1)
    assert np.array_equal(to_bytes(dg_v)[keep.numpy()], to_bytes(ai_v)[keep.numpy()])


def test_nonfinite_behaviour(to_bytes):
    x = torch.ones(2, 32)
    x[0, 1] = math.nan
    x[1, 2] = math.inf
    v, s = quantize_mxfp8(x, convention="aiter")
    assert fp32_to_ue8m0_bytes(s).tolist() == [[255], [255]]
    assert torch.isnan(v.float()).all()
    v, s = quantize_mxfp8(x, convention="ocp")
    assert torch.isnan(s).all() and torch.isnan(v.float()).all()


def test_packed_and_dequantize():
    x = _rand((4, 96), torch.bfloat16)  # 3 groups -> padded to 4
    for conv in ("deepgemm", "aiter", "ocp"):
        v, s = quantize_mxfp8(x, convention=conv)
        vp, sp = quantize_mxfp8(x, packed=True, convention=conv)
        assert torch.equal(v.view(torch.uint8), vp.view(torch.uint8)) and sp.shape == (4, 1)
        assert torch.equal(unpack_int32_to_ue8m0(sp)[:, :3], s)
        deq = dequantize_mxfp8(v, s)
        assert torch.equal(deq, dequantize_mxfp8(vp, sp))
        assert torch.equal(deq, v.float() * s.repeat_interleave(32, 1))
    with pytest.raises(ValueError):
        quantize_mxfp8(x[:, :40], convention="aiter")
    with pytest.raises(ValueError):
        quantize_mxfp8(x, convention="ocp", round_mode="even")


ROWS = hnp.arrays(
    np.float32,
    st.tuples(st.integers(1, 3), st.sampled_from([32, 64])),
    elements=st.floats(-1e6, 1e6, width=32),
)


@settings(max_examples=50, deadline=None)
@given(ROWS, st.sampled_from(["deepgemm", "aiter", "ocp"]))
def test_mxfp8_round_trip_error_bound(x_np, conv):
    x = torch.from_numpy(x_np)
    v, s = quantize_mxfp8(x, convention=conv)
    scale = s.repeat_interleave(32, 1).double()
    y = x.double() / scale
    ulp = torch.exp2(torch.floor(torch.log2(y.abs().clamp(min=2.0**-30))).clamp(min=-6) - 3)
    excess = (y.abs() - 448).clamp(min=0)  # OCP's floor scale can need saturation
    err = (dequantize_mxfp8(v, s).double() - x.double()).abs()
    assert torch.all(err <= torch.maximum(0.5 * ulp, excess) * scale * (1 + 2.0**-20))
    if conv != "ocp":
        assert torch.all(y.abs() <= 448)
