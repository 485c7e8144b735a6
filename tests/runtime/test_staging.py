"""Staging is bit-exact to moe_oracle.numerics and repacks top-k as the kernels want."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch

import moe_oracle.numerics as N
from moe_oracle.registry import load_registry
from moe_oracle.runtime.actquant import (
    fake_quant_fp8_exact,
    fake_quant_fp8_kernel,
    kernel_pow2_scale,
    nvfp4_token_scale,
    quantize_nvfp4_rows,
)
from moe_oracle.runtime.staging import StagingSpec, repack_topk, stage_into

#: moe-oracle's own variants, by name (each declares its staging; the conformance suite covers third-party ones)
STAGING = {
    spec.variant: spec for spec in load_registry().variants if load_registry().origin(spec).builtin and spec.staging
}


def _bits(t):
    t = t.contiguous()
    return t.view({1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}[t.element_size()])


def _inputs(t=37, h=512, k=6, e=32, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = (torch.randn(t, h, generator=g) * torch.logspace(-3, 2, t).unsqueeze(1)).bfloat16()
    x[3] = 0.0  # an all-zero token
    ids = torch.stack([torch.randperm(e, generator=g)[:k] for _ in range(t)])
    ids[5, 2] = -1
    w = torch.rand(t, k, generator=g)
    return x, ids, w


@pytest.mark.parametrize("variant", sorted(STAGING))
def test_staging_bit_exact_to_numerics(variant):
    st = StagingSpec.declared(STAGING[variant])
    x, ids, w = _inputs()
    out = st.stage(x, ids, w)
    if variant.startswith("sm90"):
        v, sf = N.quantize_fp8(x, 128, "fp32")
        assert torch.equal(_bits(out["x"]), _bits(v)) and torch.equal(_bits(out["x_sf"]), _bits(sf))
        assert out["x_sf"].shape == (37, 4) and out["x_sf"].dtype == torch.float32
    elif variant in ("sm100_fp8xfp4", "sm100_fp8xfp8"):
        v, sf = N.quantize_fp8(x, 32, "ue8m0", packed=True)
        assert torch.equal(_bits(out["x"]), _bits(v)) and torch.equal(out["x_sf"], sf)
        assert out["x_sf"].shape == (37, 4) and out["x_sf"].dtype == torch.int32
    elif variant == "sm100_nvfp4":
        g = out["x_scales"]
        assert g.shape == (37,) and g.dtype == torch.float32
        assert out["x_sf"].shape == (37, 512 // 64) and out["x_sf"].dtype == torch.int32
        sf_bytes = out["x_sf"].view(torch.uint8).view(N.FP8_E4M3_DTYPE)
        for t in range(x.shape[0]):  # row by row through the numerics quantizer
            v, sf = N.quantize_nvfp4(x[t : t + 1], global_scale=float(g[t]))
            assert torch.equal(out["x"][t : t + 1], v) and torch.equal(_bits(sf_bytes[t : t + 1]), _bits(sf))
    elif variant == "sm100_bf16":
        assert torch.equal(out["x"], x) and set(out) == {"x", "topk_idx", "topk_weights"}
    else:  # AITER quantizes inside the kernel: BF16 passes through, int32 ids
        assert torch.equal(out["x"], x) and out["topk_idx"].dtype == torch.int32
        payload = st.quantize_like_kernel(x)
        if variant.endswith("a8w4"):
            v, sf = N.quantize_mxfp8(x, 32, convention="aiter")
        else:
            v, sf = N.quantize_mxfp4(x, 32, "aiter")
        assert torch.equal(_bits(payload["x"]), _bits(v))
        assert torch.equal(payload["x_sf"], N.fp32_to_ue8m0_bytes(sf, check=False))
    assert out["topk_weights"].dtype == torch.float32
    assert int(out["topk_idx"][5, 2]) == -1 and float(out["topk_weights"][5, 2]) == 0.0


def test_repack_padding_and_scaling():
    ids = torch.tensor([[1, 2], [3, -1], [4, 5]], dtype=torch.int32)
    w = torch.tensor([[0.5, 0.25], [1.0, 9.0], [2.0, 3.0]], dtype=torch.bfloat16)
    pad = torch.tensor([False, False, True])
    i2, w2 = repack_topk(ids, w, is_padding=pad, routed_scaling_factor=2.0)
    assert i2.dtype == torch.int64 and i2.tolist() == [[1, 2], [3, -1], [-1, -1]]
    assert w2.dtype == torch.float32 and w2.tolist() == [[1.0, 0.5], [2.0, 0.0], [0.0, 0.0]]


def test_stage_into_buffer_views_without_reallocating():
    st = StagingSpec.declared(STAGING["sm100_fp8xfp4"])
    x, ids, w = _inputs(t=9)
    buf = SimpleNamespace(
        x=torch.zeros(16, 512, dtype=N.FP8_E4M3_DTYPE),
        x_sf=torch.empty_strided((16, 4), (1, 16), dtype=torch.int32).zero_(),  # MN-major view
        topk_idx=torch.zeros(16, 6, dtype=torch.int64),
        topk_weights=torch.zeros(16, 6),
    )
    ptrs = {k: v.data_ptr() for k, v in vars(buf).items()}
    assert st.stage_to_buffer(buf, x, ids, w) == 9
    staged = st.stage(x, ids, w)
    assert torch.equal(buf.x_sf[:9], staged["x_sf"]) and torch.equal(buf.topk_idx[:9], staged["topk_idx"])
    assert {k: v.data_ptr() for k, v in vars(buf).items()} == ptrs
    # rows past T are padding for the kernel, which reads the whole capacity (DeepGEMM's pre-dispatch does the same)
    assert bool((buf.topk_idx[9:] == -1).all()) and bool((buf.topk_weights[9:] == 0).all())
    with pytest.raises(AttributeError, match="x_scales"):
        stage_into(SimpleNamespace(x=buf.x), {"x": staged["x"], "x_scales": torch.zeros(9)})


def test_nvfp4_rows_vectorized_equals_per_row():
    g = torch.Generator().manual_seed(3)
    x = torch.randn(20, 256, generator=g) * torch.logspace(-4, 3, 20).unsqueeze(1)
    s = nvfp4_token_scale(x)
    v, sf = quantize_nvfp4_rows(x, s)
    for t in range(20):
        rv, rsf = N.quantize_nvfp4(x[t], global_scale=float(s[t]))
        assert torch.equal(v[t], rv) and torch.equal(_bits(sf[t]), _bits(rsf))


def test_kernel_pow2_scale_rule():
    amax = torch.tensor([0.0, 448.0, 448.0 * 1.5, 1.0, 3e-40, 896.0])
    sf = kernel_pow2_scale(amax)
    # 2**ceil(log2(amax * fp32(1/448))); amax 0 -> 0 (the kernel's fast_pow2(-127) bit pattern)
    inv = torch.tensor(1 / 448, dtype=torch.float32)
    for a, s in zip(amax.tolist(), sf.tolist(), strict=True):
        scaled = float(torch.tensor(a) * inv)
        if a == 0:
            assert s == 0.0
        elif scaled < 2**-126:
            assert s == 2**-126
        else:
            import math

            m, e = math.frexp(scaled)
            assert s == (2.0 ** (e - 1) if m == 0.5 else 2.0**e)


def test_fake_quant_fp8_rules():
    g = torch.Generator().manual_seed(5)
    a = torch.randn(8, 256, generator=g) * 3
    a[0, :64] = 0.0
    k = fake_quant_fp8_kernel(a, 64)
    assert torch.equal(k[0, :64], torch.zeros(64))
    # power-of-two scale: every group's values are E4M3 values times one power of two
    grp = k.reshape(8, 4, 64)
    sf = kernel_pow2_scale(a.reshape(8, 4, 64).abs().amax(-1))
    q = grp[1:] / sf[1:].unsqueeze(-1)
    assert torch.equal(q, q.to(N.FP8_E4M3_DTYPE).float())
    e = fake_quant_fp8_exact(a, 64)
    assert (e - a).abs().max() <= a.abs().max() * 2**-4
