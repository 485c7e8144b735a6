"""The non-fused FP8 path: layout arithmetic, the Triton glue (interpreted on CPUs) and DeepGEMM on SM90.

The CPU tests run the glue kernels under Triton's interpreter (exact for the integer routing and
layout; its FP8 cast is not bit-exact, so values are checked against the FP32 reference with a
tolerance) with the torch grouped-GEMM reference. The GPU test runs DeepGEMM's grouped GEMMs in
both layouts at full DeepSeek-V4-Flash shape, checks them bitwise equal and against the FP32
reference, and captures the forward in a CUDA graph.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
import torch
from moe_oracle_backends.cuda_sm90.nonfused.layer import rows_bound

CODE = """
import torch
from moe_oracle.model.resolve import resolve_model
from moe_oracle.model.types import QuantSpec
from moe_oracle.runtime import LayerConfig, calc_diff, reference_moe
from moe_oracle.runtime.accuracy import random_masters, scaled_group
from moe_oracle_backends.cuda_sm90.nonfused.layer import GroupedGemmMoE
from moe_oracle.runtime.quantize import quantize_experts

g = scaled_group(resolve_model("zai-org/GLM-5-FP8").main_group, 512 / 6144)
g = g.model_copy(update={"num_experts": 16, "top_k": 4})
w13, w2 = random_masters(g, torch.Generator().manual_seed(0))
experts = quantize_experts(w13, w2, g.weight_quant)
gen = torch.Generator().manual_seed(1)
t = 7
x = torch.randn(t, g.hidden_size, generator=gen).bfloat16()
ids = torch.stack([torch.randperm(16, generator=gen)[:4] for _ in range(t)])
wide = torch.full((t, 9), 99)
wide[:, 2:6] = ids
ids = wide[:, 2:6]  # a strided view, as route() returns
ids[3, 1] = -1
w = torch.rand(t, 4, generator=gen)
outs = {}
for layout in ("psum", "m_indices"):
    layer = GroupedGemmMoE(LayerConfig(group=g, max_tokens_per_rank=16, device="cpu"), layout=layout, gemm="torch")
    layer.load(experts)
    y = layer(x, ids, w).float().clone()
    valid = ids[ids >= 0]
    assert torch.equal(layer.counts, torch.bincount(valid, minlength=16).int()), layout
    aligned = (layer.counts + 127) // 128 * 128
    assert torch.equal(layer.starts, torch.cumsum(aligned, 0).int() - aligned), layout
    assert torch.equal(layer.ends, layer.starts + layer.counts), layout
    rows = layer.row_of_slot[: t * 4].view(t, 4)
    assert bool((rows[ids < 0] == -1).all())
    assert torch.equal(layer.m_indices[rows[ids >= 0].long()], ids[ids >= 0].int()), layout
    assert int((layer.m_indices >= 0).sum()) == valid.numel(), layout
    ref = reference_moe(layer.staged_input(x), ids, w, experts, g.activation)
    d = calc_diff(y, ref)
    assert d < 1e-2, (layout, d)  # the interpreter's FP8 cast rounds some values differently (GPU: < 1e-3)
    outs[layout] = y
assert torch.equal(outs["psum"], outs["m_indices"])
print("ok")
"""


def test_rows_bound_is_the_worst_case_padding():
    assert rows_bound(1, 6, 256, 128) == 768  # h200.md §6: 768 rows at T=1
    assert rows_bound(8192, 6, 256, 128) == 81664  # and 81,664 at T=8192
    assert rows_bound(0, 6, 256, 128) == 0
    gen = torch.Generator().manual_seed(0)
    for t in (1, 3, 50, 300):
        ids = torch.stack([torch.randperm(256, generator=gen)[:6] for _ in range(t)])
        counts = torch.bincount(ids.flatten(), minlength=256)
        assert int(((counts + 127) // 128 * 128).sum()) <= rows_bound(t, 6, 256, 128)


def test_non_fp8_experts_are_refused():
    from moe_oracle_backends.cuda_sm90.nonfused.layer import GroupedGemmMoE

    from moe_oracle.model.resolve import resolve_model
    from moe_oracle.runtime import LayerConfig
    from moe_oracle.runtime.errors import LayerInputError

    g = resolve_model("deepseek-ai/DeepSeek-V4-Flash").main_group
    with pytest.raises(LayerInputError, match=r"mxfp4 g32 ue8m0.*FP8 block-128"):
        GroupedGemmMoE(LayerConfig(group=g, max_tokens_per_rank=4, device="cpu"), gemm="torch")


def test_glue_kernels_interpreted():
    pytest.importorskip("triton")
    env = {**os.environ, "TRITON_INTERPRET": "1"}
    p = subprocess.run([sys.executable, "-c", CODE], capture_output=True, text=True, env=env, timeout=600)
    assert p.returncode == 0 and p.stdout.strip().endswith("ok"), p.stderr[-3000:]


SWIGLU_CODE = """
import torch
from moe_oracle.kernels.grouped_triton import swiglu_quantize

gen = torch.Generator().manual_seed(3)
for inter in (128, 384, 512, 768, 1408, 2048):
    rows = 6
    h = (torch.randn(rows, 2 * inter, generator=gen) * 3).bfloat16()
    m_indices = torch.tensor([0, -1, 2, 1, -1, 0], dtype=torch.int32)
    outs = []
    for gpp in (None, 1, 2, 8):
        a = torch.zeros(rows, inter, dtype=torch.float8_e4m3fn)
        sf = torch.zeros(rows * (inter // 128))
        swiglu_quantize(h, m_indices, a, sf, rows=rows, clamp=7.0, groups_per_program=gpp)
        outs.append((a.view(torch.uint8).clone(), sf.clone()))
    for a, sf in outs[1:]:
        assert torch.equal(a, outs[0][0]) and torch.equal(sf, outs[0][1]), inter
    assert bool((outs[0][0][1] == 0).all()) and bool((outs[0][0][0] != 0).any()), inter
print("ok")
"""


def test_swiglu_quantize_does_not_depend_on_the_groups_per_program():
    """The columns past I are masked: one program per row (I = 768: 8 groups, 2 masked) writes the same bytes as
    one-group programs (the previous grid for any I not a multiple of 512)."""
    pytest.importorskip("triton")
    env = {**os.environ, "TRITON_INTERPRET": "1"}
    p = subprocess.run([sys.executable, "-c", SWIGLU_CODE], capture_output=True, text=True, env=env, timeout=600)
    assert p.returncode == 0 and p.stdout.strip().endswith("ok"), p.stderr[-3000:]


@pytest.mark.gpu
@pytest.mark.parametrize("model", ["deepseek-ai/DeepSeek-V4-Flash", "zai-org/GLM-5-FP8"])
def test_deep_gemm_grouped_layouts(model):
    if not torch.cuda.is_available():
        pytest.skip("no GPU")
    from moe_oracle_backends.cuda_sm90.nonfused.layer import GroupedGemmMoE

    from moe_oracle.model.resolve import resolve_model
    from moe_oracle.model.types import QuantSpec
    from moe_oracle.runtime import LayerConfig, calc_diff, reference_moe, route
    from moe_oracle.runtime.accuracy import random_masters
    from moe_oracle.runtime.errors import BackendUnavailableError
    from moe_oracle.runtime.quantize import quantize_experts

    fp8 = QuantSpec(format="fp8_block", block=(128, 128), scale_format="fp32")
    g = resolve_model(model).main_group.model_copy(update={"weight_quant": fp8})
    w13, w2 = random_masters(g, torch.Generator(device="cuda").manual_seed(0))
    experts = quantize_experts(w13, w2, fp8)
    del w13, w2
    cfg = LayerConfig(group=g, max_tokens_per_rank=512)
    try:
        layers = {lay: GroupedGemmMoE(cfg, layout=lay) for lay in ("psum", "m_indices")}
    except BackendUnavailableError as exc:
        pytest.skip(str(exc))
    for layer in layers.values():
        layer.load(experts)
    gen = torch.Generator(device="cuda").manual_seed(7)
    for t in (1, 512):  # two GEMM configs to JIT-compile per layout (the sweep covers every T)
        x = torch.randn(t, g.hidden_size, device="cuda", generator=gen).bfloat16()
        logits = torch.randn(t, g.num_experts, device="cuda", generator=gen)
        ids, w = route(g, logits, bias=0.1 * torch.randn(g.num_experts, device="cuda", generator=gen))
        ys = {lay: layer(x, ids, w).clone() for lay, layer in layers.items()}
        rows = torch.arange(min(t, 64), device="cuda")
        ref = reference_moe(layers["psum"].staged_input(x)[rows], ids[rows], w[rows], experts, g.activation)
        for lay, y in ys.items():
            d = calc_diff(y[rows].float(), ref)
            assert torch.isfinite(y).all() and d < 1e-3, (lay, t, d)
        diff = (ys["psum"].float() - ys["m_indices"].float()).abs().max()
        assert torch.equal(ys["psum"], ys["m_indices"]), (t, float(diff))
        layer = layers["psum"]
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            out = layer(x, ids, w)
        graph.replay()
        torch.cuda.synchronize()
        assert torch.equal(out, ys["psum"]), t


def test_declared_paths_build_their_implementation():
    from moe_oracle_backends.cuda_sm90.nonfused.layer import GroupedGemmMoE

    from moe_oracle.model.resolve import resolve_model
    from moe_oracle.runtime import LayerConfig, build_layer
    from moe_oracle.runtime.errors import UnknownVariantError

    g = resolve_model("zai-org/GLM-5-FP8").main_group
    cfg = LayerConfig(group=g, max_tokens_per_rank=4, device="cpu", options={"gemm": "torch"})
    for key, layout in (("nonfused:deepgemm_fp8_psum", "psum"), ("nonfused:deepgemm_fp8_m_indices", "m_indices")):
        layer = build_layer(key, cfg)
        assert isinstance(layer, GroupedGemmMoE) and layer.layout == layout and layer.key.startswith(key)
    with pytest.raises(UnknownVariantError, match="nonfused:deepgemm_fp8_psum"):
        build_layer("nonfused:cutlass", cfg)


def test_decision_for_the_non_fused_path_builds_it():
    from moe_oracle_backends.cuda_sm90.nonfused.layer import GroupedGemmMoE

    from moe_oracle.cost.model import Workload
    from moe_oracle.decide.selection import decide
    from moe_oracle.inputs import DeploymentFlags, build_deployment, resolve_software
    from moe_oracle.model.resolve import resolve_model
    from moe_oracle.runtime.build import build_layer_for_decision
    from moe_oracle.runtime.errors import BackendUnavailableError

    dep, _ = build_deployment(DeploymentFlags(device="h200", gpus_per_node=1, max_num_batched_tokens=8192))
    sw, _ = resolve_software("all", "h200")
    decision = decide(resolve_model("zai-org/GLM-5-FP8"), dep, sw, workload=Workload(((8192, 1.0),)))
    assert decision.main.chosen is None and decision.main.nonfused.key == "nonfused:deepgemm_fp8_psum"
    layer = build_layer_for_decision(decision, device="cpu", max_tokens_per_rank=8, options={"gemm": "torch"})
    assert isinstance(layer, GroupedGemmMoE) and layer.layout == "psum"
    try:
        import deep_gemm  # noqa: F401
    except Exception:
        with pytest.raises(BackendUnavailableError, match="deep_gemm"):
            build_layer_for_decision(decision, device="cpu", max_tokens_per_rank=8)
