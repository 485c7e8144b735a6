"""FP8 E4M3 per-token and per-block quantization against independent numpy/float64 oracles."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from moe_oracle.numerics import (
    dequantize_fp8,
    dequantize_fp8_block,
    pack_ue8m0_to_int32,
    quantize_fp8,
    quantize_fp8_block,
    unpack_int32_to_ue8m0,
)

F32_1E4 = float(np.float32(1e-4))
BLOCK_CASES = [(256, 384, 128, 128), (200, 300, 128, 128), (64, 96, 32, 16)]


def _rand(shape, dtype=torch.bfloat16, seed=0, spread=True):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(*shape, generator=g)
    if spread:  # rows spanning many binades (fewer for fp16, whose range ends at 65504)
        decades = 3 if dtype == torch.float16 else 6
        x = x * torch.logspace(-decades, decades, shape[0]).unsqueeze(1)
    return x.to(dtype)


def _check_against_oracle(ref, to_bytes, x, g, fmt):
    values, scales = quantize_fp8(x, g, fmt)
    codes, sf = ref.fp8_reference(x.reshape(-1, x.shape[-1]), g, fmt == "ue8m0")
    assert values.dtype == torch.float8_e4m3fn and values.shape == x.shape
    assert scales.dtype == torch.float32 and scales.shape == (*x.shape[:-1], -(-x.shape[-1] // g))
    assert np.array_equal(to_bytes(values).reshape(codes.shape), codes)
    assert np.array_equal(scales.reshape(sf.shape).numpy().view(np.int32), sf.view(np.int32))


@pytest.mark.parametrize("fmt", ["fp32", "ue8m0"])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16, torch.float32])
@pytest.mark.parametrize(("k", "g"), [(512, 128), (384, 32), (300, 128), (96, 64), (7, 4), (128, 1)])
def test_quantize_fp8_matches_oracle(ref, to_bytes, fmt, dtype, k, g):
    _check_against_oracle(ref, to_bytes, _rand((24, k), dtype, seed=k + g), g, fmt)


def test_quantize_fp8_leading_dims(ref, to_bytes):
    x = _rand((2, 3, 256), torch.bfloat16, spread=False)
    v, s = quantize_fp8(x, 128, "ue8m0")
    v2, s2 = quantize_fp8(x.reshape(6, 256), 128, "ue8m0")
    assert v.shape == (2, 3, 256) and s.shape == (2, 3, 2)
    assert torch.equal(v.view(torch.uint8).reshape(6, 256), v2.view(torch.uint8))
    assert torch.equal(s.reshape(6, 2), s2)


def test_fp8_large_random(ref, to_bytes):
    """4096 x 7168 bf16 (a DeepSeek-V3 hidden size): oracle on sampled rows, cheap bounds everywhere."""
    x = _rand((4096, 7168), torch.bfloat16, seed=1, spread=False) * 3
    x[17, 5] = 900.0  # an outlier group
    xf = x.float()
    amax = xf.abs().view(4096, 56, 128).amax(dim=2).clamp(min=F32_1E4)
    for fmt in ("fp32", "ue8m0"):
        values, scales = quantize_fp8(x, 128, fmt)
        rows = torch.tensor([0, 17, 1023, 2048, 4095])
        codes, sf = ref.fp8_reference(x[rows], 128, fmt == "ue8m0")
        assert np.array_equal(to_bytes(values[rows]), codes)
        assert np.array_equal(scales[rows].numpy(), sf)
        if fmt == "ue8m0":  # a power of two in [amax / 448, 2 * amax / 448)
            assert torch.all(scales * 448.0 >= amax) and torch.all(scales * 224.0 < amax)
            assert torch.all(torch.frexp(scales).mantissa == 0.5)
        else:
            assert torch.equal(scales, amax / 448.0)
        # half an ulp: 2**-4 relative for normals, 2**-10 * scale absolute for subnormals
        err = (dequantize_fp8(values, scales, 128) - xf).abs()
        per_elem = scales.repeat_interleave(128, 1)
        assert torch.all(err <= torch.maximum(xf.abs() * 2.0**-4, per_elem * 2.0**-10) * (1 + 2.0**-20))


def test_all_zero_and_tiny_groups(ref, to_bytes):
    x = torch.zeros(3, 256)
    x[1, :128] = 1e-7  # amax below the 1e-4 clamp
    x[1, 128:] = -3e-5
    x[2, 128:] = -0.0
    clamped = {"fp32": float(np.float32(F32_1E4) / np.float32(448.0)), "ue8m0": 2.0**-22}
    for fmt, zero_scale in clamped.items():
        v, s = quantize_fp8(x, 128, fmt)
        assert torch.all(s == zero_scale)  # every group here hits the clamp
        assert np.all(to_bytes(v[0]) == 0x00)
        assert np.all(to_bytes(v[2, :128]) == 0x00)
        assert np.all(to_bytes(v[2, 128:]) == 0x80)  # -0.0 keeps its sign
        codes, sf = ref.fp8_reference(x, 128, fmt == "ue8m0")
        assert np.array_equal(to_bytes(v), codes) and np.array_equal(s.numpy(), sf)
        assert float(v[1, 0].float()) * zero_scale == pytest.approx(1e-7, rel=2**-4)
    v, s = quantize_fp8(torch.full((1, 128), 2.0**-20), 128, "ue8m0")
    assert float(s[0, 0]) == 2.0**-22 and float(v.float()[0, 0]) == 4.0  # exact, clamp-limited scale


def test_subnormal_outputs(ref, to_bytes):
    """Anchor 448 gives scale 1: every E4M3 subnormal, and the ties between them, appear as outputs."""
    sub = np.arange(0, 9) * 2.0**-9  # 0 .. 8 * 2**-9 (the last is the smallest normal)
    halves = (np.arange(0, 8) + 0.5) * 2.0**-9
    row = np.concatenate([[448.0], sub, halves, -sub, -halves]).astype(np.float32)
    x = torch.from_numpy(row).reshape(1, -1)
    for fmt in ("fp32", "ue8m0"):
        v, s = quantize_fp8(x, x.shape[1], fmt)
        assert float(s[0, 0]) == 1.0
        assert np.array_equal(to_bytes(v)[0], ref.e4m3_codes(row.astype(np.float64)))


def test_every_e4m3_code_through_the_quantizer(ref, to_bytes):
    """Each non-NaN code c: the row [448, value(c)] has scale exactly 1 and re-quantizes to c."""
    codes = [c for c in range(256) if c not in (0x7F, 0xFF)]
    x = torch.tensor([[448.0, ref.E4M3_VALUES[c]] for c in codes], dtype=torch.float32)
    for fmt in ("fp32", "ue8m0"):
        v, s = quantize_fp8(x, 2, fmt)
        assert torch.all(s == 1.0)
        assert to_bytes(v)[:, 1].tolist() == codes
        assert torch.equal(dequantize_fp8(v, s, 2)[:, 1], x[:, 1])


def test_e4m3_ties_through_the_quantizer(ref, to_bytes):
    pos = ref.E4M3_POS
    mids = ((pos[:-1] + pos[1:]) / 2).astype(np.float32)
    row = np.concatenate([[448.0], mids, -mids]).astype(np.float32)
    v, s = quantize_fp8(torch.from_numpy(row)[None], len(row), "ue8m0")
    assert float(s[0, 0]) == 1.0
    assert np.array_equal(to_bytes(v)[0], ref.e4m3_codes(row.astype(np.float64)))


def test_outlier_group(ref, to_bytes):
    x = torch.full((1, 128), 0.01)
    x[0, 3] = 3000.0
    v, s = quantize_fp8(x, 128, "ue8m0")
    assert float(s[0, 0]) == 8.0  # ceil_pow2(3000 / 448)
    codes, _ = ref.fp8_reference(x, 128, True)
    assert np.array_equal(to_bytes(v), codes)
    assert float(v.float()[0, 3]) == 384.0  # 3000 / 8 = 375 rounds to 384 (E4M3 spacing 32 there)
    assert float(v.float()[0, 0]) == 2.0**-9  # 0.01 / 8 = 0.00125 rounds up to the smallest subnormal
    x[0, 0] = 0.001
    assert float(quantize_fp8(x, 128, "ue8m0")[0].float()[0, 0]) == 0.0  # 0.000125 < 2**-10 flushes to 0


def test_nonfinite_behaviour(to_bytes, ref):
    x = torch.ones(4, 8)
    x[0, 1] = math.nan
    x[1, 2] = math.inf
    x[2, 3] = -math.inf
    v, s = quantize_fp8(x, 8, "fp32")
    assert math.isnan(s[0, 0]) and torch.isnan(v[0].float()).all()
    assert math.isinf(s[1, 0]) and math.isinf(s[2, 0])
    assert v[1].float().tolist()[:2] == [0.0, 0.0]
    assert math.isnan(v[1, 2].float()) and math.isnan(v[2, 3].float())
    assert torch.equal(v[3].float(), torch.full((8,), 448.0))
    v, s = quantize_fp8(x, 8, "ue8m0")
    assert s[:3, 0].tolist() == [2.0**127] * 3  # ceil_to_ue8m0 clamps NaN / inf to 2**127
    assert math.isnan(v[0, 1].float()) and v[0, 0].float() == 0.0
    inf_code = to_bytes(v)[1, 2]
    assert inf_code == (0x7E if ref.E4M3_SATURATES else 0x7F)  # the installed torch's cast rule
    assert v[1, 0].float() == 0.0


def test_packed_scales(to_bytes):
    x = _rand((8, 32 * 6), torch.bfloat16)  # 6 groups: padded to 8 scales
    v, s = quantize_fp8(x, 32, "ue8m0")
    vp, sp = quantize_fp8(x, 32, "ue8m0", packed=True)
    assert torch.equal(v.view(torch.uint8), vp.view(torch.uint8))
    assert sp.dtype == torch.int32 and sp.shape == (8, 2)
    unpacked = unpack_int32_to_ue8m0(sp)
    assert torch.equal(unpacked[:, :6], s) and torch.all(unpacked[:, 6:] == 1.0)
    assert torch.equal(sp[:, :1], pack_ue8m0_to_int32(s[:, :4]))
    assert torch.equal(dequantize_fp8(vp, sp, 32), dequantize_fp8(v, s, 32))
    with pytest.raises(ValueError):
        quantize_fp8(x, 32, "fp32", packed=True)


@pytest.mark.parametrize("fmt", ["fp32", "ue8m0"])
@pytest.mark.parametrize(("m", "n", "bm", "bn"), BLOCK_CASES)
def test_quantize_fp8_block_matches_oracle(ref, to_bytes, fmt, m, n, bm, bn):
    x = _rand((m, n), torch.bfloat16, seed=m + n)
    v, s = quantize_fp8_block(x, (bm, bn), fmt)
    codes, sf = ref.fp8_block_reference(x, bm, bn, fmt == "ue8m0")
    assert s.shape == (-(-m // bm), -(-n // bn))
    assert np.array_equal(to_bytes(v), codes)
    assert np.array_equal(s.numpy(), sf)
    deq = dequantize_fp8_block(v, s, (bm, bn))
    assert torch.equal(deq, v.float() * s.repeat_interleave(bm, 0).repeat_interleave(bn, 1)[:m, :n])


def test_quantize_fp8_block_square_int_and_errors():
    x = _rand((130, 130), torch.float32)
    a = quantize_fp8_block(x, 128)
    b = quantize_fp8_block(x, (128, 128))
    assert torch.equal(a[0].view(torch.uint8), b[0].view(torch.uint8)) and torch.equal(a[1], b[1])
    with pytest.raises(ValueError):
        quantize_fp8_block(x.reshape(1, 130, 130), 128)
    with pytest.raises(TypeError):
        quantize_fp8(torch.ones(4, 4, dtype=torch.int32))
    with pytest.raises(ValueError):
        quantize_fp8(x, 128, "e8m0")  # type: ignore[arg-type]


ROWS = hnp.arrays(
    np.float32,
    st.tuples(st.integers(1, 3), st.integers(1, 70)),
    elements=st.floats(-3e4, 3e4, width=32, allow_subnormal=True),
)


@settings(max_examples=60, deadline=None)
@given(ROWS, st.sampled_from([1, 4, 16, 32, 128]), st.sampled_from(["fp32", "ue8m0"]))
def test_fp8_round_trip_error_bound(ref, to_bytes, x_np, g, fmt):
    """|dequant(quant(x)) - x| <= half an E4M3 ulp at the group's scale (+ fp32 rounding slack)."""
    x = torch.from_numpy(x_np)
    v, s = quantize_fp8(x, g, fmt)
    codes, sf = ref.fp8_reference(x, g, fmt == "ue8m0")
    assert np.array_equal(to_bytes(v), codes) and np.array_equal(s.numpy(), sf)
    scale = s.repeat_interleave(g, 1)[:, : x.shape[1]].double()
    y = x.double().abs() / scale
    ulp = torch.exp2(torch.floor(torch.log2(y.clamp(min=2.0**-30))).clamp(min=-6) - 3)
    err = (dequantize_fp8(v, s, g).double() - x.double()).abs()
    assert torch.all(err <= 0.5 * ulp * scale + 2.0**-20 * x.double().abs() + 1e-300)
