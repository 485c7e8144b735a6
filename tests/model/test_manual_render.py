"""The `moe-oracle model --json` contract, and manual descriptions (JSON file and flags)."""

from __future__ import annotations

import json

import pytest

from moe_oracle.errors import ModelConfigError
from moe_oracle.model.adapters import describe_model, list_presets
from moe_oracle.model.description_json import description_to_json
from moe_oracle.model.manual import load_manual_description, manual_from_dict, manual_from_flags
from moe_oracle.model.spans import layer_span
from tests.model.model_test_helpers import FIXTURES, assert_one_line

TOP = ["model", "architecture", "model_type", "family", "source", "layer_groups", "assumptions"]
GROUP = [
    "name",
    "role",
    "layers",
    "hidden_size",
    "moe_intermediate_size",
    "num_experts",
    "top_k",
    "num_shared_experts",
    "weight_format",
    "weight_block",
    "weight_scale_format",
    "weight_global_scale",
    "shared_expert_format",
    "shared_expert_width",
    "shared_expert_gate",
    "expert_bias",
    "activation",
    "routing",
]
ROUTING = [
    "scoring",
    "hash",
    "correction_bias",
    "renormalize",
    "num_groups",
    "topk_groups",
    "routed_scaling_factor",
    "weight_on_input",
]
ACTIVATION = ["kind", "clamp", "alpha", "beta", "interleaved"]

ALL_SOURCES = list_presets() + [
    str(p) for p in sorted(FIXTURES.iterdir()) if p.is_dir() and "sgl-project" not in p.name
]


def test_json_contract_keys_and_types():
    data = description_to_json(describe_model("nvidia/DeepSeek-V4-Flash-NVFP4"))
    assert list(data) == TOP
    for group in data["layer_groups"]:
        assert list(group) == GROUP
        assert list(group["activation"]) == ACTIVATION
        assert list(group["routing"]) == ROUTING
        assert isinstance(group["layers"], list) and all(isinstance(i, int) for i in group["layers"])
        assert isinstance(group["weight_format"], str)
        assert group["weight_block"] is None or (
            isinstance(group["weight_block"], list) and len(group["weight_block"]) == 2
        )
    assert json.loads(json.dumps(data, allow_nan=False)) == data
    mtp = data["layer_groups"][2]
    assert (mtp["weight_format"], mtp["weight_block"], mtp["weight_scale_format"]) == (
        "mxfp4",
        [1, 32],
        "ue8m0",
    )
    assert mtp["activation"] == {"kind": "swiglu", "clamp": 10.0, "alpha": 1.0, "beta": 0.0, "interleaved": False}
    glm = description_to_json(describe_model("zai-org/GLM-5"))["layer_groups"][0]
    assert glm["activation"] == {"kind": "swiglu", "clamp": None, "alpha": 1.0, "beta": 0.0, "interleaved": False}
    assert (glm["weight_block"], glm["weight_scale_format"], glm["shared_expert_format"]) == (
        None,
        "none",
        "bf16",
    )


@pytest.mark.parametrize("source", ALL_SOURCES)
def test_manual_json_round_trips_every_description(source, tmp_path):
    data = description_to_json(describe_model(source))
    file = tmp_path / "manual.json"
    file.write_text(json.dumps(data), encoding="utf-8")
    again = description_to_json(load_manual_description(file))
    assert again.pop("source") == f"manual {file}"
    data.pop("source")
    assert again == data


def test_layer_span():
    assert layer_span([0, 1, 2, 5, 7, 8]) == "0-2,5,7-8"
    assert layer_span((3, 4, 5)) == "3-5"
    assert layer_span([43]) == "43"


def test_model_command_text_output():
    from tests.cli.runner import cli

    r = cli("model", "deepseek-ai/DeepSeek-V4-Flash")
    assert r.code == 0, r.err
    assert "moe_hash" in r.out and "3-42 (40)" in r.out and "mxfp4 g32 ue8m0" in r.out and "clamp 10" in r.out


MINIMAL = {
    "model": "my/moe",
    "layer_groups": [
        {
            "layers": [1, 2, 3],
            "hidden_size": 4096,
            "moe_intermediate_size": 1408,
            "num_experts": 64,
            "top_k": 6,
            "weight_format": "fp8_block",
        }
    ],
}


def test_manual_description_says_what_it_assumed():
    desc = manual_from_dict(MINIMAL, where="x.json")
    assumed = [line.split(" not given")[0] for line in desc.assumptions]
    assert assumed == [
        "layer_groups[0].routing.scoring",
        "layer_groups[0].routing.correction_bias",
        "layer_groups[0].routing.renormalize",
        "layer_groups[0].routing.weight_on_input",
        "layer_groups[0].activation",
        "layer_groups[0].expert_bias",
    ]
    stated = json.loads(json.dumps(MINIMAL))
    stated["layer_groups"][0].update(
        routing={"scoring": "softmax", "correction_bias": False, "renormalize": True, "weight_on_input": False},
        activation={"kind": "swiglu"},
        expert_bias=False,
    )
    assert manual_from_dict(stated).assumptions == ()


def test_manual_minimal_defaults():
    desc = manual_from_dict(MINIMAL, where="x.json")
    g = desc.main_group
    assert (g.name, g.role, g.layers) == ("moe", "routed", (1, 2, 3))
    assert g.weight_quant.label() == "fp8_block 128x128 fp32"
    assert (g.routing.scoring.value, g.routing.correction_bias, g.routing.renormalize) == (
        "sigmoid",
        True,
        True,
    )
    assert g.activation.clamp is None and g.shared_expert_quant is None
    assert desc.source == "manual x.json" and desc.family == "manual"


@pytest.mark.parametrize(
    ("patch", "needles"),
    [
        ({"hidden_size": "4096"}, ['layer_groups[0].hidden_size="4096"', "integer"]),
        ({"hidden_size": 0}, ["layer_groups[0].hidden_size=0", "out of range"]),
        ({"top_k": 65}, ["layer_groups[0].top_k=65", "exceeds num_experts=64"]),
        ({"weight_format": "fp8"}, ['weight_format="fp8"', "fp8_block"]),
        ({"weight_format": "int2"}, ['weight_format="int2"', "one of", "int4"]),
        ({"weight_format": "bf16", "weight_block": [128, 128]}, ["weight_format", "bf16"]),
        ({"weight_block": [128]}, ["weight_block=[128]", "[rows, cols]"]),
        ({"weight_scale_format": "e5m2"}, ['weight_scale_format="e5m2"']),
        ({"layers": []}, ["layer_groups[0].layers=[]", "non-empty"]),
        ({"layers": [1, 1]}, ["layers", "repeat"]),
        ({"layers": [-1]}, ["layer_groups[0].layers[0]=-1"]),
        ({"role": "dense"}, ['layer_groups[0].role="dense"', "routed, hash, mtp, draft"]),
        ({"typo_key": 1}, ["layer_groups[0].typo_key=1", "unknown key"]),
        ({"routing": {"scoring": "relu"}}, ['routing.scoring="relu"']),
        ({"routing": {"num_groups": 2, "topk_groups": 3}}, ["routing.topk_groups=3", "exceeds num_groups=2"]),
        ({"routing": {"num_groups": 5}}, ["routing.num_groups=5", "does not divide"]),
        ({"routing": {"routed_scaling_factor": -1}}, ["routed_scaling_factor=-1"]),
        ({"routing": {"hash": "yes"}}, ['routing.hash="yes"', "true or false"]),
        ({"activation": {"kind": "tanh"}}, ['activation.kind="tanh"', "swiglu, situ, gelu, relu2"]),
        ({"activation": {"beta": "one"}}, ['activation.beta="one"']),
        ({"expert_bias": "yes"}, ['layer_groups[0].expert_bias="yes"', "true or false"]),
        ({"shared_expert_gate": True}, ["shared_expert_gate", "num_shared_experts is 0"]),
        ({"routing": {"weight_on_input": 1}}, ["routing.weight_on_input=1"]),
        ({"activation": {"clamp": 0}}, ["activation.clamp=0"]),
        ({"shared_expert_format": "bf16"}, ["shared_expert_format", "num_shared_experts is 0"]),
        ({"num_experts": None}, ["layer_groups[0].num_experts is missing"]),
    ],
)
def test_manual_json_errors(patch, needles):
    data = json.loads(json.dumps(MINIMAL))
    data["layer_groups"][0].update(patch)
    with pytest.raises(ModelConfigError) as info:
        manual_from_dict(data, where="x.json")
    assert_one_line(info.value, "x.json: ", *needles)


@pytest.mark.parametrize(
    ("data", "needles"),
    [
        ([], ["top level is a JSON array"]),
        ({"layer_groups": []}, ["layer_groups=[]", "non-empty"]),
        ({"layer_groups": [1]}, ["layer_groups[0]=1", "object"]),
        ({"layer_groups": MINIMAL["layer_groups"], "extra": 1}, ["extra=1", "unknown key"]),
        (
            {"layer_groups": MINIMAL["layer_groups"] * 2},
            ["layer_groups", "layer 1 belongs to two layer groups"],
        ),
        ({"layer_groups": MINIMAL["layer_groups"], "model": 5}, ["model=5", "string"]),
    ],
)
def test_manual_json_top_level_errors(data, needles):
    with pytest.raises(ModelConfigError) as info:
        manual_from_dict(data, where="x.json")
    assert_one_line(info.value, *needles)


def test_manual_file_errors(tmp_path):
    with pytest.raises(ModelConfigError) as info:
        load_manual_description(tmp_path / "missing.json")
    assert_one_line(info.value, "missing.json", "does not exist")
    bad = tmp_path / "bad.json"
    bad.write_text('{"layer_groups": [', encoding="utf-8")
    with pytest.raises(ModelConfigError) as info:
        load_manual_description(bad)
    assert_one_line(info.value, "not valid JSON")


def test_manual_flags_describe_a_deepseek_style_moe():
    desc = manual_from_flags(
        "7168",
        2048,
        256,
        8,
        "fp8_block",
        num_shared_experts=1,
        shared_expert_format="fp8_block",
        weight_scale_format="ue8m0",
        num_groups="8",
        topk_groups=4,
        routed_scaling_factor="2.5",
        num_layers=58,
        model="my/deepseek",
    )
    g = desc.main_group
    assert (g.hidden_size, g.moe_intermediate_size, g.num_experts, g.top_k) == (7168, 2048, 256, 8)
    assert g.layers == tuple(range(58))
    assert g.weight_quant.label() == "fp8_block 128x128 ue8m0"
    assert (g.routing.num_groups, g.routing.topk_groups, g.routing.routed_scaling_factor) == (8, 4, 2.5)
    assert desc.model == "my/deepseek" and desc.source == "manual flags"
    nv = manual_from_flags(4096, 2048, 256, 6, "nvfp4", weight_block="1x16", swiglu_clamp=10)
    assert nv.main_group.weight_quant.label() == "nvfp4 g16 e4m3" and nv.main_group.activation.clamp == 10.0


@pytest.mark.parametrize(
    ("kwargs", "needles"),
    [
        ({"hidden_size": "abc"}, ['--hidden-size="abc"', "integer"]),
        ({"hidden_size": -1}, ["--hidden-size=-1", "out of range"]),
        ({"top_k": 300}, ["--top-k=300", "exceeds num_experts=256"]),
        ({"weight_format": "fp8"}, ['--weight-format="fp8"', "fp8_block"]),
        ({"weight_block": "128"}, ["--weight-block"]),
        ({"num_groups": 3}, ["--num-groups=3", "does not divide"]),
        ({"routed_scaling_factor": "x"}, ['--routed-scaling-factor="x"', "number"]),
        ({"swiglu_clamp": -5}, ["--swiglu-clamp=-5"]),
        ({"num_layers": 0}, ["--num-layers=0"]),
        ({"correction_bias": "maybe"}, ['--correction-bias="maybe"', "true or false"]),
    ],
)
def test_manual_flag_errors_name_the_flag(kwargs, needles):
    args = {
        "hidden_size": 4096,
        "moe_intermediate_size": 2048,
        "num_experts": 256,
        "top_k": 6,
        "weight_format": "mxfp4",
    }
    args.update(kwargs)
    with pytest.raises(ModelConfigError) as info:
        manual_from_flags(**args)
    assert_one_line(info.value, "manual flags: ", *needles)
