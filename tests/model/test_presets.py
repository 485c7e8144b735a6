"""Every bundled preset parses to the values in shared/reference/models.md (written out literally)."""

from __future__ import annotations

import pytest

from moe_oracle.model.adapters import describe_model, list_presets
from moe_oracle.model.description_json import description_to_json
from moe_oracle.model.loader import load_model_source

NO_CLAMP = {"kind": "swiglu", "clamp": None}
CLAMP_10 = {"kind": "swiglu", "clamp": 10.0}

MXFP4 = {
    "weight_format": "mxfp4",
    "weight_block": [1, 32],
    "weight_scale_format": "ue8m0",
    "weight_global_scale": False,
}
NVFP4 = {
    "weight_format": "nvfp4",
    "weight_block": [1, 16],
    "weight_scale_format": "e4m3",
    "weight_global_scale": True,
}
BF16 = {
    "weight_format": "bf16",
    "weight_block": None,
    "weight_scale_format": "none",
    "weight_global_scale": False,
}
FP8_128_FP32 = {
    "weight_format": "fp8_block",
    "weight_block": [128, 128],
    "weight_scale_format": "fp32",
    "weight_global_scale": False,
}


def routing(scoring, *, hash=False, bias=True, renorm=True, groups=1, topk_groups=1, rsf=1.0):
    return {
        "scoring": scoring,
        "hash": hash,
        "correction_bias": bias,
        "renormalize": renorm,
        "num_groups": groups,
        "topk_groups": topk_groups,
        "routed_scaling_factor": rsf,
    }


def group(name, role, layers, *, hidden, inter, experts, top_k, shared, quant, shared_format, activation, route):
    return {
        "name": name,
        "role": role,
        "layers": layers,
        "hidden_size": hidden,
        "moe_intermediate_size": inter,
        "num_experts": experts,
        "top_k": top_k,
        "num_shared_experts": shared,
        **quant,
        "shared_expert_format": shared_format,
        "activation": activation,
        "routing": route,
    }


V4_FLASH = dict(hidden=4096, inter=2048, experts=256, top_k=6, shared=1, activation=CLAMP_10)
V4_PRO = dict(hidden=7168, inter=3072, experts=384, top_k=6, shared=1, activation=CLAMP_10)
GLM5 = dict(hidden=6144, inter=2048, experts=256, top_k=8, shared=1, activation=NO_CLAMP)

EXPECTED = {
    "deepseek-ai/DeepSeek-V4-Flash": {
        "architecture": "DeepseekV4ForCausalLM",
        "model_type": "deepseek_v4",
        "family": "deepseek_v4",
        "groups": [
            group(
                "moe",
                "routed",
                list(range(3, 43)),
                **V4_FLASH,
                quant=MXFP4,
                shared_format="fp8_block",
                route=routing("sqrtsoftplus", rsf=1.5),
            ),
            group(
                "moe_hash",
                "hash",
                [0, 1, 2],
                **V4_FLASH,
                quant=MXFP4,
                shared_format="fp8_block",
                route=routing("sqrtsoftplus", hash=True, bias=False, rsf=1.5),
            ),
            group(
                "mtp",
                "mtp",
                [43],
                **V4_FLASH,
                quant=MXFP4,
                shared_format="fp8_block",
                route=routing("sqrtsoftplus", rsf=1.5),
            ),
        ],
    },
    "deepseek-ai/DeepSeek-V4-Pro": {
        "architecture": "DeepseekV4ForCausalLM",
        "model_type": "deepseek_v4",
        "family": "deepseek_v4",
        "groups": [
            group(
                "moe",
                "routed",
                list(range(3, 61)),
                **V4_PRO,
                quant=MXFP4,
                shared_format="fp8_block",
                route=routing("sqrtsoftplus", rsf=2.5),
            ),
            group(
                "moe_hash",
                "hash",
                [0, 1, 2],
                **V4_PRO,
                quant=MXFP4,
                shared_format="fp8_block",
                route=routing("sqrtsoftplus", hash=True, bias=False, rsf=2.5),
            ),
            group(
                "mtp",
                "mtp",
                [61],
                **V4_PRO,
                quant=MXFP4,
                shared_format="fp8_block",
                route=routing("sqrtsoftplus", rsf=2.5),
            ),
        ],
    },
    "nvidia/DeepSeek-V4-Flash-NVFP4": {
        "architecture": "DeepseekV4ForCausalLM",
        "model_type": "deepseek_v4",
        "family": "deepseek_v4",
        "groups": [
            group(
                "moe",
                "routed",
                list(range(3, 43)),
                **V4_FLASH,
                quant=NVFP4,
                shared_format="fp8_block",
                route=routing("sqrtsoftplus", rsf=1.5),
            ),
            group(
                "moe_hash",
                "hash",
                [0, 1, 2],
                **V4_FLASH,
                quant=NVFP4,
                shared_format="fp8_block",
                route=routing("sqrtsoftplus", hash=True, bias=False, rsf=1.5),
            ),
            group(
                "mtp",
                "mtp",
                [43],
                **V4_FLASH,
                quant=MXFP4,
                shared_format="fp8_block",
                route=routing("sqrtsoftplus", rsf=1.5),
            ),
        ],
    },
    "zai-org/GLM-5": {
        "architecture": "GlmMoeDsaForCausalLM",
        "model_type": "glm_moe_dsa",
        "family": "glm_moe_dsa",
        "groups": [
            group(
                "moe",
                "routed",
                list(range(3, 78)),
                **GLM5,
                quant=BF16,
                shared_format="bf16",
                route=routing("sigmoid", rsf=2.5),
            ),
            group(
                "mtp",
                "mtp",
                [78],
                **GLM5,
                quant=BF16,
                shared_format="bf16",
                route=routing("sigmoid", rsf=2.5),
            ),
        ],
    },
    "zai-org/GLM-5-FP8": {
        "architecture": "GlmMoeDsaForCausalLM",
        "model_type": "glm_moe_dsa",
        "family": "glm_moe_dsa",
        "groups": [
            group(
                "moe",
                "routed",
                list(range(3, 78)),
                **GLM5,
                quant=FP8_128_FP32,
                shared_format="fp8_block",
                route=routing("sigmoid", rsf=2.5),
            ),
            group(
                "mtp",
                "mtp",
                [78],
                **GLM5,
                quant=FP8_128_FP32,
                shared_format="fp8_block",
                route=routing("sigmoid", rsf=2.5),
            ),
        ],
    },
    "nvidia/GLM-5.1-NVFP4": {
        "architecture": "GlmMoeDsaForCausalLM",
        "model_type": "glm_moe_dsa",
        "family": "glm_moe_dsa",
        "groups": [
            group(
                "moe",
                "routed",
                list(range(3, 78)),
                **GLM5,
                quant=NVFP4,
                shared_format="bf16",
                route=routing("sigmoid", rsf=2.5),
            ),
            group(
                "mtp",
                "mtp",
                [78],
                **GLM5,
                quant=BF16,
                shared_format="bf16",
                route=routing("sigmoid", rsf=2.5),
            ),
        ],
    },
}


def test_preset_list_is_the_six_bundled_configs():
    assert list_presets() == sorted(EXPECTED, key=str.lower)


@pytest.mark.parametrize("model_id", sorted(EXPECTED))
def test_preset_matches_reference_values(model_id):
    desc = describe_model(model_id)
    data = description_to_json(desc)
    want = EXPECTED[model_id]
    assert data["model"] == model_id
    assert data["source"] == "preset"
    assert (data["architecture"], data["model_type"], data["family"]) == (
        want["architecture"],
        want["model_type"],
        want["family"],
    )
    assert [g["name"] for g in data["layer_groups"]] == [g["name"] for g in want["groups"]]
    for got, expected in zip(data["layer_groups"], want["groups"], strict=True):
        # the reference values predate the MoE-family fields; those hold their DeepSeek/GLM values
        assert (got["expert_bias"], got["shared_expert_gate"], got["activation"]["alpha"]) == (False, False, 1.0)
        assert got["routing"]["weight_on_input"] is False and got["activation"]["interleaved"] is False
        same = {k: got[k] for k in expected}
        same["activation"] = {k: got["activation"][k] for k in expected["activation"]}
        same["routing"] = {k: got["routing"][k] for k in expected["routing"]}
        assert same == expected, got["name"]


def test_v4_shared_expert_is_fp8_block_ue8m0():
    for model_id in (
        "deepseek-ai/DeepSeek-V4-Flash",
        "deepseek-ai/DeepSeek-V4-Pro",
        "nvidia/DeepSeek-V4-Flash-NVFP4",
    ):
        for g in describe_model(model_id).layer_groups:
            assert g.shared_expert_quant.label() == "fp8_block 128x128 ue8m0"
            assert g.shared_intermediate_size == g.moe_intermediate_size


def test_quant_sources_name_the_deciding_key():
    flash = describe_model("deepseek-ai/DeepSeek-V4-Flash").main_group
    assert flash.weight_quant.source == "expert_dtype=fp4"
    nv = {g.name: g for g in describe_model("nvidia/DeepSeek-V4-Flash-NVFP4").layer_groups}
    assert "quantized_layers" in nv["moe"].weight_quant.source
    assert "mtp.*" in nv["mtp"].weight_quant.source and "expert_dtype" in nv["mtp"].weight_quant.source
    glm51 = {g.name: g for g in describe_model("nvidia/GLM-5.1-NVFP4").layer_groups}
    assert "quant_algo=NVFP4" in glm51["moe"].weight_quant.source
    assert "model.layers.78*" in glm51["mtp"].weight_quant.source
    assert "shared_experts" in glm51["moe"].shared_expert_quant.source
    fp8 = describe_model("zai-org/GLM-5-FP8").main_group
    assert "float32 scales (no scale_fmt)" in fp8.weight_quant.source


@pytest.mark.parametrize("spelling", ["deepseek-ai/deepseek-v4-flash", "DEEPSEEK-AI/DEEPSEEK-V4-FLASH"])
def test_presets_are_case_insensitive(spelling):
    raw = load_model_source(spelling)
    assert raw.model_id == "deepseek-ai/DeepSeek-V4-Flash"
    assert raw.origin == "preset"


def test_preset_hf_quant_config_is_loaded():
    assert load_model_source("nvidia/GLM-5.1-NVFP4").hf_quant_config["quantization"]["quant_algo"] == "NVFP4"
    assert load_model_source("zai-org/GLM-5").hf_quant_config is None


def test_presets_are_byte_copies_of_shared_models():
    from tests.model.model_test_helpers import PRESETS

    shared = PRESETS.parents[2] / "shared" / "models"
    if not shared.is_dir():
        pytest.skip("shared/models is not present in this checkout")
    for folder in shared.iterdir():
        if folder.is_dir():
            for file in folder.iterdir():
                assert (PRESETS / folder.name / file.name).read_bytes() == file.read_bytes()
