"""forward_logits on the CPU: route() + forward, bit for bit, with the fallback's reason (the fused path: GPU tests)."""

from __future__ import annotations

import torch

from moe_oracle.model.types import QuantSpec
from moe_oracle.rules.recipe import ActQuant
from moe_oracle.runtime import LayerConfig, RoutingPath, build_layer, route
from moe_oracle.runtime.quantize import quantize_experts
from moe_oracle.runtime.routing import random_hash_table
from moe_oracle.runtime.routing_path import fused_routing_path
from moe_oracle.runtime.staging import StagingSpec

from .conftest import masters, small_group

FP8_BLOCK = QuantSpec(format="fp8_block", block=(128, 128), scale_format="fp32")


def _twin(group):
    w13, w2 = masters(group)
    ex = quantize_experts(w13, w2, FP8_BLOCK)
    cfg = LayerConfig(group=group, max_tokens_per_rank=16, device="cpu")
    return build_layer("emulation:sm90_fp8xfp8", cfg, ex)


def test_forward_logits_is_route_then_forward_on_the_twin():
    g = small_group("zai-org/GLM-5")
    layer = _twin(g)
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(9, g.hidden_size, generator=gen).bfloat16()
    logits = torch.randn(9, g.num_experts, generator=gen)
    bias = 0.1 * torch.randn(g.num_experts, generator=gen)
    assert layer.routing_path(x, logits, bias) is RoutingPath.FALLBACK_BACKEND
    assert torch.equal(layer.forward_logits(x, logits, bias=bias), layer(x, *route(g, logits, bias=bias)))


def test_hash_layers_fall_back_with_their_reason():
    g = small_group()
    g = g.model_copy(update={"routing": g.routing.model_copy(update={"hash": True, "correction_bias": False})})
    layer = _twin(g)
    gen = torch.Generator().manual_seed(1)
    x = torch.randn(4, g.hidden_size, generator=gen).bfloat16()
    logits = torch.randn(4, g.num_experts, generator=gen)
    table = random_hash_table(50, g.num_experts, g.top_k, generator=gen)
    tokens = torch.tensor([3, 1, 49, 3])
    assert layer.routing_path(x, logits) is RoutingPath.FALLBACK_HASH
    y = layer.forward_logits(x, logits, token_ids=tokens, hash_table=table)
    assert torch.equal(y, layer(x, *route(g, logits, token_ids=tokens, hash_table=table)))
    sm90 = StagingSpec(ActQuant.FP8_G128_FP32, "fp32", triton_recipe="fp8_g128", pad_rows=False)
    assert fused_routing_path(g, sm90, x, logits) is RoutingPath.FALLBACK_HASH


def test_cpu_tensors_fall_back_on_an_sm90_staging():
    g = small_group("zai-org/GLM-5")
    sm90 = StagingSpec(ActQuant.FP8_G128_FP32, "fp32", triton_recipe="fp8_g128", pad_rows=False)
    x = torch.zeros(2, g.hidden_size, dtype=torch.bfloat16)
    assert fused_routing_path(g, sm90, x, torch.zeros(2, g.num_experts)) is RoutingPath.FALLBACK_CPU
