"""Fuzzing: ``describe_config`` returns a valid description or raises a BadInputError, nothing else.

Deterministic (``derandomize=True``) so CI sees the same examples every run. A
``ModelConfigError`` flagged ``internal`` comes from the last-resort conversion of an
unexpected ``KeyError`` / ``TypeError`` / ...: that is a parser gap and fails the test too.
"""

from __future__ import annotations

import copy
import json
import math

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from moe_oracle.errors import BadInputError
from moe_oracle.model.adapters import describe_config
from moe_oracle.model.adapters.catalog import supported_architectures, supported_model_types
from moe_oracle.model.description_json import description_to_json
from moe_oracle.model.types import ModelDescription
from tests.fuzz_helpers import json_paths, mutate
from tests.model.model_test_helpers import FIXTURES, PRESETS, load_dir

FUZZ = settings(
    max_examples=250,
    derandomize=True,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

REAL = [load_dir(folder) for folder in sorted(PRESETS.iterdir()) if (folder / "config.json").exists()]
REAL += [load_dir(folder) for folder in sorted(FIXTURES.iterdir()) if (folder / "config.json").exists()]

KNOWN_KEYS = sorted(
    {key for config, _ in REAL for key in config}
    | {key for config, _ in REAL for key in (config.get("text_config") or {})}
    | {"mlp_layer_types", "n_activated_experts", "dspark_n_routed_experts", "moe_quant_algo"}
    # the family keys no fixture carries (ERNIE, Step3, Bailing, wrappers): moe-oracle reads them by rule
    | {"moe_k", "moe_num_experts", "moe_num_shared_experts", "moe_layer_start_index", "moe_layer_end_index"}
    | {"moe_layer_interval", "moe_top_k", "moe_layers_enum", "share_expert_dim", "norm_expert_weight"}
    | {"score_function", "moe_router_enable_expert_bias", "num_shared_experts", "llm_config", "language_config"}
)
QUANT_KEYS = sorted(
    {key for config, _ in REAL for key in (config.get("quantization_config") or {})}
    | {"expert_dtype", "quantized_layers", "exclude_modules", "modules_to_not_convert"}
)

scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=12)
    | st.sampled_from(["fp4", "fp8", "NVFP4", "MIXED_PRECISION", "noaux_tc", "sigmoid", "hash_moe", "Linear"])
)
json_values = st.recursive(
    scalars,
    lambda children: st.lists(children, max_size=5) | st.dictionaries(st.text(max_size=8), children, max_size=5),
    max_leaves=20,
)


def check(config, quant=None) -> None:
    try:
        desc = describe_config(config, quant, model_id="fuzz")
    except BadInputError as exc:
        assert not getattr(exc, "internal", False), f"parser gap: {exc}"
        text = str(exc)
        assert text and "\n" not in text, text
        return
    assert isinstance(desc, ModelDescription)
    assert desc.layer_groups and desc.main_group is desc.layer_groups[0]
    data = description_to_json(desc)
    json.dumps(data, allow_nan=False)
    for group in data["layer_groups"]:
        assert group["top_k"] <= group["num_experts"]
        assert math.isfinite(group["routing"]["routed_scaling_factor"])


identity = st.fixed_dictionaries(
    {},
    optional={
        "architectures": st.lists(st.sampled_from(supported_architectures()), min_size=1, max_size=2),
        "model_type": st.sampled_from(supported_model_types()),
    },
)


@FUZZ
@given(st.dictionaries(st.sampled_from(KNOWN_KEYS) | st.text(max_size=6), json_values, max_size=12), identity)
def test_random_json_configs(body, ident):
    config = {**body, **ident}
    check(config)


@FUZZ
@given(json_values)
def test_random_json_values_of_any_type(value):
    check(value)
    check({"architectures": ["DeepseekV4ForCausalLM"], "text_config": value})
    check({"model_type": "glm_moe_dsa", "quantization_config": value})


ALL_PATHS = [list(json_paths(config, 4)) for config, _ in REAL]


@st.composite
def mutated_real_config(draw):
    index = draw(st.integers(0, len(REAL) - 1))
    config, quant = copy.deepcopy(REAL[index])
    config_paths = ALL_PATHS[index]
    mutate(draw, config, config_paths, scale=st.integers(-3, 400) | st.sampled_from([0, -1, 10**9]), values=json_values)
    if quant is not None and draw(st.booleans()):
        quant = draw(st.sampled_from([None, quant, {"quantization": draw(json_values)}]))
    return config, quant


@FUZZ
@given(mutated_real_config())
def test_mutated_real_configs(case):
    config, quant = case
    check(config, quant)


def _described(config: dict, quant: dict | None) -> ModelDescription | None:
    try:
        return describe_config(config, quant, model_id="fuzz")
    except BadInputError:
        return None  # a fixture the reader refuses (trimmed copies): no footprint to fuzz


DESCRIBED = [(i, config, desc) for i, (config, quant) in enumerate(REAL) if (desc := _described(config, quant))]


@st.composite
def mutated_config_with_its_description(draw):
    index, original, desc = draw(st.sampled_from(DESCRIBED))
    config = copy.deepcopy(original)
    mutate(
        draw, config, ALL_PATHS[index], scale=st.integers(-3, 400) | st.sampled_from([0, -1, 10**9]), values=json_values
    )
    return config, desc


@FUZZ
@given(mutated_config_with_its_description())
def test_read_footprint_on_mutated_configs_returns_a_footprint_or_none(case):
    """The footprint reader never raises: a field it needs that is missing or malformed gives None."""
    from moe_oracle.model.footprint import Formats
    from moe_oracle.model.footprint_read import read_footprint
    from moe_oracle.model.types import Footprint

    config, desc = case
    for kv_fp8 in (False, True):
        fp = read_footprint(config, desc, Formats(), kv_fp8=kv_fp8)
        assert fp is None or (isinstance(fp, Footprint) and fp.bytes(mtp_built=True) >= 0)
