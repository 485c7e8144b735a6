"""build_layer: keys, one-line errors when a vendor library is absent, decisions to layers.

The real backends run only where their library and GPU exist: tests/runtime/test_gpu_backends.py.
"""

from __future__ import annotations

import sys

import pytest

from moe_oracle.errors import OracleError
from moe_oracle.registry import load_registry
from moe_oracle.runtime import LayerConfig, build_layer
from moe_oracle.runtime.accuracy import variant_weight_quant
from moe_oracle.runtime.build import build_layer_for_decision, resolve_variant
from moe_oracle.runtime.errors import BackendUnavailableError, UnknownVariantError

from .conftest import small_group

#: moe-oracle's own variants (their kernel libraries are deep_gemm or aiter)
REAL_KEYS = [v.key for v in load_registry().variants if load_registry().origin(v).builtin and v.runtime]


def test_resolve_variant_forms(specs):
    assert resolve_variant("emulation:sm90_fp8xfp8") == (specs["sm90_fp8xfp8"], True)
    assert resolve_variant("deep_gemm_mega_moe:sm100_nvfp4") == (specs["sm100_nvfp4"], False)
    assert resolve_variant("GFX950-A8W4") == (specs["gfx950_a8w4"], False)
    with pytest.raises(UnknownVariantError, match="emulation:<variant>"):
        resolve_variant("deep_gemm_mega_moe:gfx950_a8w4")


@pytest.mark.parametrize("key", REAL_KEYS)
def test_real_backend_without_library_is_one_line_error(key, monkeypatch):
    for mod in ("deep_gemm", "aiter", "mori"):
        monkeypatch.setitem(sys.modules, mod, None)  # import fails even where installed
    # full V4-Flash shape, in a checkpoint format the variant consumes (its layer-level declarations pass)
    g = small_group(scale=1.0, weight_quant=variant_weight_quant(resolve_variant(key)[0])[0])
    with pytest.raises(BackendUnavailableError) as info:
        build_layer(key, LayerConfig(group=g, max_tokens_per_rank=64))
    msg = str(info.value)
    assert "\n" not in msg and "Fix:" in msg and key in msg
    assert ("deep_gemm" in msg) or ("aiter" in msg)
    assert isinstance(info.value, OracleError) and int(info.value.exit_code) == 2


@pytest.mark.parametrize(
    ("key", "update", "codes"),
    [
        ("deep_gemm_mega_moe:sm90_fp8xfp4", {"hidden_size": 256}, ["SHAPE_UNSUPPORTED"]),
        ("deep_gemm_mega_moe:sm90_fp8xfp8", {}, ["QUANT_UNSUPPORTED"]),
        ("deep_gemm_mega_moe:sm90_fp8xfp4", {"num_experts": 30}, ["EXPERTS_NOT_DIVISIBLE"]),
    ],
)
def test_a_layer_the_oracle_refuses_is_never_built(key, update, codes, monkeypatch):
    """build_layer evaluates the variant's own layer-level declarations first (before any library import)."""
    from moe_oracle.runtime.build import refusals
    from moe_oracle.runtime.errors import LayerInputError

    for mod in ("deep_gemm", "aiter", "mori"):
        monkeypatch.setitem(sys.modules, mod, None)
    g = small_group(**update)
    config = LayerConfig(group=g, max_tokens_per_rank=64, ep_size=4)
    spec, _ = resolve_variant(key)
    assert [r.code.value for r in refusals(spec, config)] == codes
    with pytest.raises(LayerInputError) as info:
        build_layer(key, config)
    msg = str(info.value)
    assert "\n" not in msg and "Fix:" in msg and all(c in msg for c in codes)


def test_aiter_token_cap_is_the_declared_rule():
    from moe_oracle.runtime.build import refusals

    spec, _ = resolve_variant("aiter_mega_moe:gfx950_a8w4")
    ok = LayerConfig(group=small_group(), max_tokens_per_rank=32768)
    too_many = LayerConfig(group=small_group(), max_tokens_per_rank=32769)
    assert refusals(spec, ok) == []
    assert [r.code.value for r in refusals(spec, too_many)] == ["TOKENS_UNSUPPORTED"]


def test_decision_helper_builds_the_chosen_twin():
    from moe_oracle.decide.selection import decide
    from moe_oracle.inputs import DeploymentFlags, build_deployment, resolve_software
    from moe_oracle.model.resolve import resolve_model

    deployment, _ = build_deployment(DeploymentFlags(device="h200", ep=8, dp=8), None)
    software, _ = resolve_software(None, "h200")
    decision = decide(resolve_model("zai-org/GLM-5-FP8"), deployment, software)
    gd = decision.main
    if gd.chosen is None:
        with pytest.raises(BackendUnavailableError, match="no fused"):
            build_layer_for_decision(decision, emulate=True, device="cpu")
        return
    layer = build_layer_for_decision(decision, emulate=True, device="cpu")
    assert layer.key == "emulation:" + gd.chosen.spec.variant
    assert layer.config.ep_size == deployment.parallel.ep
    assert layer.config.max_tokens_per_rank == deployment.parallel.tokens_per_rank
