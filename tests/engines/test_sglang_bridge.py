"""The SGLang adapter's SGLang-free part: parameters shaped as SGLang 0.5.23's quant methods create them ->
moe-oracle layer -> forward (CPU, numerics twin). The same code runs with the real SM90 kernels on the H200
(``benchmarks/engine_bridge.py --engine sglang``); inside SGLang the plug-in's FusedMoE calls it
(``tests/engines/test_real_sglang_plugin.py``, real SGLang 0.5.23)."""

from __future__ import annotations

import pytest
import torch

from moe_oracle.engines.bridge import (
    ENGINE_PARAMS,
    LayerPlan,
    MegaMoEBridge,
    check_parameters,
    checkpoint_experts,
    engine_parameters,
    parameter_shapes,
    ue8m0_from_powers_of_two,
)
from moe_oracle.model.types import WeightFormat
from moe_oracle.runtime import calc_diff, reference_moe, route
from moe_oracle.runtime.accuracy import random_masters
from moe_oracle.runtime.errors import LayerInputError
from moe_oracle.runtime.quantize import BF16, FP8_BLOCK_FP32, MXFP4, NVFP4, quantize_experts
from tests.engines.test_vllm_bridge import group_for

CASES = [
    ("deepseek-ai/DeepSeek-V4-Flash", MXFP4, "deep_gemm_mega_moe:sm90_fp8xfp4"),
    ("zai-org/GLM-5-FP8", FP8_BLOCK_FP32, "deep_gemm_mega_moe:sm90_fp8xfp8"),
    ("zai-org/GLM-5", BF16, "deep_gemm_mega_moe:sm100_bf16"),
]


def test_sglang_mxfp4_layout_is_fp8_moe_methods_fp4_experts():
    """``Fp8MoEMethod.create_fp8_moe_weight_`` with ``is_fp4_expert`` on CUDA (fp8.py:1604-1626, 1694-1720)."""
    shapes = parameter_shapes("sglang", WeightFormat.MXFP4, 48, 7168, 3072)
    assert shapes == {
        "w13_weight": ((48, 6144, 3584), torch.int8),
        "w13_weight_scale_inv": ((48, 6144, 224), torch.float32),
        "w2_weight": ((48, 7168, 1536), torch.int8),
        "w2_weight_scale_inv": ((48, 7168, 96), torch.float32),
    }
    fp8 = parameter_shapes("sglang", WeightFormat.FP8_BLOCK, 48, 7168, 3072)
    assert fp8["w13_weight_scale_inv"] == ((48, 48, 56), torch.float32)
    with pytest.raises(LayerInputError, match=r"SGLang 0\.5\.23 has no MoE quant method"):
        parameter_shapes("sglang", WeightFormat.NVFP4, 8, 512, 256)


@pytest.mark.parametrize(("model", "quant", "variant"), CASES, ids=[c[2].split(":")[1] for c in CASES])
def test_sglang_parameters_through_the_bridge_match_the_reference(model, quant, variant):
    g = group_for(model, quant)
    w13, w2 = random_masters(g, torch.Generator().manual_seed(3))
    experts = quantize_experts(w13, w2, quant)
    params = engine_parameters("sglang", experts, g)
    assert set(params) == set(ENGINE_PARAMS["sglang"][g.weight_format])
    check_parameters(params, g, g.num_experts, engine="sglang")
    plan = LayerPlan(group=g, variant=variant, max_tokens_per_rank=32, emulate=True)
    bridge = MegaMoEBridge.for_plan(plan, device="cpu", engine="sglang")
    bridge.load(params)
    x = torch.randn(24, g.hidden_size, generator=torch.Generator().manual_seed(4)).bfloat16()
    ids, w = route(g, torch.randn(24, g.num_experts), bias=0.1 * torch.randn(g.num_experts))
    y = bridge.forward(x, w, ids.int())
    # the reference reads the same checkpoint straight from the quantizer: SGLang's float32 scales read back exactly
    ref = reference_moe(x, ids, w, experts, g.activation)
    if experts.w13_scale is not None:
        read = checkpoint_experts(params, quant, engine="sglang").w13_scale
        assert torch.equal(read.view(torch.uint8), experts.w13_scale.view(torch.uint8))
    bound = {WeightFormat.BF16: 2e-5, WeightFormat.FP8_BLOCK: 3e-3, WeightFormat.MXFP4: 3e-3}[g.weight_format]
    assert calc_diff(y.float(), ref) < bound


def test_sglang_mxfp4_scales_that_are_not_powers_of_two_are_refused():
    scales = torch.tensor([[1.0, 0.5, 2.0**-126], [3.0, 0.0, 1.0]])
    with pytest.raises(LayerInputError) as info:
        ue8m0_from_powers_of_two(scales, "w13_weight_scale_inv")
    msg = str(info.value)
    assert "\n" not in msg and "2 MXFP4 scale(s)" in msg and "3.0" in msg and "'sglang'" in msg
    assert ue8m0_from_powers_of_two(torch.tensor([1.0, 2.0**-126, 2.0**127]), "s").tolist() == [127, 1, 254]


def test_sglang_parameters_of_another_shape_are_refused_before_loading():
    g = group_for("deepseek-ai/DeepSeek-V4-Flash", MXFP4)
    shapes = parameter_shapes("vllm", WeightFormat.MXFP4, g.num_experts, g.hidden_size, g.moe_intermediate_size)
    params = {n: torch.empty(s, dtype=d) for n, (s, d) in shapes.items()}  # vLLM's names and dtypes
    with pytest.raises(LayerInputError) as info:
        check_parameters(params, g, g.num_experts, engine="sglang")
    msg = str(info.value)
    assert "SGLang's quant method" in msg and "w13_weight_scale_inv missing" in msg and "'sglang'" in msg


def test_nvfp4_is_not_an_sglang_layout_the_bridge_reads():
    assert WeightFormat.NVFP4 not in ENGINE_PARAMS["sglang"]
    assert NVFP4.format is WeightFormat.NVFP4


@pytest.mark.gpu
@pytest.mark.parametrize(
    ("model", "quant", "variant"), CASES[:2], ids=["v4flash-mxfp4-sm90_fp8xfp4", "glm5-fp8-sm90_fp8xfp8"]
)
def test_sglang_parameters_through_the_real_sm90_kernel(model, quant, variant):
    """H200: SGLang-shaped parameters (full expert shape) -> the real SM90 kernel, against the FP32 reference and the
    twin, at T = 1 and 64 (overhead vs the bare kernel: ``benchmarks/engine_bridge.py --engine sglang``)."""
    from moe_oracle.model.resolve import resolve_model
    from moe_oracle.runtime.build import build_layer
    from moe_oracle.runtime.errors import BackendUnavailableError

    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    g = resolve_model(model).main_group.model_copy(update={"weight_quant": quant})
    plan = LayerPlan(group=g, variant=variant, max_tokens_per_rank=256)
    try:
        bridge = MegaMoEBridge.for_plan(plan, device="cuda", engine="sglang")
    except BackendUnavailableError as exc:
        pytest.skip(exc.one_line())
    w13, w2 = random_masters(g, torch.Generator(device="cuda").manual_seed(1))
    experts = quantize_experts(w13, w2, quant)
    del w13, w2
    params = {n: t.cuda() for n, t in engine_parameters("sglang", experts, g).items()}
    check_parameters(params, g, g.num_experts, engine="sglang")
    bridge.load(params)
    del params
    twin = build_layer("emulation:" + variant.split(":")[1], bridge.layer.config, experts)
    gen = torch.Generator(device="cuda").manual_seed(0)
    for t in (1, 64):
        x = torch.randn(t, g.hidden_size, device="cuda", generator=gen).bfloat16()
        logits = torch.randn(t, g.num_experts, device="cuda", generator=gen)
        ids, w = route(g, logits, bias=torch.zeros(g.num_experts, device="cuda"))
        y = bridge.forward(x, w, ids.int()).float()
        ref = reference_moe(twin.quantized_input(x), ids, w, experts, g.activation)
        assert calc_diff(y, ref) < 1e-3 and calc_diff(y, twin(x, ids, w).float()) < 3e-4, t
    bridge.layer.close()


def test_sglang_flashinfer_mxfp4_layout_native_e8m0_scales_and_up_first():
    """DeepSeek V4's default runner on SM90 (Mxfp4FlashinferCutlassMoEMethod): E8M0 scales, w13 loaded [up; gate]."""
    g = group_for("deepseek-ai/DeepSeek-V4-Flash", MXFP4)
    w13, w2 = random_masters(g, torch.Generator().manual_seed(7))
    experts = quantize_experts(w13, w2, MXFP4)
    params = engine_parameters("sglang", experts, g)
    for name in ("w13_weight_scale_inv", "w2_weight_scale_inv"):
        params[name] = experts.w13_scale.clone() if name.startswith("w13") else experts.w2_scale.clone()
        params[name] = params[name].view(torch.uint8).view(torch.float8_e8m0fnu)
    for name in ("w13_weight", "w13_weight_scale_inv"):
        half = params[name].shape[1] // 2
        params[name] = torch.cat([params[name][:, half:], params[name][:, :half]], dim=1)
    check_parameters(params, g, g.num_experts, engine="sglang")
    plan = LayerPlan(group=g, variant="deep_gemm_mega_moe:sm90_fp8xfp4", max_tokens_per_rank=16, emulate=True)
    bridge = MegaMoEBridge.for_plan(plan, device="cpu", engine="sglang")
    bridge.w13_up_first = True
    bridge.load(params)
    x = torch.randn(8, g.hidden_size, generator=torch.Generator().manual_seed(8)).bfloat16()
    ids, w = route(g, torch.randn(8, g.num_experts), bias=torch.zeros(g.num_experts))
    assert calc_diff(bridge.forward(x, w, ids.int()).float(), reference_moe(x, ids, w, experts, g.activation)) < 3e-3
