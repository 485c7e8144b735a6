"""The quantizers on a CUDA device: same bytes as on CPU wherever the math is device independent.

Paths whose scales are powers of two (UE8M0 / E8M0) are bit-identical across devices.  Where a
scale is ``amax / constant`` in fp32 (FP8 with fp32 scales, NVFP4), torch may evaluate a
tensor / Python-scalar division on CUDA as a multiplication by the reciprocal, so the scale can
differ by one ulp from the CPU one (DeepGEMM's own helpers behave the same way on each device);
there the tests check the scales to within one ulp and the elements exactly *given* the device's
scales.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

import moe_oracle.numerics as N

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device"),
]


def _x(shape=(64, 512), dtype=torch.bfloat16, seed=0) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(*shape, generator=g) * torch.logspace(-5, 5, shape[0]).unsqueeze(1)
    x[0] = 0.0
    x[1, :64] = -0.0
    x[2, :32] = torch.tensor([6.0, 0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0] * 4)
    x[3, 7] = math.nan
    x[4, 9] = math.inf
    return x.to(dtype)


def _canon_e4m3(v: torch.Tensor) -> torch.Tensor:
    """E4M3 bytes with both NaN codes (0x7F, 0xFF) mapped to 0x7F: NaN signs are the device's."""
    b = v.detach().cpu().contiguous().view(torch.uint8)
    return torch.where((b & 0x7F) == 0x7F, torch.full_like(b, 0x7F), b)


def _drop_nonfinite_groups(t: torch.Tensor, x: torch.Tensor, per_group: int) -> torch.Tensor:
    """Zero the entries of groups (of 32 inputs) that contain NaN or inf, on a CPU copy of ``t``.

    Such groups get a NaN scale in the AITER/OCP conventions, and what becomes of NaN then depends
    on the NaN's bits, which the device chooses (e.g. the E2M1 code of x / NaN, or AITER's 'Even'
    rule, which wraps around for NVIDIA's canonical NaN 0x7FFFFFFF); the CPU tests pin that
    behaviour down for CPU-made NaNs.
    """
    out = t.detach().cpu().clone()
    bad_group = (~torch.isfinite(x.float().view(x.shape[0], -1, 32))).any(dim=2)
    out[bad_group.repeat_interleave(per_group, dim=1)] = 0
    return out


def _both(fn, x):
    return fn(x), fn(x.cuda())


def test_power_of_two_paths_match_cpu(same):
    x = _x()
    fp8_cases = [
        lambda t: N.quantize_fp8(t, 128, "ue8m0"),
        lambda t: N.quantize_fp8(t, 32, "ue8m0", packed=True),
        lambda t: N.quantize_fp8_block(t, 128, "ue8m0"),
        lambda t: N.quantize_mxfp8(t),
        lambda t: N.quantize_mxfp8(t, convention="aiter"),
        lambda t: N.quantize_mxfp8(t, convention="ocp"),
    ]
    for case in fp8_cases:
        (cv, cs), (gv, gs) = _both(case, x)
        assert gv.device.type == "cuda" and gs.device.type == "cuda"
        assert torch.equal(_canon_e4m3(cv), _canon_e4m3(gv)) and same(cs, gs)
    modes = ("round_up", "round_down", "even", "ceil", "aiter_legacy")
    fp4_cases = [lambda t: N.quantize_mxfp4(t), lambda t: N.quantize_mxfp4(t, 32, "ocp")]
    fp4_cases += [lambda t, m=m: N.quantize_mxfp4(t, 32, "aiter", round_mode=m) for m in modes]
    for case in fp4_cases:
        (cv, cs), (gv, gs) = _both(case, x)
        assert same(_drop_nonfinite_groups(cs, x, 1), _drop_nonfinite_groups(gs, x, 1))
        assert torch.equal(_drop_nonfinite_groups(cv, x, 16), _drop_nonfinite_groups(gv, x, 16))
    (cv, cs), (gv, gs) = _both(lambda t: N.quantize_mxfp4(t, packed=True), x)
    assert torch.equal(cv, gv.cpu()) and torch.equal(cs, gs.cpu())


def _ulp_apart(a: torch.Tensor, b: torch.Tensor) -> int:
    ia = a.detach().cpu().float().view(torch.int32).long()
    ib = b.detach().cpu().float().view(torch.int32).long()
    finite = torch.isfinite(a.cpu()) & torch.isfinite(b.cpu())
    return int((ia - ib).abs()[finite].max()) if finite.any() else 0


def test_fp32_scale_fp8_on_cuda(ref, same):
    x = _x()
    (_cv, cs), (gv, gs) = _both(lambda t: N.quantize_fp8(t, 128, "fp32"), x)
    assert _ulp_apart(cs, gs) <= 1
    # elements, given the device's own scales: RNE of fp32(x * fp32(1 / scale))
    finite = torch.isfinite(gs.cpu()).all(dim=1).numpy()
    with np.errstate(divide="ignore", invalid="ignore"):
        inv = (np.float32(1.0) / gs.cpu().numpy()).astype(np.float32)
        y = (x.float().numpy().reshape(64, 4, 128) * inv[..., None]).astype(np.float32).reshape(64, 512)
    codes = ref.e4m3_codes(y.astype(np.float64))
    assert np.array_equal(gv.cpu().view(torch.uint8).numpy()[finite], codes[finite])
    assert same(N.dequantize_fp8(gv, gs), N.dequantize_fp8(gv.cpu(), gs.cpu()))


def test_nvfp4_on_cuda(ref, to_bytes, same):
    x = _x((32, 256), seed=3)
    x = torch.nan_to_num(x.float(), nan=1.0, posinf=2.0).to(torch.bfloat16)
    for gs in (None, 0.37):
        (_cv, cs), (gv, gsf) = _both(lambda t, g=gs: N.quantize_nvfp4(t, g), x)
        code_cpu, code_gpu = to_bytes(cs).astype(int), to_bytes(gsf).astype(int)
        both_nan = (code_cpu & 0x7F == 0x7F) & (code_gpu & 0x7F == 0x7F)
        assert np.abs(code_cpu - code_gpu)[~both_nan].max() <= 1  # one E4M3 step at most
        sf = gsf.float().cpu().numpy()
        xb = x.float().numpy().reshape(32, 16, 16)
        if gs is None:
            with np.errstate(divide="ignore"):
                inv = np.where(sf > 0, np.float32(1.0) / sf, np.float32(0.0)).astype(np.float32)
            y = (xb * inv[..., None]).astype(np.float32)
        else:
            y = (xb / (sf * np.float32(gs)).astype(np.float32)[..., None]).astype(np.float32)
        codes = ref.e2m1_codes(y.reshape(32, 256).astype(np.float64), "deepgemm")
        assert np.array_equal(gv.cpu().numpy(), ref.pack_nibbles(codes))
        assert same(N.dequantize_nvfp4(gv, gsf, gs), N.dequantize_nvfp4(gv.cpu(), gsf.cpu(), gs))


def test_large_fp8_and_mxfp4_on_cuda(ref):
    x = (torch.randn(4096, 7168, generator=torch.Generator().manual_seed(5)) * 3).to(torch.bfloat16)
    xc = x.cuda()
    v, s = N.quantize_fp8(xc, 128, "ue8m0")
    rows = torch.tensor([0, 1234, 4095])
    codes, sf = ref.fp8_reference(x[rows], 128, True)
    assert np.array_equal(v[rows.cuda()].cpu().view(torch.uint8).numpy(), codes)
    assert np.array_equal(s[rows.cuda()].cpu().numpy(), sf)
    fp4, sf4 = N.quantize_mxfp4(xc, 32)
    packed, sf_ref = ref.mxfp4_reference(x[rows], 32, "deepgemm")
    assert np.array_equal(fp4[rows.cuda()].cpu().numpy(), packed)
    assert np.array_equal(sf4[rows.cuda()].cpu().numpy(), sf_ref)


def test_codecs_on_cuda():
    codes = torch.arange(16, dtype=torch.uint8, device="cuda")
    assert torch.equal(N.float_to_e2m1(N.e2m1_to_float(codes), "rne"), codes)
    b = torch.arange(255, dtype=torch.uint8, device="cuda")
    assert torch.equal(N.fp32_to_ue8m0_bytes(N.ue8m0_bytes_to_fp32(b)), b)
    packed = N.pack_ue8m0_to_int32(torch.arange(256, dtype=torch.uint8, device="cuda").view(1, -1))
    expected = torch.arange(256, dtype=torch.uint8).view(1, -1)
    assert torch.equal(N.unpack_int32_to_ue8m0_bytes(packed).cpu(), expected)
