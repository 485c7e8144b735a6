"""The vLLM adapter's vLLM-free part: vLLM-shaped parameters -> moe-oracle layer -> forward (CPU, twin).

The same code runs with the real SM90 kernels on the H200 (benchmarks/vllm_bridge.py); inside vLLM the
plug-in's RoutedExperts calls it (tests/engines/test_real_vllm.py, real vLLM 0.33.0).
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from moe_oracle.engines.bridge import engine_parameters
from moe_oracle.engines.vllm.bridge import (
    PARAMS,
    LayerPlan,
    MegaMoEBridge,
    check_parameters,
    checkpoint_experts,
    vllm_parameter_shapes,
)
from moe_oracle.model.resolve import resolve_model
from moe_oracle.model.types import WeightFormat
from moe_oracle.runtime import calc_diff, reference_moe, route
from moe_oracle.runtime.accuracy import random_masters, scaled_group
from moe_oracle.runtime.errors import LayerInputError
from moe_oracle.runtime.quantize import BF16, FP8_BLOCK_FP32, MXFP4, NVFP4, quantize_experts

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "models"
CASES = [
    ("deepseek-ai/DeepSeek-V4-Flash", MXFP4, "deep_gemm_mega_moe:sm90_fp8xfp4"),
    ("zai-org/GLM-5-FP8", FP8_BLOCK_FP32, "deep_gemm_mega_moe:sm90_fp8xfp8"),
    ("nvidia/GLM-5.1-NVFP4", NVFP4, "deep_gemm_mega_moe:sm100_nvfp4"),
    ("zai-org/GLM-5", BF16, "deep_gemm_mega_moe:sm100_bf16"),
    # issue 24: the quant methods the new families' checkpoints select in vLLM (families-2026-12.md §2.3)
    (str(FIXTURES / "Qwen--Qwen3-235B-A22B-FP8"), FP8_BLOCK_FP32, "deep_gemm_mega_moe:sm90_fp8xfp8"),
    (str(FIXTURES / "MiniMaxAI--MiniMax-M2.5"), FP8_BLOCK_FP32, "deep_gemm_mega_moe:sm90_fp8xfp8"),
    (str(FIXTURES / "nvidia--Qwen3-235B-A22B-NVFP4"), NVFP4, "deep_gemm_mega_moe:sm100_nvfp4"),
    (str(FIXTURES / "Qwen--Qwen3-30B-A3B"), BF16, "deep_gemm_mega_moe:sm100_bf16"),
]
IDS = [f"{Path(c[0]).name.split('--')[-1]}-{c[2].split(':')[1]}" for c in CASES]


def group_for(model: str, quant):
    g = resolve_model(model).main_group
    return scaled_group(g, 512 / g.hidden_size).model_copy(update={"weight_quant": quant})


def as_vllm_params(experts, g) -> dict[str, torch.Tensor]:
    """What vLLM's quant method creates, filled with the checkpoint's tensors (as its loader does)."""
    return engine_parameters("vllm", experts, g)


@pytest.mark.parametrize(("model", "quant", "variant"), CASES, ids=IDS)
def test_vllm_parameters_through_the_bridge_match_the_reference(model, quant, variant):
    g = group_for(model, quant)
    w13, w2 = random_masters(g, torch.Generator().manual_seed(3))
    experts = quantize_experts(w13, w2, quant)
    params = as_vllm_params(experts, g)
    assert set(params) == set(PARAMS[g.weight_format])
    check_parameters(params, g, g.num_experts)
    plan = LayerPlan.from_json(LayerPlan(group=g, variant=variant, max_tokens_per_rank=32, emulate=True).to_json())
    bridge = MegaMoEBridge.for_plan(plan, device="cpu")
    bridge.load(params)
    x = torch.randn(24, g.hidden_size, generator=torch.Generator().manual_seed(4)).bfloat16()
    bias = 0.1 * torch.randn(g.num_experts) if g.routing.correction_bias else None
    ids, w = route(g, torch.randn(24, g.num_experts), bias=bias)
    y = bridge.forward(x, w, ids.int())  # vLLM's argument order, int32 ids
    ref = reference_moe(x, ids, w, checkpoint_experts(params, quant), g.activation)
    assert y.shape == x.shape and y.dtype == torch.bfloat16
    bound = {WeightFormat.BF16: 2e-5, WeightFormat.FP8_BLOCK: 3e-3, WeightFormat.MXFP4: 3e-3}.get(g.weight_format, 3e-2)
    assert calc_diff(y.float(), ref) < bound


def test_expert_parallel_rank_reads_its_slice():
    g = group_for("zai-org/GLM-5-FP8", FP8_BLOCK_FP32)
    w13, w2 = random_masters(g, torch.Generator().manual_seed(5))
    experts = quantize_experts(w13, w2, FP8_BLOCK_FP32)
    ep, rank = 4, 2
    local = g.num_experts // ep
    lo = rank * local
    sliced = type(experts)(experts.quant, experts.w13[lo : lo + local], experts.w2[lo : lo + local],
                           experts.w13_scale[lo : lo + local], experts.w2_scale[lo : lo + local])  # fmt: skip
    plan = LayerPlan(group=g, variant="deep_gemm_mega_moe:sm90_fp8xfp8", max_tokens_per_rank=16, emulate=True)
    bridge = MegaMoEBridge.for_plan(plan, ep_rank=rank, ep_size=ep, device="cpu")
    assert bridge.first_expert == lo
    bridge.load(as_vllm_params(sliced, g.model_copy(update={"num_experts": local})))
    x = torch.randn(8, g.hidden_size).bfloat16()
    ids, w = route(g, torch.randn(8, g.num_experts), bias=torch.zeros(g.num_experts))
    y = bridge.forward(x, w, ids)
    mine = (ids >= lo) & (ids < lo + local)
    ref = reference_moe(x, torch.where(mine, ids, -1), torch.where(mine, w, 0.0), experts, g.activation)
    assert calc_diff(y.float(), ref) < 3e-3


def test_parameters_vllm_padded_are_refused_before_loading():
    g = group_for("deepseek-ai/DeepSeek-V4-Flash", MXFP4)
    shapes = vllm_parameter_shapes(WeightFormat.MXFP4, g.num_experts, g.hidden_size + 256, g.moe_intermediate_size)
    params = {n: torch.empty(s, dtype=d) for n, (s, d) in shapes.items()}
    with pytest.raises(LayerInputError) as info:
        check_parameters(params, g, g.num_experts)
    msg = str(info.value)
    assert "\n" not in msg and "w13_weight is" in msg and "Fix:" in msg


def test_nvfp4_w1_w3_global_scales_must_agree():
    g = group_for("nvidia/GLM-5.1-NVFP4", NVFP4)
    w13, w2 = random_masters(g, torch.Generator().manual_seed(6))
    params = as_vllm_params(quantize_experts(w13, w2, NVFP4), g)
    params["w13_weight_scale_2"][0, 1] *= 2
    with pytest.raises(LayerInputError, match="weight_scale_2 differ"):
        checkpoint_experts(params, NVFP4)


def test_forward_before_load_is_one_line():
    g = group_for("zai-org/GLM-5-FP8", FP8_BLOCK_FP32)
    bridge = MegaMoEBridge.for_plan(
        LayerPlan(group=g, variant="deep_gemm_mega_moe:sm90_fp8xfp8", max_tokens_per_rank=4, emulate=True),
        device="cpu",
    )
    with pytest.raises(LayerInputError, match="not loaded"):
        bridge.forward(torch.zeros(1, g.hidden_size).bfloat16(), torch.ones(1, g.top_k), torch.zeros(1, g.top_k))


def test_block_m_hint_is_the_mean_tokens_per_ep_rank():
    g = group_for("zai-org/GLM-5-FP8", FP8_BLOCK_FP32)
    plan = LayerPlan(group=g, variant="deep_gemm_mega_moe:sm90_fp8xfp8", max_tokens_per_rank=4, emulate=True)
    bridge = MegaMoEBridge.for_plan(plan, ep_rank=0, ep_size=8, device="cpu")
    assert bridge.block_m_hint(3, 8 * 3) == 3
    assert bridge.block_m_hint(1, 1 + 7 * 64) == 57  # ragged step: every rank passes the same mean
    assert bridge.block_m_hint(5, None) == 5


@pytest.mark.gpu
def test_qwen3_fp8_vllm_parameters_through_the_real_sm90_kernel() -> None:
    """The bridge's vLLM-free half with the real SM90 FP8 kernel (H200): Qwen3-30B-A3B-FP8's full expert shape
    (128 experts, H 2048, I 768, top-8) in vLLM's ``Fp8MoEMethod`` parameter layout, EP 1, against the twin."""
    from moe_oracle.runtime.errors import BackendUnavailableError

    if not torch.cuda.is_available():
        pytest.skip("needs a GPU")
    g = resolve_model(str(FIXTURES / "Qwen--Qwen3-30B-A3B-FP8")).main_group
    w13, w2 = random_masters(g, torch.Generator().manual_seed(3))
    experts = quantize_experts(w13, w2, g.weight_quant)
    params = {k: v.cuda() for k, v in as_vllm_params(experts, g).items()}
    variant = "deep_gemm_mega_moe:sm90_fp8xfp8"
    try:
        real = MegaMoEBridge.for_plan(LayerPlan(group=g, variant=variant, max_tokens_per_rank=512), device="cuda")
    except BackendUnavailableError as exc:
        pytest.skip(exc.one_line())
    twin = MegaMoEBridge.for_plan(
        LayerPlan(group=g, variant=variant, max_tokens_per_rank=512, emulate=True), device="cuda"
    )
    real.load(dict(params))
    twin.load(dict(params))
    for tokens in (1, 64, 512):
        x = torch.randn(tokens, g.hidden_size, generator=torch.Generator().manual_seed(tokens)).bfloat16().cuda()
        ids, w = route(g, torch.randn(tokens, g.num_experts).cuda())
        y_real, y_twin = real.forward(x, w, ids.int()), twin.forward(x, w, ids.int())
        ref = reference_moe(x, ids, w, checkpoint_experts(params, g.weight_quant), g.activation)
        assert calc_diff(y_real.float(), y_twin.float()) < 3e-4, tokens
        assert calc_diff(y_real.float(), ref) < 3e-3, tokens
