"""Shared fixtures of the runtime tests: small layer groups from real presets, random masters."""

from __future__ import annotations

import pytest
import torch

from moe_oracle.model.resolve import resolve_model
from moe_oracle.registry import load_registry
from moe_oracle.runtime import route
from moe_oracle.runtime.accuracy import random_masters, scaled_group, variant_weight_quant
from moe_oracle.runtime.quantize import quantize_experts

PRESETS = ("deepseek-ai/DeepSeek-V4-Flash", "deepseek-ai/DeepSeek-V4-Pro", "zai-org/GLM-5")


@pytest.fixture(scope="session")
def registry():
    return load_registry()


@pytest.fixture(scope="session")
def specs(registry):
    return {s.variant: s for s in registry.variants}


def small_group(model: str = "deepseek-ai/DeepSeek-V4-Flash", scale: float | None = None, **update):
    g = resolve_model(model).main_group
    g = scaled_group(g, scale if scale is not None else 512 / g.hidden_size)
    return g.model_copy(update=update) if update else g


def masters(group, seed: int = 0):
    return random_masters(group, torch.Generator().manual_seed(seed))


@pytest.fixture
def gen():
    return torch.Generator().manual_seed(1234)


_CACHE: dict = {}


def twin_setup(preset: str, tokens: int = 32, seed: int = 0):
    """``(group, w13, w2, x, topk_ids, topk_weights, cache)``: a small group of ``preset`` with BF16 masters,
    BF16 hidden states and routed top-k (cached per arguments; ``cache`` holds quantized experts by format)."""
    key = (preset, tokens, seed)
    if key not in _CACHE:
        g = small_group(preset)
        w13, w2 = masters(g, seed)
        gen = torch.Generator().manual_seed(seed + 1)
        x = torch.randn(tokens, g.hidden_size, generator=gen).bfloat16()
        ids, w = route(
            g, torch.randn(tokens, g.num_experts, generator=gen), bias=0.1 * torch.randn(g.num_experts, generator=gen)
        )
        _CACHE[key] = (g, w13, w2, x, ids, w, {})
    return _CACHE[key]


def twin_experts(setup, spec):
    """The masters of ``setup`` quantized to the checkpoint format ``spec``'s kernel takes (cached)."""
    _g, w13, w2, _x, _ids, _w, qcache = setup
    quant, conv = variant_weight_quant(spec)
    if quant.label() not in qcache:
        qcache[quant.label()] = quantize_experts(w13, w2, quant, convention=conv, w2_input_scale=0.004)
    return qcache[quant.label()]
