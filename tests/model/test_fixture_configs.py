"""Real (verbatim, trimmed) and reconstructed configs from tests/fixtures/models (see its README)."""

from __future__ import annotations

import pytest

from moe_oracle.errors import ModelConfigError
from moe_oracle.model.adapters import describe_config, describe_model
from tests.model.model_test_helpers import FIXTURES, assert_one_line, fixture


def by_name(desc):
    return {g.name: g for g in desc.layer_groups}


def test_redhat_compressed_tensors_nvfp4_everywhere_in_ffn():
    """compressed-tensors `re:` targets; expert_dtype "fp4" loses to the explicit NVFP4 group; nulls."""
    desc = describe_model(str(FIXTURES / "RedHatAI--DeepSeek-V4-Flash-NVFP4-FP8"))
    groups = by_name(desc)
    assert [g.name for g in desc.layer_groups] == ["moe", "moe_hash", "mtp"]
    assert groups["moe"].layers == tuple(range(3, 43))
    assert groups["moe_hash"].layers == (0, 1, 2)
    assert groups["mtp"].layers == (43,)
    for g in desc.layer_groups:
        assert g.weight_quant.label() == "nvfp4 g16 e4m3" and g.weight_quant.global_scale
        assert g.shared_expert_quant.label() == "nvfp4 g16 e4m3"
        assert "config_groups.group_1" in g.weight_quant.source
        assert (g.routing.num_groups, g.routing.topk_groups) == (1, 1)  # n_group / topk_group are null
    assert groups["moe"].routing.routed_scaling_factor == 1.5


def test_glm5_nvfp4_quantization_only_in_hf_quant_config():
    desc = describe_model(str(FIXTURES / "nvidia--GLM-5-NVFP4"))
    groups = by_name(desc)
    assert groups["moe"].layers == tuple(range(3, 78))
    assert groups["moe"].weight_quant.label() == "nvfp4 g16 e4m3"
    assert groups["moe"].shared_expert_quant.label() == "nvfp4 g16 e4m3"  # shared experts not excluded
    assert groups["mtp"].layers == (78,)
    assert groups["mtp"].weight_quant.label() == "bf16"
    assert "hf_quant_config.quantization.exclude_modules" in groups["mtp"].weight_quant.source


def test_glm52_mlp_layer_types_schedule():
    desc = describe_model(str(FIXTURES / "zai-org--GLM-5.2"))
    groups = by_name(desc)
    assert groups["moe"].layers == tuple(range(3, 78))
    assert groups["mtp"].layers == (78,)
    assert groups["moe"].routing.scoring.value == "sigmoid" and groups["moe"].routing.correction_bias


def test_glm52_mlp_layer_types_wins_over_first_k_dense_replace():
    config, _ = fixture("zai-org--GLM-5.2")
    config["first_k_dense_replace"] = 10
    desc = describe_config(config)
    assert desc.main_group.layers == tuple(range(3, 78))


def test_sgl_trimmed_fp8_copy_is_refused_not_guessed():
    """aiconfigurator's trimmed sgl-project V4 FP8 copy: no swiglu_limit, no expert_dtype."""
    config, _ = fixture("sgl-project--DeepSeek-V4-Flash-FP8")
    with pytest.raises(ModelConfigError) as info:
        describe_config(config, model_id="sgl")
    assert_one_line(info.value, "swiglu_limit", "missing")
    config["swiglu_limit"] = 10.0
    with pytest.raises(ModelConfigError) as info:
        describe_config(config, model_id="sgl")
    assert_one_line(info.value, "expert_dtype", "cannot be determined", "layer", "fp4", "fp8")
    config["expert_dtype"] = "fp8"
    desc = describe_config(config, model_id="sgl")
    assert desc.main_group.weight_quant.label() == "fp8_block 128x128 ue8m0"
    assert desc.model_type == "deepseek_ref"  # relabelled, resolved through architectures[0]


def test_v41_reconstructed_text_config_and_dspark():
    desc = describe_model(str(FIXTURES / "reconstructed--DeepSeek-V4.1-Flash"))
    assert desc.family == "deepseek_v41"
    assert desc.num_hidden_layers == 40
    groups = by_name(desc)
    assert [g.name for g in desc.layer_groups] == ["moe", "draft"]
    moe, draft = groups["moe"], groups["draft"]
    assert moe.layers == tuple(range(40))  # no hash layers
    assert (moe.hidden_size, moe.moe_intermediate_size, moe.num_experts, moe.top_k) == (5120, 2304, 384, 6)
    assert moe.weight_quant.label() == "mxfp4 g32 ue8m0"
    assert moe.weight_quant.source == "quantization_config.expert_dtype=fp4"
    assert moe.shared_expert_quant.label() == "fp8_block 32x32 ue8m0"
    assert moe.activation.clamp == 10.0
    assert moe.routing.scoring.value == "sqrtsoftplus" and moe.routing.correction_bias
    assert moe.routing.routed_scaling_factor == 1.5 and not moe.routing.hash
    assert draft.role == "draft" and draft.layers == (40, 41, 42)
    assert (draft.num_experts, draft.top_k, draft.moe_intermediate_size) == (128, 3, 2304)
    assert draft.weight_quant.label() == "mxfp4 g32 ue8m0"


def test_glm47_nvfp4_reconstructed():
    desc = describe_model(str(FIXTURES / "reconstructed--GLM-4.7-NVFP4"))
    groups = by_name(desc)
    assert desc.family == "glm4_moe"
    assert groups["moe"].layers == tuple(range(3, 92))
    assert (groups["moe"].hidden_size, groups["moe"].moe_intermediate_size) == (5120, 1536)
    assert (groups["moe"].num_experts, groups["moe"].top_k, groups["moe"].num_shared_experts) == (160, 8, 1)
    assert groups["moe"].weight_quant.label() == "nvfp4 g16 e4m3"
    assert groups["moe"].shared_expert_quant.label() == "nvfp4 g16 e4m3"
    assert groups["mtp"].layers == (92,) and groups["mtp"].weight_quant.label() == "bf16"
    r = groups["moe"].routing
    assert (r.scoring.value, r.correction_bias, r.renormalize, r.num_groups, r.topk_groups) == (
        "sigmoid",
        True,
        True,
        1,
        1,
    )
    assert r.routed_scaling_factor == 2.5
    assert groups["moe"].activation.clamp is None


def test_glm45_air_reconstructed():
    desc = describe_model(str(FIXTURES / "reconstructed--GLM-4.5-Air"))
    moe = desc.main_group
    assert moe.layers == tuple(range(1, 46))
    assert (moe.hidden_size, moe.moe_intermediate_size, moe.num_experts, moe.top_k) == (4096, 1408, 128, 8)
    assert moe.routing.routed_scaling_factor == 1.0 and moe.routing.correction_bias
    assert by_name(desc)["mtp"].layers == (46,)


def test_glm47_flash_trimmed_lite():
    desc = describe_model(str(FIXTURES / "trimmed--GLM-4.7-Flash"))
    assert desc.model_type == "glm4_moe_lite" and desc.family == "glm4_moe"
    assert [g.name for g in desc.layer_groups] == ["moe"]  # the trimmed copy has no num_nextn_predict_layers
    moe = desc.main_group
    assert moe.layers == tuple(range(1, 47))
    assert (moe.hidden_size, moe.num_experts, moe.top_k) == (2048, 64, 4)
    assert moe.routing.routed_scaling_factor == 1.8 and moe.routing.scoring.value == "sigmoid"


def test_glm4_ignores_scoring_func_in_config():
    config, _ = fixture("reconstructed--GLM-4.5-Air")
    config["scoring_func"] = "softmax"
    config["topk_method"] = "greedy"
    moe = describe_config(config).main_group
    assert moe.routing.scoring.value == "sigmoid" and moe.routing.correction_bias
