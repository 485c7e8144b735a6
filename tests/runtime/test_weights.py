"""Weight transforms: bit-exact round trips, the documented index rules, vendor equality, streaming."""

from __future__ import annotations

import importlib

import pytest
import torch
from moe_oracle_backends.rocm_mi355.shuffle import aiter_shuffle_scale, aiter_unshuffle_scale
from torch.utils._python_dispatch import TorchDispatchMode

from moe_oracle.registry import load_registry
from moe_oracle.runtime.accuracy import variant_weight_quant
from moe_oracle.runtime.format_conversion import mxfp4_to_fp8_block
from moe_oracle.runtime.interface import CheckpointExperts
from moe_oracle.runtime.layouts import (
    deinterleave_gate_up,
    interleave_gate_up,
    utccp_transpose,
    utccp_untranspose,
)
from moe_oracle.runtime.quantize import (
    FP8_BLOCK_FP32,
    FP8_BLOCK_UE8M0,
    MXFP4,
    dequantize_experts,
    quantize_experts,
)

#: bit-exact round trips of every registered variant's transform: tests/conformance/test_conformance.py


def _layout(variant: str):
    """The weight-layout module a registered variant declares, and its checkpoint format."""
    (spec,) = [v for v in load_registry().variants if v.variant == variant]
    return importlib.import_module(spec.layout), variant_weight_quant(spec)[0]


def _bits(t: torch.Tensor) -> torch.Tensor:
    t = t.contiguous()
    return t.view({1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}[t.element_size()])


def _same(a: torch.Tensor | None, b: torch.Tensor | None) -> bool:
    if a is None or b is None:
        return a is None and b is None
    return a.shape == b.shape and a.dtype == b.dtype and torch.equal(_bits(a), _bits(b))


def _experts(quant, e, h, i, seed=0) -> CheckpointExperts:
    g = torch.Generator().manual_seed(seed)
    w13 = torch.randn(e, 2 * i, h, generator=g) * torch.exp(torch.randn(e, 2 * i, 1, generator=g)) / h**0.5
    w2 = torch.randn(e, h, i, generator=g) / i**0.5
    return quantize_experts(w13.bfloat16(), w2.bfloat16(), quant, w2_input_scale=torch.rand(e, generator=g) + 0.5)


def test_interleave_matches_documented_row_map():
    e, i, k = 2, 48, 3
    t = torch.arange(e * 2 * i * k).reshape(e, 2 * i, k)
    out = interleave_gate_up(t)
    for half in (0, 1):
        for r in range(i):  # vLLM 0.33 §2.4: r -> (r // 8) * 16 + 8 * half + r % 8
            assert torch.equal(out[:, (r // 8) * 16 + 8 * half + r % 8], t[:, half * i + r])
    assert torch.equal(deinterleave_gate_up(out), t)


def test_utccp_matches_documented_row_map():
    t = torch.arange(2 * 256 * 3, dtype=torch.int32).reshape(2, 256, 3)
    out = utccp_transpose(t)
    for b in range(2):
        for j in range(4):
            for i in range(32):  # 128b + 32j + i -> 128b + 4i + j
                assert torch.equal(out[:, 128 * b + 4 * i + j], t[:, 128 * b + 32 * j + i])
    assert torch.equal(utccp_untranspose(out), t)


def test_sm100_scales_are_mn_major_and_sm90_k_major():
    from moe_oracle_backends.cuda_sm90.fp8xfp4 import weights as w90
    from moe_oracle_backends.cuda_sm100.fp8xfp4 import weights as w100

    ex = _experts(MXFP4, 2, 512, 256)
    k100 = w100.to_kernel(ex)
    assert k100.w13_sf.shape == (2, 512, 4) and k100.w13_sf.stride() == (512 * 4, 1, 512)
    assert k100.w13_sf.dtype == torch.int32 and k100.w13.dtype == torch.int8
    k90 = w90.to_kernel(ex)
    assert k90.w13_sf.shape == (2, 512, 4) and k90.w13_sf.is_contiguous()
    # SM90 FP4 scale rows: interleaved, packed little-endian 4 per int32
    raw = interleave_gate_up(ex.w13_scale)
    b = raw[0, 0, :4].tolist()
    assert int(k90.w13_sf[0, 0, 0]) & 0xFFFFFFFF == b[0] | b[1] << 8 | b[2] << 16 | b[3] << 24


def test_aiter_scale_padding_byte():
    sf = torch.randint(100, 140, (1, 64, 12), dtype=torch.uint8)
    out = aiter_shuffle_scale(sf, gate_up=True)
    assert out.shape == (1, 64, 16)
    assert int((out == 0x7F).sum()) >= 64 * 4  # padded columns carry E8M0 0x7F (2**0)
    assert torch.equal(aiter_unshuffle_scale(out, gate_up=True, groups=12), sf)


def test_fp8_block_ue8m0_relayouts_exactly_to_mxfp8():
    from moe_oracle_backends.cuda_sm100.fp8xfp8 import weights as w

    ex = _experts(FP8_BLOCK_UE8M0, 2, 512, 256)
    canon = w.canonical(ex)
    a, b = dequantize_experts(ex), dequantize_experts(canon)
    assert torch.equal(a[0], b[0]) and torch.equal(a[1], b[1])
    with pytest.raises(ValueError, match="power-of-two"):
        w.canonical(_experts(FP8_BLOCK_FP32, 1, 512, 256))


def test_canonical_rejects_wrong_format():
    from moe_oracle_backends.cuda_sm90.fp8xfp8 import weights as w

    with pytest.raises(ValueError, match="fp8_block 128x128"):
        w.canonical(_experts(MXFP4, 1, 512, 256))


# ------------------------------------------------------------------------------------------
# Streaming: no full-size temporary
# ------------------------------------------------------------------------------------------
class _AllocTracker(TorchDispatchMode):
    """Records the byte size of every tensor an op returns (allocations, not views)."""

    def __init__(self):
        super().__init__()
        self.largest = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        inputs = [a for a in (*args, *kwargs.values()) if isinstance(a, torch.Tensor)]
        known = {a.untyped_storage().data_ptr() for a in inputs}
        for t in out if isinstance(out, (tuple, list)) else (out,):
            if isinstance(t, torch.Tensor) and t.untyped_storage().data_ptr() not in known:  # new storage
                self.largest = max(self.largest, t.untyped_storage().nbytes())
        return out


@pytest.mark.parametrize("variant", ["sm100_fp8xfp4", "sm90_fp8xfp8", "gfx950_a8w4", "sm100_nvfp4"])
def test_streaming_transform_peak_is_one_chunk(variant):
    w, quant = _layout(variant)
    e, h, i = 8, 512, 256
    ex = _experts(quant, e, h, i)
    dst = w.allocate(e, h, i)
    layer_bytes = dst.nbytes
    tracker = _AllocTracker()
    with tracker:
        w.transform_into(ex, dst, chunk_experts=1)
    # every temporary is at most one expert's worth (plus a small slack), never the whole layer
    per_expert = layer_bytes / e
    assert tracker.largest <= 1.5 * per_expert, (tracker.largest, per_expert)
    assert tracker.largest < layer_bytes / 4
    assert all(_same(a, b) for a, b in zip(dst.tensors().values(), w.to_kernel(ex).tensors().values(), strict=True))
    # the tracker does see temporaries: one chunk of all experts allocates a layer-sized one
    whole = _AllocTracker()
    with whole:
        w.transform_into(ex, w.allocate(e, h, i), chunk_experts=e)
    assert whole.largest >= per_expert * e / 3


# ------------------------------------------------------------------------------------------
# MXFP4 -> FP8 block conversion
# ------------------------------------------------------------------------------------------
def test_mxfp4_to_fp8_block_lossless_for_realistic_weights():
    ex = _experts(MXFP4, 2, 512, 256)
    fp8, report = mxfp4_to_fp8_block(ex)
    assert report.lossless and report.total_blocks == 2 * (4 * 4 + 4 * 2)
    a, b = dequantize_experts(ex), dequantize_experts(fp8)
    assert torch.equal(a[0], b[0]) and torch.equal(a[1], b[1])
    s = fp8.w13_scale
    assert torch.equal(s, torch.exp2(torch.log2(s).round()))  # power-of-two scales
    ue, _ = mxfp4_to_fp8_block(ex, scale_format="ue8m0")
    assert ue.w13_scale.dtype == torch.uint8


def test_mxfp4_to_fp8_block_reports_wide_exponent_span():
    ex = _experts(MXFP4, 1, 512, 256)
    sf = ex.w13_scale.clone()
    sf[0, 0, 0] = 127 + 10  # one 32-group 2**10: the rest of its block falls below E4M3's range
    ex = CheckpointExperts(MXFP4, ex.w13, ex.w2, sf, ex.w2_scale)
    _, report = mxfp4_to_fp8_block(ex)
    assert not report.lossless
    assert ("w13", 0, 0, 0) in report.lossy_blocks and report.changed_elements > 0
    assert all(b[0] == "w13" and b[2:] == (0, 0) for b in report.lossy_blocks)


# ------------------------------------------------------------------------------------------
# Vendor functions, when installed
# ------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "variant", ["sm90_fp8xfp8", "sm90_fp8xfp4", "sm100_fp8xfp4", "sm100_fp8xfp8", "sm100_bf16", "sm100_nvfp4"]
)
def test_equals_deep_gemm(variant):
    dg = pytest.importorskip("deep_gemm")
    w, quant = _layout(variant)
    if variant.startswith("sm90") and not hasattr(dg, "transform_weights_for_mega_moe_sm90"):
        pytest.skip("deep_gemm without the SM90 transforms")
    if not variant.startswith("sm90") and (
        not torch.cuda.is_available() or torch.cuda.get_device_capability()[0] != 10
    ):
        pytest.skip("transform_sf_into_required_layout runs on SM100 only")
    ex = _experts(quant, 2, 512, 256)
    dev = "cuda" if torch.cuda.is_available() else "cpu"
    from moe_oracle.runtime.quantize import experts_to

    ex = experts_to(ex, dev)
    ours, theirs = w.to_kernel(ex), w.vendor_transform(ex)
    for name in ("w13", "w2", "w13_sf", "w2_sf"):
        a, b = getattr(ours, name), getattr(theirs, name)
        assert _same(a, b) and (a is None or a.stride() == b.stride()), name


def test_equals_aiter_shuffles():
    pytest.importorskip("aiter.ops.shuffle")
    from moe_oracle_backends.rocm_mi355 import _runtime as w

    ex = _experts(MXFP4, 2, 512, 384)
    ours, theirs = w.to_kernel(ex), w.vendor_transform(ex)
    for name in ("w13", "w2", "w13_sf", "w2_sf"):
        assert _same(getattr(ours, name), getattr(theirs, name)), name


def _bits(t: torch.Tensor) -> torch.Tensor:
    return t.view({1: torch.uint8, 2: torch.int16, 4: torch.int32}[t.element_size()])


@pytest.mark.parametrize(
    ("dtype", "shape"),
    [
        (torch.uint8, (3, 32, 24)),
        (torch.float8_e4m3fn, (2, 64, 128)),
        (torch.bfloat16, (2, 32, 6)),
        (torch.uint8, (2, 16, 3)),
    ],
)
def test_interleave_written_in_place_equals_the_copy(dtype, shape):
    """``Interleaved`` (straight into the destination, 8-byte words where rows allow) == ``interleave_gate_up``,
    bit for bit, also into a destination of another dtype of the same size, and for an expert slice."""
    from moe_oracle.runtime.layouts import Interleaved

    src = torch.randint(0, 256, shape, dtype=torch.uint8).view(dtype) if dtype != torch.bfloat16 else torch.randn(shape)
    src = src.to(dtype) if dtype == torch.bfloat16 else src
    for part in (src, src[1:]):
        got = torch.empty(part.shape, dtype=torch.int8 if part.element_size() == 1 else part.dtype)
        Interleaved(part).write_into(got)
        assert torch.equal(_bits(got), _bits(interleave_gate_up(part)))
