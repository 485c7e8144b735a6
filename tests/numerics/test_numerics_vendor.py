"""Byte equality against the vendor functions themselves, where ``deep_gemm`` / ``aiter`` import.

Both packages need a GPU build and are absent on CI: every test here skips cleanly then.  The
vendor helpers are pure torch, so they run on CPU tensors; with a CUDA (or ROCm) device the
comparison is repeated there.
"""

from __future__ import annotations

import importlib
import inspect
import math

import pytest
import torch

import moe_oracle.numerics as N


def _devices() -> list[str]:
    return ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])


def _inputs(device: str) -> list[torch.Tensor]:
    g = torch.Generator().manual_seed(1234)
    out = []
    for dtype in (torch.bfloat16, torch.float32):
        x = torch.randn(33, 512, generator=g) * torch.logspace(-6, 6, 33).unsqueeze(1)
        x[0] = 0.0
        x[1, :64] = -0.0
        x[2] = 1e-7
        x[3, 5] = 1e4
        ties = torch.tensor([6.0, 0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0] * 4)
        x[4, :32] = ties * torch.tensor([1.0, -1.0] * 16)
        out.append(x.to(dtype).to(device))
        y = x.clone()
        y[5, 3] = math.nan
        y[6, 40] = math.inf
        y[7, 100] = -math.inf
        out.append(y.to(dtype).to(device))
    return out


def _same(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Bitwise equality (NaN-safe) of tensors with the same element size."""
    a, b = a.contiguous(), b.contiguous()
    if a.shape != b.shape or a.element_size() != b.element_size():
        return False
    view = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}[a.element_size()]
    return torch.equal(a.view(view), b.view(view))


# --------------------------------------------------------------------------------------------
# DeepGEMM
# --------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def dg():
    pytest.importorskip("deep_gemm")
    try:
        return importlib.import_module("deep_gemm.utils.math")
    except ImportError:
        pytest.skip("deep_gemm has no deep_gemm.utils.math")


def _need(module, name):
    fn = getattr(module, name, None)
    if fn is None:
        pytest.skip(f"this deep_gemm has no {name}")
    return fn


@pytest.mark.parametrize("device", _devices())
def test_deepgemm_ceil_and_pack(dg, device):
    v = torch.rand(4096) * 10.0 ** torch.randint(-40, 38, (4096,))
    v = torch.cat([v, torch.tensor([0.0, 2.0**-130])])
    v = v.to(device)
    assert _same(dg.ceil_to_ue8m0(v), N.ceil_to_ue8m0(v))
    s = dg.ceil_to_ue8m0(torch.rand(64, 16, device=device))
    assert _same(dg.pack_ue8m0_to_int(s), N.pack_ue8m0_to_int32(s))
    unpack = getattr(dg, "unpack_ue8m0_from_int", None)
    if unpack is not None:
        assert _same(unpack(dg.pack_ue8m0_to_int(s)), N.unpack_int32_to_ue8m0(N.pack_ue8m0_to_int32(s)))


@pytest.mark.parametrize("device", _devices())
def test_deepgemm_per_token_fp8(dg, device):
    for x in _inputs(device):
        for use_ue8m0 in (False, True):
            for gran_k in (128, 32, 96):
                a = dg.per_token_cast_to_fp8(x, use_ue8m0=use_ue8m0, gran_k=gran_k)
                b = N.quantize_fp8(x, gran_k, "ue8m0" if use_ue8m0 else "fp32")
                assert _same(a[0], b[0]) and _same(a[1], b[1])
            if use_ue8m0 and "use_packed_ue8m0" in inspect.signature(dg.per_token_cast_to_fp8).parameters:
                a = dg.per_token_cast_to_fp8(x, use_ue8m0=True, gran_k=32, use_packed_ue8m0=True)
                b = N.quantize_fp8(x, 32, "ue8m0", packed=True)
                assert _same(a[0], b[0]) and _same(a[1], b[1])


@pytest.mark.parametrize("device", _devices())
def test_deepgemm_per_block_fp8(dg, device):
    for x in _inputs(device):
        for use_ue8m0 in (False, True):
            for xx in (x, x[:, :300], x[:20]):
                a = dg.per_block_cast_to_fp8(xx, use_ue8m0=use_ue8m0)
                b = N.quantize_fp8_block(xx, 128, "ue8m0" if use_ue8m0 else "fp32")
                assert _same(a[0], b[0]) and _same(a[1], b[1])


@pytest.mark.parametrize("device", _devices())
def test_deepgemm_per_token_fp4(dg, device):
    cast = _need(dg, "per_token_cast_to_fp4")
    for x in _inputs(device):
        for gran_k, packed in ((32, False), (32, True), (128, False), (64, True)):
            a = cast(x, use_ue8m0=True, gran_k=gran_k, use_packed_ue8m0=packed)
            b = N.quantize_mxfp4(x, gran_k, packed=packed)
            assert _same(a[0], b[0]) and _same(a[1], b[1])
            back = getattr(dg, "cast_back_from_fp4", None)
            if back is not None:
                ref = back(a[0], a[1], gran_k=gran_k, use_packed_ue8m0=packed)
                ours = N.dequantize_mxfp4(b[0], b[1], gran_k)
                assert torch.equal(torch.nan_to_num(ref), torch.nan_to_num(ours))


@pytest.mark.parametrize("device", _devices())
def test_deepgemm_nvfp4(dg, device):
    """Whichever per_token_cast_to_nvfp4 this DeepGEMM has (math.py or utils/nvfp4.py)."""
    checked = 0
    fn = getattr(dg, "per_token_cast_to_nvfp4", None)
    if fn is not None:
        params = inspect.signature(fn).parameters
        for x in _inputs(device):
            if "use_packed_ue4m3" in params:  # math.py variant: fp32 scales, or packed int32
                a = fn(x, gran_k=16)
                b = N.quantize_nvfp4(x)
                assert _same(a[0], b[0]) and _same(a[1], b[1].float())
                a = fn(x, gran_k=16, use_packed_ue4m3=True)
                assert _same(a[1], N.quantize_nvfp4(x, packed_scales=True)[1])
                checked += 1
            elif "global_scale" in params:
                for gs in (1.0, 0.37):
                    a = fn(x, gs)
                    b = N.quantize_nvfp4(x, gs, packed_scales=True)
                    assert _same(a[0], b[0]) and _same(a[1], b[1])
                checked += 1
    try:
        mod = importlib.import_module("deep_gemm.utils.nvfp4")
    except ImportError:
        mod = None
    if mod is not None:
        for x in _inputs(device):
            for gs in (1.0, 0.37, 1e-3):
                a = mod.per_token_cast_to_nvfp4(x, gs)
                b = N.quantize_nvfp4(x, gs, packed_scales=True)
                assert _same(a[0], b[0]) and _same(a[1], b[1])
                ref = mod.cast_back_from_nvfp4(a[0], a[1], gs)
                ours = N.dequantize_nvfp4(b[0], b[1], gs)
                assert torch.equal(torch.nan_to_num(ref), torch.nan_to_num(ours))
            checked += 1
    if not checked:
        pytest.skip("this deep_gemm has no NVFP4 helper this module implements")


# --------------------------------------------------------------------------------------------
# AITER
# --------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def aiter_mods():
    pytest.importorskip("aiter")
    try:
        quant = importlib.import_module("aiter.ops.quant")
        fp4_utils = importlib.import_module("aiter.utility.fp4_utils")
        dtypes = importlib.import_module("aiter.utility.dtypes")
    except ImportError as exc:
        pytest.skip(f"aiter without the torch MX references: {exc}")
    return quant, fp4_utils, dtypes


def _aiter_device() -> str:
    return "cuda" if torch.cuda.is_available() else "cpu"


def test_aiter_per_1x32_f4_quant(aiter_mods):
    quant, _fp4_utils, _ = aiter_mods
    has_modes = "round_mode" in inspect.signature(quant.per_1x32_f4_quant).parameters
    modes = [0, 1, 2, 3] if has_modes else [None]
    for x in _inputs(_aiter_device()):
        for mode in modes:
            if mode is None:  # before ROCm/aiter#3212: f32_to_e8m0(amax / 4)
                a = quant.per_1x32_f4_quant(x, shuffle=False)
                b = N.quantize_mxfp4(x, 32, "aiter", round_mode="aiter_legacy")
            else:
                a = quant.per_1x32_f4_quant(x, shuffle=False, round_mode=mode)
                b = N.quantize_mxfp4(x, 32, "aiter", round_mode=mode)
            assert _same(a[0], b[0])
            assert _same(a[1], N.fp32_to_ue8m0_bytes(b[1]))


def test_aiter_per_1x32_f8_quant(aiter_mods):
    quant, fp4_utils, dtypes = aiter_mods
    if dtypes.fp8 != torch.float8_e4m3fn:
        pytest.skip("this GPU's AITER fp8 is e4m3fnuz (gfx942); only the OCP e4m3fn path is implemented")
    legacy = not hasattr(fp4_utils, "f32_to_mx_e8m0_scale")
    for x in _inputs(_aiter_device()):
        a = quant.per_1x32_f8_scale_f8_quant(x, scale_type=dtypes.fp8_e8m0)
        b = N.quantize_mxfp8(x, convention="aiter", round_mode="aiter_legacy" if legacy else "round_up")
        assert _same(a[0], b[0])
        assert _same(a[1], N.fp32_to_ue8m0_bytes(b[1]))


def test_aiter_fp4_utils(aiter_mods):
    _, fp4_utils, _ = aiter_mods
    device = _aiter_device()
    codes = torch.arange(256, dtype=torch.uint8, device=device)
    assert _same(fp4_utils.e8m0_to_f32(codes).nan_to_num(), N.ue8m0_bytes_to_fp32(codes).nan_to_num())
    packed = torch.randint(0, 256, (7, 34), dtype=torch.uint8, device=device)
    assert _same(fp4_utils.mxfp4_to_f32(packed.clone()), N.e2m1_to_float(N.unpack_e2m1(packed)))
    specials = torch.tensor([0.25, 0.75, 1.75, 3.5, -0.0, 7.0, math.nan, -math.nan], device=device)
    v = torch.cat([torch.randn(4096, device=device) * 4, specials])
    ours = N.pack_e2m1(N.float_to_e2m1(v, "rne"))
    assert _same(fp4_utils.f32_to_mxfp4(v), ours)
    if hasattr(fp4_utils, "f32_to_mx_e8m0_scale"):
        amax = torch.rand(4096, device=device) * 10.0 ** torch.randint(-30, 30, (4096,), device=device)
        for mode, rule in ((0, "round_down"), (1, "round_up"), (2, "even"), (3, "ceil")):
            for dt, elem in ((0, "e2m1"), (1, "e4m3")):
                a = fp4_utils.f32_to_mx_e8m0_scale(amax, mode=mode, dtype=dt)
                assert _same(a, N.mx_scale_bytes(amax, element=elem, rule=rule))
