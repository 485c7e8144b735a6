"""Module-name patterns from untrusted configs: linear-time regexes, honest refusals, wrapper prefixes."""

from __future__ import annotations

import copy
import json
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from moe_oracle.errors import ModelConfigError
from moe_oracle.model.adapters import describe_config
from moe_oracle.model.types import WeightFormat
from tests.cli.runner import cli
from tests.model.model_test_helpers import assert_one_line, preset

GLM5_FP8, _ = preset("zai-org--GLM-5-FP8")
GLM51_NVFP4, GLM51_NVFP4_QUANT = preset("nvidia--GLM-5.1-NVFP4")

#: Catastrophic on a backtracking engine: minutes at 100% CPU for one module name.
EVIL = "re:(\\w+\\.?)+!"


def _with_not_convert(patterns):
    config = copy.deepcopy(GLM5_FP8)
    config["quantization_config"]["modules_to_not_convert"] = patterns
    return config


def test_catastrophic_regex_runs_in_linear_time():
    start = time.perf_counter()
    desc = describe_config(_with_not_convert([EVIL]), model_id="glm5-fp8-evil")
    assert time.perf_counter() - start < 1.0
    assert desc.main_group.weight_format is WeightFormat.FP8_BLOCK  # the pattern matches nothing


def test_catastrophic_regex_through_the_cli(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps(_with_not_convert([EVIL])))
    start = time.perf_counter()
    r = cli("model", str(tmp_path))
    assert r.code == 0, r.err
    assert time.perf_counter() - start < 20


@pytest.mark.parametrize(
    ("pattern", "needle"),
    [
        ("re:(a)\\1", "invalid escape sequence"),
        ("re:(?=model)model.layers", "invalid perl operator"),
        ("re:((((a{100}){100}){100}){100})", "cannot be honoured"),
    ],
)
def test_patterns_re2_cannot_honour_are_refused_by_name(pattern, needle, capfd):
    with pytest.raises(ModelConfigError) as info:
        describe_config(_with_not_convert(["lm_head", pattern]), model_id="m")
    text = assert_one_line(info.value, "modules_to_not_convert[1]", "cannot be honoured", needle, "RE2")
    assert pattern[:6] in text
    assert capfd.readouterr().err == ""  # RE2 logs nothing of its own


def test_regex_still_matches_like_re_match():
    desc = describe_config(_with_not_convert(["re:model\\.layers\\.[0-9]+\\.mlp\\.experts"]), model_id="m")
    assert desc.main_group.weight_format is WeightFormat.BF16
    assert "modules_to_not_convert" in desc.main_group.weight_quant.source


def _wrapped_multimodal(config, quant):
    """A multimodal export of a real checkpoint: the language model under text_config, its modules named
    ``language_model.model.layers.N...`` in the exclusion lists (as nvidia's Kimi-K2.6-NVFP4 writes them)."""
    text = copy.deepcopy(config)
    qc = text.pop("quantization_config")
    qc = json.loads(json.dumps(qc).replace('"model.layers.', '"language_model.model.layers.'))
    hq = json.loads(json.dumps(quant).replace('"model.layers.', '"language_model.model.layers.'))
    outer = {
        "architectures": ["KimiK25ForConditionalGeneration"],
        "model_type": "kimi_k25",
        "quantization_config": qc,
        "text_config": text,
        "vision_config": {"model_type": "moonvit"},
    }
    return outer, hq


def test_exclusions_with_a_multimodal_wrapper_prefix_match():
    plain = describe_config(GLM51_NVFP4, GLM51_NVFP4_QUANT, model_id="plain")
    outer, hq = _wrapped_multimodal(GLM51_NVFP4, GLM51_NVFP4_QUANT)
    wrapped = describe_config(outer, hq, model_id="wrapped")
    shared = {g.shared_expert_quant.format for g in wrapped.layer_groups}
    assert shared == {WeightFormat.BF16}  # the excluded shared experts, not NVFP4
    assert [g.shared_expert_quant.format for g in wrapped.layer_groups] == [
        g.shared_expert_quant.format for g in plain.layer_groups
    ]
    assert [g.weight_format for g in wrapped.layer_groups] == [g.weight_format for g in plain.layer_groups]
    assert "language_model.model.layers." in wrapped.layer_groups[0].shared_expert_quant.source


def test_transformers_style_wrapper_prefix_matches_too():
    outer, hq = _wrapped_multimodal(GLM51_NVFP4, GLM51_NVFP4_QUANT)
    text = json.dumps([outer["quantization_config"], hq]).replace("language_model.model.", "model.language_model.")
    outer["quantization_config"], hq = json.loads(text)
    wrapped = describe_config(outer, hq, model_id="wrapped")
    assert {g.shared_expert_quant.format for g in wrapped.layer_groups} == {WeightFormat.BF16}


def test_refused_scheme_shows_every_field():
    config = copy.deepcopy(GLM5_FP8)
    weights = {
        "num_bits": 2,
        "type": "int",
        "symmetric": True,
        "strategy": "group",
        "group_size": 32,
        "dynamic": False,
        "actorder": None,
        "observer": "minmax",
    }  # Kimi-K2.5's INT4 W4A16 group at 2 bits (ERNIE-style 2-bit): no representable format
    config["quantization_config"] = {
        "quant_method": "compressed-tensors",
        "config_groups": {"group_0": {"targets": ["Linear"], "weights": weights}},
    }
    with pytest.raises(ModelConfigError) as info:
        describe_config(config, model_id="kimi-int4")
    text = assert_one_line(info.value, '"num_bits": 2', '"group_size": 32', '"observer": "minmax"', "not representable")
    assert "..." not in text.split(" is invalid")[0]


@settings(max_examples=200, derandomize=True, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.text(alphabet="()[]{}*+?|\\.^$:=!<>,wdsDWS0123456789ab-_", max_size=40), min_size=1, max_size=4))
def test_random_regex_patterns_parse_or_refuse_fast(bodies):
    start = time.perf_counter()
    try:
        describe_config(_with_not_convert(["re:" + b for b in bodies]), model_id="fuzz")
    except ModelConfigError as exc:
        assert "\n" not in str(exc)
    assert time.perf_counter() - start < 2.0
