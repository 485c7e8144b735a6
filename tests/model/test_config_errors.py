"""Malformed configs: every error is the right class, one line, and names the key and the value."""

from __future__ import annotations

import copy

import pytest

from moe_oracle.errors import ModelConfigError, UnsupportedArchitectureError
from moe_oracle.model.adapters import describe_config
from tests.model.model_test_helpers import assert_one_line, preset

V4, _ = preset("deepseek-ai--DeepSeek-V4-Flash")
GLM5, _ = preset("zai-org--GLM-5")
GLM5_FP8, _ = preset("zai-org--GLM-5-FP8")


def mutate(base: dict, path: str, value, *, delete: bool = False) -> dict:
    config = copy.deepcopy(base)
    *parents, leaf = path.split(".")
    target = config
    for key in parents:
        target = target[key]
    if delete:
        del target[leaf]
    else:
        target[leaf] = value
    return config


# (base, dotted key, new value, needles the one-line message must contain)
WRONG_VALUES = [
    # integer sizes: wrong JSON type, bool, float, zero, negative, absurd
    (V4, "hidden_size", "4096", ['hidden_size="4096"', "a JSON string", "integer in 1..131072"]),
    (V4, "hidden_size", True, ["hidden_size=true", "a JSON boolean"]),
    (V4, "hidden_size", 4096.0, ["hidden_size=4096.0", "a JSON number", "without the decimal point"]),
    (V4, "hidden_size", 4096.5, ["hidden_size=4096.5", "a JSON number"]),
    (V4, "hidden_size", 0, ["hidden_size=0", "out of range", "1..131072"]),
    (V4, "hidden_size", -4096, ["hidden_size=-4096", "out of range"]),
    (V4, "hidden_size", 10**12, ["hidden_size=1000000000000", "out of range"]),
    (V4, "hidden_size", [4096], ["hidden_size=[4096]", "a JSON array"]),
    (V4, "hidden_size", {"v": 1}, ['hidden_size={"v": 1}', "a JSON object"]),
    (V4, "moe_intermediate_size", -1, ["moe_intermediate_size=-1", "1..262144"]),
    (V4, "moe_intermediate_size", 1 << 20, ["moe_intermediate_size=1048576", "1..262144"]),
    (V4, "n_routed_experts", 0, ["n_routed_experts=0", "1..65536"]),
    (V4, "n_routed_experts", "256", ['n_routed_experts="256"', "without quotes"]),
    (V4, "num_experts_per_tok", 300, ["num_experts_per_tok=300", "exceeds n_routed_experts=256"]),
    (V4, "num_experts_per_tok", 0, ["num_experts_per_tok=0", "1..1024"]),
    (V4, "num_experts_per_tok", 2000, ["num_experts_per_tok=2000", "1..1024"]),
    (V4, "n_shared_experts", -1, ["n_shared_experts=-1", "0..64"]),
    (V4, "n_shared_experts", 1.0, ["n_shared_experts=1.0", "a JSON number"]),
    (V4, "num_hidden_layers", 0, ["num_hidden_layers=0", "1..16384"]),
    (V4, "num_hidden_layers", 10**6, ["num_hidden_layers=1000000", "1..16384"]),
    (V4, "num_hidden_layers", False, ["num_hidden_layers=false", "a JSON boolean"]),
    (V4, "num_hash_layers", 50, ["num_hash_layers=50", "0..43"]),
    (V4, "num_hash_layers", -1, ["num_hash_layers=-1", "0..43"]),
    (V4, "num_nextn_predict_layers", -1, ["num_nextn_predict_layers=-1", "0..64"]),
    (V4, "num_nextn_predict_layers", "one", ['num_nextn_predict_layers="one"', "a JSON string"]),
    # floats, booleans, strings, enumerations
    (V4, "routed_scaling_factor", -1.5, ["routed_scaling_factor=-1.5", "> 0"]),
    (V4, "routed_scaling_factor", 0, ["routed_scaling_factor=0", "> 0"]),
    (V4, "routed_scaling_factor", "1.5", ['routed_scaling_factor="1.5"', "a JSON string"]),
    (V4, "routed_scaling_factor", True, ["routed_scaling_factor=true", "a JSON boolean"]),
    (V4, "routed_scaling_factor", 1e300, ["routed_scaling_factor=1e+300", "<= 10000"]),
    (V4, "swiglu_limit", 0, ["swiglu_limit=0", "> 0"]),
    (V4, "swiglu_limit", "10", ['swiglu_limit="10"', "a JSON string"]),
    (V4, "norm_topk_prob", "true", ['norm_topk_prob="true"', "true or false"]),
    (V4, "norm_topk_prob", 1, ["norm_topk_prob=1", "true or false"]),
    (V4, "scoring_func", "relu", ['scoring_func="relu"', "softmax, sigmoid, sqrtsoftplus"]),
    (V4, "scoring_func", 3, ["scoring_func=3", "softmax, sigmoid, sqrtsoftplus"]),
    (V4, "topk_method", ["noaux_tc"], ['topk_method=["noaux_tc"]', "a JSON array", "string"]),
    (V4, "hidden_act", "gelu", ['hidden_act="gelu"', "SwiGLU"]),
    (V4, "n_group", 0, ["n_group=0", "1..65536"]),
    (V4, "n_group", 3, ["n_group=3", "not divisible"]),
    (V4, "topk_group", 2, ["topk_group=2", "exceeds n_group=1"]),
    (V4, "mlp_layer_types", "moe", ['mlp_layer_types="moe"', "array"]),
    (V4, "mlp_layer_types", ["moe"] * 42, ["mlp_layer_types=", "42 entries", "num_hidden_layers is 43"]),
    (
        V4,
        "mlp_layer_types",
        ["moe"] * 42 + ["attention"],
        ['mlp_layer_types[42]="attention"', "dense, sparse"],
    ),
    (V4, "dspark_n_routed_experts", 0, ["dspark_n_routed_experts=0", "1..65536"]),
    (V4, "dspark_num_experts_per_tok", 300, ["dspark_num_experts_per_tok=300", "draft top-k"]),
    (V4, "dspark_target_layer_ids", [99], ["dspark_target_layer_ids[0]=99", "0..42"]),
    (GLM5, "first_k_dense_replace", -1, ["first_k_dense_replace=-1", "0..78"]),
    (GLM5, "first_k_dense_replace", 79, ["first_k_dense_replace=79", "0..78"]),
    (GLM5, "first_k_dense_replace", "3", ['first_k_dense_replace="3"', "a JSON string"]),
    (GLM5, "moe_layer_freq", 0, ["moe_layer_freq=0", "1..16384"]),
    # identity
    (V4, "architectures", "DeepseekV4ForCausalLM", ['architectures="DeepseekV4ForCausalLM"', "array"]),
    (V4, "architectures", [1], ["architectures=[1]", "class-name strings"]),
    (V4, "model_type", 4, ["model_type=4", "a JSON integer", "string"]),
    (V4, "text_config", "deepseek", ['text_config="deepseek"', "expected an object"]),
    # quantization
    (V4, "quantization_config", "fp8", ['quantization_config="fp8"', "a JSON string", "object"]),
    (
        V4,
        "quantization_config.quant_method",
        "quark",
        ['quantization_config.quant_method="quark"', "not supported"],
    ),
    # an AWQ checkpoint must say its bit width
    (V4, "quantization_config.quant_method", "awq", ["quantization_config.bits is missing", "awq"]),
    (V4, "quantization_config.quant_method", 8, ["quantization_config.quant_method=8"]),
    (
        V4,
        "quantization_config.weight_block_size",
        [128],
        ["quantization_config.weight_block_size=[128]", "[rows, cols]"],
    ),
    (V4, "quantization_config.weight_block_size", [0, 128], ["weight_block_size=[0, 128]", "1..4096"]),
    (V4, "quantization_config.weight_block_size", "128", ['weight_block_size="128"', "[rows, cols]"]),
    (V4, "quantization_config.scale_fmt", "e8m0", ['quantization_config.scale_fmt="e8m0"', "ue8m0"]),
    (V4, "expert_dtype", "fp16", ['expert_dtype="fp16"', '"fp4"', '"fp8"']),
    (V4, "expert_dtype", 4, ["expert_dtype=4", '"fp4"']),
    (V4, "quantization_config.ignore", "mtp.*", None),  # a single string pattern is accepted
    (V4, "quantization_config.ignore", [3], ["quantization_config.ignore[0]=3", "pattern"]),
    (
        V4,
        "quantization_config.ignore",
        ["re:("],
        ['quantization_config.ignore[0]="re:("', "regular expression"],
    ),
    (V4, "quantization_config.moe_quant_algo", "INT4_AWQ", ['moe_quant_algo="INT4_AWQ"', "NVFP4"]),
    (V4, "quantization_config.moe_quant_algo", "MIXED_PRECISION", ["MIXED_PRECISION", "quantized_layers"]),
    (
        V4,
        "quantization_config.quantized_layers",
        ["layers.0"],
        ["quantization_config.quantized_layers=", "object"],
    ),
    (
        V4,
        "quantization_config.quantized_layers",
        {"layers.3.ffn.experts": {"quant_algo": "NVFP4", "group_size": 32}},
        ["NVFP4 uses 16-element groups"],
    ),
    (
        V4,
        "quantization_config.quantized_layers",
        {"layers.3.ffn.experts": "NVFP4"},
        ['quantized_layers[layers.3.ffn.experts]="NVFP4"', "object"],
    ),
    (V4, "quantization_config.config_groups", [1], ["quantization_config.config_groups=[1]", "object"]),
    (V4, "quantization_config.config_groups", {"g": {"weights": {}}}, ["config_groups.g.targets is missing"]),
    (GLM5_FP8, "quantization_config.modules_to_not_convert", {"a": 1}, ["modules_to_not_convert=", "array"]),
    (GLM5_FP8, "quantization_config.quant_method", None, None),  # null: no quant_method -> refused below
]


@pytest.mark.parametrize(("base", "key", "value", "needles"), WRONG_VALUES)
def test_wrong_values_name_key_and_value(base, key, value, needles):
    config = mutate(base, key, value)
    if needles is None:
        try:
            describe_config(config, model_id="m")
        except ModelConfigError as exc:
            assert_one_line(exc)
        return
    with pytest.raises(ModelConfigError) as info:
        describe_config(config, model_id="m")
    assert_one_line(info.value, "m: ", *needles)
    assert not getattr(info.value, "internal", False)


REQUIRED = [
    "hidden_size",
    "moe_intermediate_size",
    "n_routed_experts",
    "num_experts_per_tok",
    "num_hidden_layers",
]


@pytest.mark.parametrize("key", [*REQUIRED, "swiglu_limit"])
def test_missing_required_keys(key):
    config = mutate(V4, key, None, delete=True)
    with pytest.raises(ModelConfigError) as info:
        describe_config(config, model_id="m")
    assert_one_line(info.value, f"m: {key}", "is missing", "expected")


@pytest.mark.parametrize("key", REQUIRED)
def test_null_required_key_is_missing(key):
    with pytest.raises(ModelConfigError) as info:
        describe_config(mutate(GLM5, key, None), model_id="m")
    assert_one_line(info.value, key, "is missing")


def test_alias_n_activated_experts():
    config = mutate(V4, "num_experts_per_tok", None, delete=True)
    config["n_activated_experts"] = 6
    assert describe_config(config).main_group.top_k == 6
    del config["n_activated_experts"]
    with pytest.raises(ModelConfigError) as info:
        describe_config(config)
    assert_one_line(info.value, "num_experts_per_tok (or n_activated_experts) is missing")


@pytest.mark.parametrize("config", [None, [], "config", 3, 1.5, True])
def test_non_object_config(config):
    with pytest.raises(ModelConfigError) as info:
        describe_config(config, model_id="m")
    assert_one_line(info.value, "expected an object")


def test_non_object_hf_quant_config():
    with pytest.raises(ModelConfigError) as info:
        describe_config(copy.deepcopy(GLM5), ["x"])
    assert_one_line(info.value, "hf_quant_config", "expected an object")
    with pytest.raises(ModelConfigError) as info:
        describe_config(copy.deepcopy(GLM5), {"quantization": 5})
    assert_one_line(info.value, "hf_quant_config.quantization=5")


def test_no_architecture_at_all():
    with pytest.raises(UnsupportedArchitectureError) as info:
        describe_config({"hidden_size": 1}, model_id="m")
    # short (issue 32): the families are listed in docs/families.md, not in the message
    assert_one_line(info.value, "no architectures and no model_type", "docs/families.md", "describe the model manually")


def test_no_moe_layers_left():
    with pytest.raises(ModelConfigError) as info:
        describe_config(mutate(GLM5, "mlp_layer_types", ["dense"] * 78))
    assert_one_line(info.value, "no MoE layer")


def test_quantization_config_without_quant_method():
    with pytest.raises(ModelConfigError) as info:
        describe_config(mutate(GLM5_FP8, "quantization_config.quant_method", None, delete=True))
    assert_one_line(info.value, "quantization_config has no quant_method")


def test_layer_bound_with_mtp():
    config = mutate(GLM5, "num_hidden_layers", 16384)
    config["first_k_dense_replace"] = 16380
    with pytest.raises(ModelConfigError) as info:
        describe_config(config)
    assert_one_line(info.value, "16384 layers plus 1 mtp layers", "16384-layer bound")


def test_per_tensor_fp8_is_refused():
    with pytest.raises(ModelConfigError) as info:
        describe_config(mutate(GLM5_FP8, "quantization_config.weight_block_size", None, delete=True))
    assert_one_line(info.value, "weight_block_size is missing", "per-tensor")


def test_integer_compressed_tensors_scheme_without_groups_is_refused():
    config = copy.deepcopy(GLM5)
    config["quantization_config"] = {
        "quant_method": "compressed-tensors",
        "config_groups": {"group_0": {"targets": ["Linear"], "weights": {"num_bits": 4, "type": "int"}}},
    }
    with pytest.raises(ModelConfigError) as info:
        describe_config(config)
    assert_one_line(info.value, "config_groups.group_0.weights.group_size", "int4", "strategy channel")


@pytest.mark.parametrize(
    ("weights", "label"),
    [
        ({"num_bits": 4, "type": "int", "strategy": "group", "group_size": 32}, "int4 g32 bf16"),
        ({"num_bits": 8, "type": "int", "strategy": "channel"}, "int8"),
    ],
)
def test_integer_compressed_tensors_schemes_are_described(weights, label):
    """INT4/INT8 weights are described (formats no mega-MoE kernel consumes; the verdicts say so)."""
    config = copy.deepcopy(GLM5)
    config["quantization_config"] = {
        "quant_method": "compressed-tensors",
        "config_groups": {"group_0": {"targets": ["Linear"], "weights": weights}},
    }
    assert describe_config(config).main_group.weight_quant.label() == label
