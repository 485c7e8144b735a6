"""The Triton staging kernel is bit-exact against moe_oracle.numerics (GPU only)."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

pytestmark = pytest.mark.gpu


def _run(t: int, h: int, k: int, recipe: str, rsf: float, num_valid: int | None, seed: int):
    from moe_oracle.kernels.staging_triton import stage
    from moe_oracle.numerics import quantize_fp8, quantize_mxfp8

    g = torch.Generator(device="cuda").manual_seed(seed)
    x = (torch.randn(t, h, device="cuda", generator=g) * 2).bfloat16()
    x[0, :128] = 0  # an all-zero group hits the amax floor
    if t > 1:
        x[1, 7] = 3e4  # an outlier group
    ids = torch.randint(0, 256, (t, k), device="cuda", dtype=torch.int32, generator=g)
    w = torch.rand(t, k, device="cuda", generator=g)
    ox = torch.full((t, h), float("nan"), device="cuda").to(torch.float8_e4m3fn)  # poisoned
    sf_dtype = torch.float32 if recipe == "fp8_g128" else torch.int32
    osf = torch.full((t, h // 128), -7, device="cuda", dtype=sf_dtype)
    oi = torch.full((t, k), 12345, device="cuda", dtype=torch.int64)
    ow = torch.full((t, k), float("nan"), device="cuda")
    stage(x, ids, w, ox, osf, oi, ow, recipe=recipe, routed_scaling_factor=rsf, num_valid=num_valid)
    if recipe == "fp8_g128":
        rv, rs = quantize_fp8(x, 128, "fp32")
    else:
        rv, rs = quantize_mxfp8(x, 32, packed=True)
    assert torch.equal(ox.view(torch.uint8), rv.view(torch.uint8))
    assert torch.equal(osf.view(torch.int32), rs.view(torch.int32))
    nv = t if num_valid is None else num_valid
    assert torch.equal(oi[:nv], ids[:nv].long())
    assert torch.equal(ow[:nv], w[:nv] * rsf)
    assert bool((oi[nv:] == -1).all()) and bool((ow[nv:] == 0).all())


@pytest.mark.parametrize("recipe", ["fp8_g128", "mxfp8"])
@pytest.mark.parametrize("t,h", [(1, 4096), (7, 7168), (64, 6144), (4099, 4096)])
def test_stage_bit_exact(recipe, t, h):
    if not torch.cuda.is_available():
        pytest.skip("needs a GPU")
    _run(t, h, 6, recipe, 1.0, None, seed=t * 31 + h)


@pytest.mark.parametrize("recipe", ["fp8_g128", "mxfp8"])
def test_stage_padding_rows_and_scaling(recipe):
    if not torch.cuda.is_available():
        pytest.skip("needs a GPU")
    _run(32, 4096, 8, recipe, 2.5, 20, seed=7)


@pytest.mark.parametrize("recipe", ["fp8_g128", "mxfp8"])
def test_stage_pads_the_buffer_capacity(recipe):
    """Rows [T, capacity) become id -1 / weight 0, as DeepGEMM's SM90 pre-dispatch leaves them."""
    if not torch.cuda.is_available():
        pytest.skip("needs a GPU")
    from moe_oracle.kernels.staging_triton import stage

    t, h, k, cap = 5, 4096, 6, 1000
    x = torch.randn(t, h, device="cuda").bfloat16()
    ids = torch.randint(0, 256, (t, k), device="cuda")
    w = torch.rand(t, k, device="cuda")
    ox = torch.empty(cap, h, device="cuda", dtype=torch.float8_e4m3fn)
    osf = torch.empty(cap, h // 128, device="cuda", dtype=torch.float32 if recipe == "fp8_g128" else torch.int32)
    oi = torch.zeros(cap, k, device="cuda", dtype=torch.int64)
    ow = torch.ones(cap, k, device="cuda")
    stage(x, ids, w, ox[:t], osf[:t], oi, ow, recipe=recipe, pad_to=cap)
    assert torch.equal(oi[:t], ids) and torch.equal(ow[:t], w)
    assert bool((oi[t:] == -1).all()) and bool((ow[t:] == 0).all())


@pytest.mark.parametrize("recipe", ["fp8_g128", "mxfp8"])
def test_stage_reads_strided_topk(recipe):
    """topk ids are often a column slice of a wider top-k result (row stride != k)."""
    if not torch.cuda.is_available():
        pytest.skip("needs a GPU")
    from moe_oracle.kernels.staging_triton import stage

    t, h, k, cap = 33, 4096, 6, 64
    x = torch.randn(t, h, device="cuda").bfloat16()
    ids = torch.randint(0, 256, (t, 256), device="cuda")[:, :k]
    w = torch.rand(t, 16, device="cuda")[:, 3 : 3 + k]
    ox = torch.empty(cap, h, device="cuda", dtype=torch.float8_e4m3fn)
    osf = torch.empty(cap, h // 128, device="cuda", dtype=torch.float32 if recipe == "fp8_g128" else torch.int32)
    oi = torch.empty(cap, k, device="cuda", dtype=torch.int64)
    ow = torch.empty(cap, k, device="cuda")
    stage(x, ids, w, ox[:t], osf[:t], oi, ow, recipe=recipe, pad_to=cap, routed_scaling_factor=1.5)
    assert torch.equal(oi[:t], ids) and torch.equal(ow[:t], w * 1.5)
