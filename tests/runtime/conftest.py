"""Shared fixtures of the runtime tests: small layer groups from real presets, random masters."""

from __future__ import annotations

import pytest
import torch

from moe_oracle.model.resolve import resolve_model
from moe_oracle.registry import load_registry
from moe_oracle.runtime.accuracy import random_masters, scaled_group

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
