"""The parsing pitfalls of shared/reference/models.md section 5, one test each."""

from __future__ import annotations

import copy

import pytest

from moe_oracle.errors import ModelConfigError, UnsupportedArchitectureError
from moe_oracle.model.adapters import describe_config
from moe_oracle.model.types import Scoring
from tests.model.model_test_helpers import assert_one_line, preset


def names(desc):
    return [g.name for g in desc.layer_groups]


def by_name(desc):
    return {g.name: g for g in desc.layer_groups}


# -- expert_dtype -------------------------------------------------------------------------------


def test_v4_without_expert_dtype_is_never_silently_fp4(v4_flash):
    del v4_flash["expert_dtype"]
    with pytest.raises(ModelConfigError) as info:
        describe_config(v4_flash, model_id="v4-no-dtype")
    assert_one_line(info.value, "v4-no-dtype", "expert_dtype", "cannot be determined", "Fix:")


def test_v4_without_expert_dtype_and_without_quantization_is_bf16(v4_flash):
    del v4_flash["expert_dtype"], v4_flash["quantization_config"]
    desc = describe_config(v4_flash)
    assert {g.weight_quant.label() for g in desc.layer_groups} == {"bf16"}
    assert desc.main_group.weight_quant.source == "no quantization_config"


def test_v4_without_expert_dtype_decided_by_moe_quant_algo(v4_flash):
    del v4_flash["expert_dtype"]
    v4_flash["quantization_config"]["moe_quant_algo"] = "NVFP4"
    desc = describe_config(v4_flash)
    assert {g.weight_quant.label() for g in desc.layer_groups} == {"nvfp4 g16 e4m3"}
    assert "moe_quant_algo" in desc.main_group.weight_quant.source


def test_nvidia_v4_without_expert_dtype_fails_on_the_ignored_mtp_layer():
    config, quant = preset("nvidia--DeepSeek-V4-Flash-NVFP4")
    del config["expert_dtype"]
    with pytest.raises(ModelConfigError) as info:
        describe_config(config, quant, model_id="nv")
    assert_one_line(info.value, "layer 43 (mtp)", "expert_dtype", "mtp.*")


def test_expert_dtype_inside_quantization_config_is_lifted(v4_flash):
    v4_flash["quantization_config"]["expert_dtype"] = v4_flash.pop("expert_dtype")
    desc = describe_config(v4_flash)
    assert desc.main_group.weight_quant.label() == "mxfp4 g32 ue8m0"
    assert desc.main_group.weight_quant.source == "quantization_config.expert_dtype=fp4"


def test_expert_dtype_fp8_uses_weight_block_and_scale_fmt(v4_flash):
    v4_flash["expert_dtype"] = "fp8"
    assert describe_config(v4_flash).main_group.weight_quant.label() == "fp8_block 128x128 ue8m0"
    del v4_flash["quantization_config"]["scale_fmt"]
    assert describe_config(v4_flash).main_group.weight_quant.label() == "fp8_block 128x128 fp32"


def test_expert_dtype_twice_with_different_values_is_refused(v4_flash):
    v4_flash["quantization_config"]["expert_dtype"] = "fp8"
    with pytest.raises(ModelConfigError) as info:
        describe_config(v4_flash)
    assert_one_line(info.value, "expert_dtype", "contradicts", "quantization_config.expert_dtype")


def test_expert_dtype_contradicting_explicit_nvfp4_layers_loses():
    config, quant = preset("nvidia--DeepSeek-V4-Flash-NVFP4")
    assert config["expert_dtype"] == "fp4"
    groups = by_name(describe_config(config, quant))
    assert groups["moe"].weight_quant.label() == "nvfp4 g16 e4m3"
    assert groups["mtp"].weight_quant.label() == "mxfp4 g32 ue8m0"


def test_expert_dtype_contradicting_an_nvfp4_config_group_loses(v4_flash):
    """No moe_quant_algo / quantized_layers: a config_groups NVFP4 group is the explicit evidence."""
    v4_flash["quantization_config"].update(
        config_groups={
            "group_0": {
                "targets": ["Linear"],
                "weights": {"num_bits": 4, "type": "float", "group_size": 16},
            }
        },
        ignore=["*.attn.*", "*.ffn.shared_experts.*", "head", "mtp.*"],
    )
    groups = by_name(describe_config(v4_flash))
    assert groups["moe"].weight_quant.label() == "nvfp4 g16 e4m3"
    assert "config_groups.group_0" in groups["moe"].weight_quant.source
    assert groups["mtp"].weight_quant.label() == "mxfp4 g32 ue8m0"
    assert groups["moe"].shared_expert_quant.label() == "fp8_block 128x128 ue8m0"


# -- null == absent ---------------------------------------------------------------------------


def test_null_first_k_dense_replace_and_groups_on_v4(v4_flash):
    v4_flash.update(first_k_dense_replace=None, n_group=None, topk_group=None, moe_layer_freq=None)
    desc = describe_config(v4_flash)
    assert names(desc) == ["moe", "moe_hash", "mtp"]
    assert (desc.main_group.routing.num_groups, desc.main_group.routing.topk_groups) == (1, 1)


def test_null_first_k_dense_replace_on_glm5_means_no_dense_prefix(glm5):
    glm5["first_k_dense_replace"] = None
    glm5["n_group"] = None
    desc = describe_config(glm5)
    assert desc.main_group.layers == tuple(range(78))
    assert desc.main_group.routing.num_groups == 1


def test_null_quantization_config_is_bf16(glm5):
    glm5["quantization_config"] = None
    assert describe_config(glm5).main_group.weight_quant.label() == "bf16"


# -- text_config ------------------------------------------------------------------------------


def test_text_config_nesting_is_read_first(v4_flash):
    outer = {
        "architectures": ["DeepseekV4ForCausalLM"],
        "model_type": "deepseek_v4",
        "quantization_config": v4_flash.pop("quantization_config"),
        "text_config": v4_flash,
        "hidden_size": 4096,  # the same value at the top level: read from text_config, no contradiction
    }
    desc = describe_config(outer)
    assert desc.main_group.hidden_size == 4096
    assert names(desc) == ["moe", "moe_hash", "mtp"]


def test_a_top_level_value_text_config_contradicts_is_refused(v4_flash):
    """Silently reading text_config.hidden_size over a different top-level one hid a broken config."""
    outer = {
        "architectures": ["DeepseekV4ForCausalLM"],
        "model_type": "deepseek_v4",
        "quantization_config": v4_flash.pop("quantization_config"),
        "text_config": v4_flash,
        "hidden_size": 999,
    }
    with pytest.raises(ModelConfigError) as info:
        describe_config(outer)
    assert_one_line(info.value, "text_config.hidden_size=4096 contradicts hidden_size=999")


def test_text_config_errors_name_the_json_path(v4_flash):
    v4_flash["hidden_size"] = "4096"
    outer = {"architectures": ["DeepseekV4ForCausalLM"], "text_config": v4_flash}
    with pytest.raises(ModelConfigError) as info:
        describe_config(outer)
    assert_one_line(info.value, 'text_config.hidden_size="4096"', "integer", "without quotes")


def test_text_config_model_type_selects_the_adapter(v4_flash):
    v4_flash["model_type"] = "deepseek_v41_text"
    v4_flash.pop("num_hash_layers")
    v4_flash.pop("architectures")
    outer = {"model_type": "some_vlm_wrapper", "text_config": v4_flash}
    desc = describe_config(outer)
    assert desc.family == "deepseek_v41"
    assert names(desc) == ["moe", "mtp"]


def test_v41_refuses_hash_layers():
    from tests.model.model_test_helpers import fixture

    config, _ = fixture("reconstructed--DeepSeek-V4.1-Flash")
    config["text_config"]["num_hash_layers"] = 3
    with pytest.raises(ModelConfigError) as info:
        describe_config(config)
    assert_one_line(info.value, "text_config.num_hash_layers=3", "no hash-routed layers")


# -- mixed formats, roles ----------------------------------------------------------------------


def test_mixed_format_checkpoint_yields_one_group_per_format():
    config, quant = preset("nvidia--DeepSeek-V4-Flash-NVFP4")
    listed = {f"layers.{i}.ffn.experts" for i in range(0, 21)}
    for table in (
        config["quantization_config"]["quantized_layers"],
        quant["quantization"]["quantized_layers"],
    ):
        for key in list(table):
            if key not in listed:
                del table[key]
    desc = describe_config(config, quant)
    assert names(desc) == ["moe_mxfp4", "moe_hash", "moe_nvfp4", "mtp"]
    groups = by_name(desc)
    assert groups["moe_mxfp4"].layers == tuple(range(21, 43))
    assert groups["moe_nvfp4"].layers == tuple(range(3, 21))
    assert groups["moe_hash"].weight_quant.label() == "nvfp4 g16 e4m3"
    assert groups["moe_mxfp4"].weight_quant.label() == "mxfp4 g32 ue8m0"
    assert "not listed" in groups["moe_mxfp4"].weight_quant.source


def test_main_group_first_then_model_order(glm5):
    glm5["first_k_dense_replace"] = 0
    desc = describe_config(glm5)
    assert names(desc) == ["moe", "mtp"]
    assert desc.main_group.layers[0] == 0


def test_hash_layers_from_mlp_layer_types(v4_flash):
    del v4_flash["num_hash_layers"]
    v4_flash["mlp_layer_types"] = ["hash_moe"] * 2 + ["moe"] * 41
    groups = by_name(describe_config(v4_flash))
    assert groups["moe_hash"].layers == (0, 1)
    assert groups["moe_hash"].routing.hash and not groups["moe_hash"].routing.correction_bias


def test_hash_layer_count_contradiction_is_refused(v4_flash):
    v4_flash["mlp_layer_types"] = ["hash_moe"] * 2 + ["moe"] * 41
    with pytest.raises(ModelConfigError) as info:
        describe_config(v4_flash)
    assert_one_line(info.value, "num_hash_layers=3", "contradicts", "mlp_layer_types", "2 hash_moe")


def test_num_hash_layers_above_layer_count(v4_flash):
    v4_flash["num_hash_layers"] = 44
    with pytest.raises(ModelConfigError) as info:
        describe_config(v4_flash)
    assert_one_line(info.value, "num_hash_layers=44", "0..43")


def test_first_k_dense_replace_and_moe_layer_freq(glm5):
    glm5["moe_layer_freq"] = 2
    desc = describe_config(glm5)
    assert desc.main_group.layers == tuple(i for i in range(3, 78) if i % 2 == 0)


def test_v4_dspark_keys_make_draft_layers(v4_flash):
    v4_flash.update(dspark_target_layer_ids=[40, 41, 42], dspark_n_routed_experts=128, dspark_num_experts_per_tok=3)
    desc = describe_config(v4_flash)
    assert names(desc) == ["moe", "moe_hash", "draft"]
    draft = by_name(desc)["draft"]
    assert draft.layers == (43, 44, 45) and (draft.num_experts, draft.top_k) == (128, 3)


def test_modules_to_not_convert_keeps_experts_bf16():
    config, _ = preset("zai-org--GLM-5-FP8")
    config["quantization_config"]["modules_to_not_convert"].append("model.layers.78.mlp.experts")
    groups = by_name(describe_config(config))
    assert groups["mtp"].weight_quant.label() == "bf16"
    assert "modules_to_not_convert" in groups["mtp"].weight_quant.source
    assert groups["mtp"].shared_expert_quant.label() == "fp8_block 128x128 fp32"
    assert groups["moe"].weight_quant.label() == "fp8_block 128x128 fp32"


# -- family defaults ------------------------------------------------------------------------------


def deepseek_v3_config(**extra):
    config = {
        "architectures": ["DeepseekV3ForCausalLM"],
        "model_type": "deepseek_v3",
        "hidden_size": 7168,
        "moe_intermediate_size": 2048,
        "n_routed_experts": 256,
        "num_experts_per_tok": 8,
        "n_shared_experts": 1,
        "num_hidden_layers": 61,
        "first_k_dense_replace": 3,
        "moe_layer_freq": 1,
        "num_nextn_predict_layers": 1,
        "n_group": 8,
        "topk_group": 4,
        "norm_topk_prob": True,
        "routed_scaling_factor": 2.5,
        "scoring_func": "sigmoid",
        "topk_method": "noaux_tc",
        "quantization_config": {"quant_method": "fp8", "fmt": "e4m3", "weight_block_size": [128, 128]},
    }
    config.update(extra)
    return config


def test_generic_deepseek_v3():
    desc = describe_config(deepseek_v3_config())
    assert desc.family == "deepseek_v3"
    groups = by_name(desc)
    assert groups["moe"].layers == tuple(range(3, 61)) and groups["mtp"].layers == (61,)
    r = groups["moe"].routing
    assert (r.scoring, r.correction_bias, r.num_groups, r.topk_groups) == (Scoring.SIGMOID, True, 8, 4)
    assert groups["moe"].weight_quant.label() == "fp8_block 128x128 fp32"


def test_generic_defaults_follow_deepseek_v2_moe():
    config = deepseek_v3_config()
    for key in ("scoring_func", "topk_method", "n_group", "topk_group", "routed_scaling_factor"):
        del config[key]
    r = describe_config(config).main_group.routing
    assert (r.scoring, r.correction_bias, r.num_groups, r.topk_groups, r.routed_scaling_factor) == (
        Scoring.SOFTMAX,
        False,
        1,
        1,
        1.0,
    )
    v2 = deepseek_v3_config(architectures=["DeepseekV2ForCausalLM"], model_type="deepseek_v2")
    del v2["norm_topk_prob"]
    assert describe_config(v2).family == "deepseek_v2"
    assert describe_config(v2).main_group.routing.renormalize is False


def test_kimi_k2_model_type_is_generic():
    desc = describe_config(deepseek_v3_config(architectures=None, model_type="kimi_k2"))
    assert desc.family == "deepseek_v3" and desc.architecture == "DeepseekV3ForCausalLM"


def test_glm5_defaults_from_section_5_2(glm5):
    del glm5["scoring_func"], glm5["topk_method"], glm5["routed_scaling_factor"]
    r = describe_config(glm5).main_group.routing
    assert (r.scoring, r.correction_bias, r.routed_scaling_factor) == (Scoring.SOFTMAX, False, 1.0)


def test_unknown_architecture_names_the_nearest_families_and_the_manual_flags(glm5):
    """#32: not the whole catalogue (2,000 characters) but the families whose reader reads the config and the
    manual flags the nearest one reads (the CLI turns them into the user's command with --checkpoint)."""
    glm5["architectures"] = ["JambaForCausalLM"]
    glm5["model_type"] = "jamba"
    with pytest.raises(UnsupportedArchitectureError) as info:
        describe_config(glm5, model_id="mix")
    text = assert_one_line(info.value, "'JambaForCausalLM'", "GlmMoeDsaForCausalLM", "--hidden-size 6144")
    assert text.startswith("mix: unsupported model") and len(text) < 900
    assert info.value.manual_words[:2] == ("--hidden-size", "6144")


def test_architecture_and_model_type_of_different_families_are_refused(v4_flash):
    """Following the architecture silently hid a config that names two families (issue 22)."""
    v4_flash["model_type"] = "glm4_moe"
    with pytest.raises(ModelConfigError) as info:
        describe_config(copy.deepcopy(v4_flash))
    assert_one_line(info.value, "architectures[0]='DeepseekV4ForCausalLM'", "model_type='glm4_moe'", "contradicts")
