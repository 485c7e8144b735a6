"""The runtime on the new MoE families (CPU): their routing, the gated shared expert, and the emulation twin
of the SM90 FP8 and SM100 BF16 kernels through ``build_layer`` against the FP32 reference.

Groups are the real configs' main groups (tests/fixtures/models), scaled to H=512 like the presets' runtime tests.
"""

from __future__ import annotations

import pytest
import torch

from moe_oracle.errors import BadInputError
from moe_oracle.model.resolve import resolve_model
from moe_oracle.runtime import (
    LayerConfig,
    build_layer,
    calc_diff,
    reference_moe,
    reference_moe_block,
    route,
    shared_expert_reference,
)
from moe_oracle.runtime.accuracy import random_masters, scaled_group
from moe_oracle.runtime.errors import LayerInputError
from moe_oracle.runtime.quantize import BF16, FP8_BLOCK_FP32, quantize_experts
from tests.model.model_test_helpers import FIXTURES

FAMILIES = {
    "qwen3_moe": "Qwen--Qwen3-30B-A3B-FP8",
    "qwen3_next": "Qwen--Qwen3-Next-80B-A3B-Thinking",
    "minimax_m2": "MiniMaxAI--MiniMax-M2.5",
    "glm4_moe": "reconstructed--GLM-4.5-Air",
}
#: calc_diff bounds of tests/conformance (FP8 activations 3e-3, BF16 2e-5).
TWINS = {"sm90_fp8xfp8": (FP8_BLOCK_FP32, 3e-3), "sm100_bf16": (BF16, 2e-5)}


def _group(fixture: str):
    g = resolve_model(str(FIXTURES / fixture)).main_group
    return scaled_group(g, 512 / g.hidden_size)


def _route(g, tokens: int, gen: torch.Generator):
    logits = torch.randn(tokens, g.num_experts, generator=gen)
    bias = 0.1 * torch.randn(g.num_experts, generator=gen) if g.routing.correction_bias else None
    return logits, bias, *route(g, logits, bias=bias)


def test_softmax_topk_with_and_without_renormalize():
    """Qwen: softmax over all experts, top-k, renormalized by norm_topk_prob (Qwen1.5-MoE: not)."""
    g = _group(FAMILIES["qwen3_moe"])
    logits = torch.randn(16, g.num_experts, generator=torch.Generator().manual_seed(0))
    p = torch.softmax(logits, dim=-1)
    top = torch.topk(p, g.top_k, dim=-1)
    ids, w = route(g, logits)
    assert torch.equal(ids, top.indices)
    torch.testing.assert_close(w, top.values / top.values.sum(-1, keepdim=True))
    raw = g.model_copy(update={"routing": g.routing.model_copy(update={"renormalize": False})})
    _, w_raw = route(raw, logits)
    torch.testing.assert_close(w_raw, top.values)
    assert not torch.allclose(w_raw.sum(-1), torch.ones(16))


def test_sigmoid_with_correction_bias_minimax():
    """MiniMax-M2: sigmoid scores; the bias steers the choice only; the unbiased scores renormalized."""
    g = _group(FAMILIES["minimax_m2"])
    gen = torch.Generator().manual_seed(1)
    logits = torch.randn(16, g.num_experts, generator=gen)
    bias = torch.randn(g.num_experts, generator=gen)
    s = torch.sigmoid(logits)
    ids, w = route(g, logits, bias=bias)
    assert torch.equal(ids, torch.topk(s + bias, g.top_k, dim=-1).indices)
    picked = torch.gather(s, 1, ids)
    torch.testing.assert_close(w, picked / picked.sum(-1, keepdim=True))
    with pytest.raises(BadInputError, match="e_score_correction_bias"):
        route(g, logits)


@pytest.mark.parametrize("family", sorted(FAMILIES))
@pytest.mark.parametrize("variant", sorted(TWINS))
def test_twin_of_new_family_matches_fp32_reference(family, variant):
    g = _group(FAMILIES[family])
    gen = torch.Generator().manual_seed(7)
    w13, w2 = random_masters(g, gen)
    quant, tol = TWINS[variant]
    ex = quantize_experts(w13, w2, quant, convention="deepgemm")
    x = torch.randn(48, g.hidden_size, generator=gen).bfloat16()
    _, _, ids, w = _route(g, 48, gen)
    layer = build_layer("emulation:" + variant, LayerConfig(group=g, max_tokens_per_rank=64, device="cpu"), ex)
    y = layer(x, ids, w)
    ref = reference_moe(x, ids, w, ex, g.activation)
    diff = calc_diff(y.float(), ref)
    assert diff < tol, (family, variant, diff)


def test_qwen3_next_block_with_gated_shared_expert():
    """The twin computes the routed part; the engine adds the sigmoid-gated shared expert outside the kernel."""
    g = _group(FAMILIES["qwen3_next"])
    assert g.num_shared_experts == 1 and g.shared_expert_gate
    gen = torch.Generator().manual_seed(3)
    w13, w2 = random_masters(g, gen)
    ex = quantize_experts(w13, w2, BF16, convention="deepgemm")
    s = g.shared_intermediate_size
    sw13 = torch.randn(2 * s, g.hidden_size, generator=gen) * g.hidden_size**-0.5
    sw2 = torch.randn(g.hidden_size, s, generator=gen) * s**-0.5
    gate = torch.randn(g.hidden_size, generator=gen) * g.hidden_size**-0.5
    x = torch.randn(32, g.hidden_size, generator=gen).bfloat16()
    _, _, ids, w = _route(g, 32, gen)
    layer = build_layer("emulation:sm100_bf16", LayerConfig(group=g, max_tokens_per_rank=32, device="cpu"), ex)
    block = layer(x, ids, w).float() + shared_expert_reference(x, sw13, sw2, g.activation, gate)
    ref = reference_moe_block(g, x, ids, w, ex, shared=(sw13, sw2), shared_gate=gate)
    assert calc_diff(block, ref) < 2e-5
    ungated = reference_moe(x, ids, w, ex, g.activation) + shared_expert_reference(x, sw13, sw2, g.activation)
    assert calc_diff(ungated, ref) > 1e-3  # the gate matters
    with pytest.raises(BadInputError, match="shared_expert_gate"):
        reference_moe_block(g, x, ids, w, ex, shared=(sw13, sw2))


def test_twin_refuses_what_its_kernel_cannot_run():
    gpt_oss = resolve_model(str(FIXTURES / "openai--gpt-oss-20b")).main_group
    g = gpt_oss.model_copy(update={"hidden_size": 512, "moe_intermediate_size": 256})
    with pytest.raises(LayerInputError) as info:
        build_layer("emulation:sm100_fp8xfp4", LayerConfig(group=g, max_tokens_per_rank=8, device="cpu"))
    assert "EXPERT_BIAS_UNSUPPORTED" in str(info.value) and "engine's own MoE" in info.value.fix
    llama = _group("meta-llama--Llama-4-Scout-17B-16E-Instruct")
    with pytest.raises(LayerInputError, match="ROUTER_WEIGHT_ON_INPUT"):
        build_layer("emulation:sm100_bf16", LayerConfig(group=llama, max_tokens_per_rank=8, device="cpu"))


def test_accuracy_lists_the_variants_whose_kernel_cannot_run_the_group():
    from moe_oracle.runtime.accuracy import run_accuracy

    desc = resolve_model(str(FIXTURES / "openai--gpt-oss-20b"))
    with pytest.raises(LayerInputError, match="no variant's kernel can run") as info:
        run_accuracy(desc, tokens=8, scale=0.2)
    assert "EXPERT_BIAS_UNSUPPORTED" in str(info.value)
    report = run_accuracy(resolve_model(str(FIXTURES / "MiniMaxAI--MiniMax-M2.5")), tokens=8, variants=["sm100_bf16"])
    assert [r.variant for r in report.rows] == ["sm100_bf16"] and report.refused == []
