"""Fixtures for the model-description tests."""

from __future__ import annotations

import copy

import pytest

from tests.model.model_test_helpers import preset


@pytest.fixture
def v4_flash() -> dict:
    return copy.deepcopy(preset("deepseek-ai--DeepSeek-V4-Flash")[0])


@pytest.fixture
def glm5() -> dict:
    return copy.deepcopy(preset("zai-org--GLM-5")[0])
