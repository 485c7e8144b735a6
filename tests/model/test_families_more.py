"""The families of shared/reference/families-2026-12.md §1.2, §1.4, §2.2, §5 and §6 beyond the first table: each is
read (by its exact ``architectures`` / ``model_type`` spelling, from vLLM 0.33's and SGLang 0.5.23's registries) or
refused by name with its blocker.

Real configs (tests/fixtures/models/PROVENANCE.md): MiniMax-M3, MiMo-V2-Flash, Laguna-XS.2-FP8 (a refused family's
config is not a fixture: every fixture folder must describe; Step-3.7-Flash's identity is quoted below instead).
The other families have no verbatim config here: MINIMAL configs below exercise only the name check and the family
rule's key spellings (marked ``minimal`` in each test's id); their values are placeholders, not a model's.
"""

from __future__ import annotations

import pytest

from moe_oracle.errors import ModelConfigError, UnsupportedArchitectureError
from moe_oracle.model.adapters import describe_config, describe_model
from moe_oracle.model.types import Scoring
from tests.model.model_test_helpers import FIXTURES, assert_one_line, fixture

_QWEN = {
    "hidden_size": 2048,
    "moe_intermediate_size": 768,
    "num_experts": 128,
    "num_experts_per_tok": 8,
    "num_hidden_layers": 4,
    "hidden_act": "silu",
}
_DEEPSEEK = {
    "hidden_size": 4096,
    "moe_intermediate_size": 2048,
    "n_routed_experts": 64,
    "num_experts_per_tok": 8,
    "n_shared_experts": 1,
    "first_k_dense_replace": 1,
    "scoring_func": "sigmoid",
    "topk_method": "noaux_tc",
    "num_hidden_layers": 4,
    "hidden_act": "silu",
}

#: (id, config, family) -- MINIMAL configs: the name check and the rule's keys only.
MINIMAL = [
    ("mellum", {"architectures": ["MellumForCausalLM"], "model_type": "mellum", **_QWEN}, "mellum"),
    (
        "interns2_preview",
        {
            "architectures": ["InternS2PreviewForConditionalGeneration"],
            "text_config": {**_QWEN, "shared_expert_intermediate_size": 512},
        },
        "interns2_preview",
    ),
    (
        "qwen4_exp",
        {
            "architectures": ["Qwen4ExpForConditionalGeneration"],
            "model_type": "qwen4_exp",
            "text_config": {"model_type": "qwen4_exp_text", **_QWEN, "shared_expert_intermediate_size": 512},
        },
        "qwen4_exp",
    ),
    ("mistral_large_3", {"architectures": ["MistralLarge3ForCausalLM"], **_DEEPSEEK}, "mistral_large_3"),
    (
        "glm5_next",
        {"architectures": ["Glm5NextForConditionalGeneration"], "model_type": "glm5_next", **_DEEPSEEK},
        "glm5_next",
    ),
    ("hy_v4", {"architectures": ["HYV4ForCausalLM"], "model_type": "hy_v4", **_DEEPSEEK}, "hy_v4"),
    (
        "hy_v3",
        {
            "architectures": ["HYV3ForCausalLM"],
            "model_type": "hy_v3",
            "hidden_size": 4096,
            "expert_hidden_dim": 1536,
            "num_experts": 192,
            "num_experts_per_tok": 8,
            "num_shared_experts": 1,
            "first_k_dense_replace": 1,
            "route_norm": True,
            "router_scaling_factor": 2.826,
            "num_hidden_layers": 4,
        },
        "hy_v3",
    ),
    (
        "k2_horizon",
        {
            "architectures": ["K2HorizonForCausalLM"],
            **_QWEN,
            "num_shared_experts": 1,
            "router_score_func": "sigmoid",
            "moe_gate_bias": True,
            "router_scaling_factor": 2.5,
            "decoder_sparse_step": 2,
        },
        "k2_horizon",
    ),
    (
        "aria",
        {
            "architectures": ["AriaForConditionalGeneration"],
            "model_type": "aria",
            "text_config": {
                "model_type": "aria_text",
                "hidden_size": 2560,
                "intermediate_size": 1664,
                "moe_num_experts": 64,
                "moe_topk": 6,
                "num_hidden_layers": 4,
            },
        },
        "aria",
    ),
]


@pytest.mark.parametrize(("config", "family"), [pytest.param(c, f, id=f"minimal-{i}") for i, c, f in MINIMAL])
def test_family_read_by_name_minimal_config(config, family):
    desc = describe_config(config, model_id="m")
    assert desc.family == family
    assert desc.main_group.num_experts > 1


def test_qwen_block_aliases_keep_the_qwen_rules():
    by_id = {i: describe_config(c).main_group for i, c, _ in MINIMAL}
    assert (by_id["mellum"].routing.scoring, by_id["mellum"].num_shared_experts) == (Scoring.SOFTMAX, 0)
    assert by_id["qwen4_exp"].shared_expert_gate and by_id["interns2_preview"].shared_expert_gate


def test_deepseek_v2_moe_aliases_take_swiglu_limit_as_clamp_when_present():
    config = next(c for i, c, _ in MINIMAL if i == "glm5_next")
    assert describe_config(config).main_group.activation.clamp is None
    g = describe_config({**config, "swiglu_limit": 10.0}).main_group
    assert (g.activation.clamp, g.routing.scoring, g.routing.correction_bias) == (10.0, Scoring.SIGMOID, True)


def test_hy_v3_rule_sigmoid_bias_scaling_and_shared():
    g = describe_config(next(c for i, c, _ in MINIMAL if i == "hy_v3")).main_group
    r = g.routing
    assert (g.moe_intermediate_size, g.num_shared_experts, g.layers) == (1536, 1, (1, 2, 3))
    assert (r.scoring, r.correction_bias, r.renormalize) == (Scoring.SIGMOID, True, True)
    assert r.routed_scaling_factor == 2.826


def test_aria_default_two_ungated_shared_experts_of_intermediate_size():
    g = describe_config(next(c for i, c, _ in MINIMAL if i == "aria")).main_group
    assert (g.num_shared_experts, g.shared_intermediate_size, g.shared_expert_gate) == (2, 2 * 1664, False)
    assert (g.routing.scoring, g.routing.renormalize, g.layers) == (Scoring.SOFTMAX, True, (0, 1, 2, 3))


def test_minimax_m3_swigluoai_from_config_keys_stacked_not_interleaved():
    desc = describe_model(str(FIXTURES / "MiniMaxAI--MiniMax-M3"))
    act = desc.main_group.activation
    assert (act.alpha, act.beta, act.clamp, act.interleaved) == (1.702, 1.0, 7.0, False)
    assert [g.role for g in desc.layer_groups] == ["routed", "mtp"]
    config, _ = fixture("MiniMaxAI--MiniMax-M3")
    config["swiglu_beta"] = 0.5
    assert describe_config(config).main_group.activation.beta == 0.5


def test_moe_layer_freq_list_flags_each_layer_and_must_match_the_layer_count():
    config, _ = fixture("XiaomiMiMo--MiMo-V2-Flash")
    assert describe_config(config).main_group.layers == tuple(range(1, 48))
    config["moe_layer_freq"] = config["moe_layer_freq"][:10]
    with pytest.raises(ModelConfigError) as info:
        describe_config(config, model_id="mimo")
    assert_one_line(info.value, "moe_layer_freq", "10 entries", "48")


def test_mimo_v2_ignores_scoring_func_and_routed_scaling_factor_as_vllm_does():
    config, _ = fixture("XiaomiMiMo--MiMo-V2-Flash")
    config.update(scoring_func="softmax", topk_method="greedy", routed_scaling_factor=2.5)
    r = describe_config(config).main_group.routing
    assert (r.scoring, r.correction_bias, r.routed_scaling_factor) == (Scoring.SIGMOID, True, 1.0)


def test_laguna_router_weight_on_input_key():
    config, _ = fixture("poolside--Laguna-XS.2-FP8")
    assert describe_config(config).main_group.routing.weight_on_input is False
    config["moe_apply_router_weight_on_input"] = True
    assert describe_config(config).main_group.routing.weight_on_input is True


REFUSED = [
    ({"architectures": ["LongcatFlashForCausalLM"], "model_type": "longcat_flash"}, ["LongCat", "zero_expert_num"]),
    (
        {"architectures": ["Ernie4_5_VLMoeForConditionalGeneration"], "model_type": "ernie4_5_vl_moe"},
        ["ERNIE-4.5-VL", "two expert sets"],
    ),
    ({"architectures": ["Step3p5ForCausalLM"], "model_type": "step3p5"}, ["swiglustep", "swiglu_limits"]),
    ({"architectures": ["ExaoneMoeForCausalLM"], "model_type": "exaone_moe"}, ["Exaone-MoE", "swiglu_limits"]),
    ({"architectures": ["Step5ForCausalLM"], "model_type": "step5"}, ["Step5MegaMoEExperts", "swiglustep"]),
    (
        {"architectures": ["MuseSparkForConditionalGeneration"], "model_type": "muse_spark"},
        ["MuseSpark", "post_expert_norm_gamma", "deep_gemm_mega_moe"],
    ),
]


@pytest.mark.parametrize(("config", "needles"), REFUSED, ids=[c["model_type"] for c, _ in REFUSED])
def test_family_refused_by_name_with_its_blocker_minimal(config, needles):
    with pytest.raises(UnsupportedArchitectureError) as info:
        describe_config(config, model_id="m")
    assert_one_line(info.value, *needles)


def test_step_3_7_identity_of_its_public_config_refused_by_name():
    """architectures / model_type of stepfun-ai/Step-3.7-Flash (aiconfigurator 095f58a5 copy; not a fixture)."""
    with pytest.raises(UnsupportedArchitectureError) as info:
        describe_config({"architectures": ["Step3p7FlashForCausalLM"], "model_type": "step3p7"}, model_id="s")
    assert_one_line(info.value, "Step-3.7", "swiglustep")


NEW_ARCHITECTURES = (
    "MiMoV2FlashForCausalLM",
    "MiniMaxM3SparseForCausalLM",
    "LagunaForCausalLM",
    "HYV3ForCausalLM",
    "HYV4ForCausalLM",
    "AriaForConditionalGeneration",
    "MistralLarge3ForCausalLM",
    "InternS2PreviewForConditionalGeneration",
    "Qwen4ExpForConditionalGeneration",
    "MellumForCausalLM",
    "K2HorizonForCausalLM",
)


@pytest.mark.parametrize("architecture", NEW_ARCHITECTURES)
def test_every_family_read_here_has_its_vllm_model_class(architecture):
    """Each engine gate row cites its file:line (checked against the wheels in tests/engines/test_engine_vocabulary)."""
    from moe_oracle.releases import vllm

    row = vllm.model_classes.TABLE.find(architecture)
    assert row is not None
    assert vllm.model_classes.plugin_serves(architecture) or "subclass" in vllm.model_classes.plugin_why_not(
        architecture
    )


def test_sglang_mega_rows_of_the_new_families():
    from moe_oracle.releases import sglang

    calls_mega = sglang.model_classes.TABLE.calls_mega
    sglang_plugin_serves = sglang.model_classes.sglang_plugin_serves

    assert calls_mega("MiniMaxM3SparseForCausalLM") and not sglang_plugin_serves("MiniMaxM3SparseForCausalLM")
    assert not calls_mega("MiMoV2FlashForCausalLM") and sglang_plugin_serves("MiMoV2FlashForCausalLM")
    assert not calls_mega("LagunaForCausalLM")


def test_k2_horizon_router_keys_and_qwen_schedule():
    g = describe_config(next(c for i, c, _ in MINIMAL if i == "k2_horizon")).main_group
    r = g.routing
    assert (r.scoring, r.correction_bias, r.routed_scaling_factor) == (Scoring.SIGMOID, True, 2.5)
    assert (g.layers, g.num_shared_experts, g.shared_expert_gate) == ((1, 3), 1, False)


@pytest.mark.parametrize(
    ("architecture", "model_type", "wrapper", "inner"),
    [
        ("KimiK25ForConditionalGeneration", "kimi_k25", "text_config", "deepseek_v3"),  # fixture moonshotai--Kimi-K2.5
        ("KimiVLForConditionalGeneration", "kimi_vl", "text_config", "deepseek_v3"),
        ("DeepseekVLV2ForCausalLM", "deepseek_vl_v2", "language_config", "deepseek_v2"),
        ("DotsVLMForCausalLM", None, "language_config", "deepseek_v3"),  # sglang dots_vlm.py:43
        ("DeepseekOCRForCausalLM", None, "text_config", "deepseek_v2"),  # vllm deepseek_ocr.py:397
    ],
)
def test_vl_wrappers_over_deepseek_v2_moe_are_read_through_their_language_model(
    architecture, model_type, wrapper, inner
):
    """SGLang's VL wrappers over DeepseekV2 (families §1.2): read by the identity of the wrapped language model.
    MINIMAL configs: the names (vLLM / SGLang registries) and the wrapper key only."""
    config = {"architectures": [architecture], wrapper: {**_DEEPSEEK, "model_type": inner}}
    if model_type:
        config["model_type"] = model_type
    assert describe_config(config).family == inner


def test_the_documented_wrappers_are_the_tested_ones():
    from moe_oracle.model.adapters.families import WRAPPED_LANGUAGE_MODELS

    tested = {
        a for a, *_ in test_vl_wrappers_over_deepseek_v2_moe_are_read_through_their_language_model.pytestmark[0].args[1]
    }
    assert tested == set(WRAPPED_LANGUAGE_MODELS)


#: Every architecture named in shared/reference/families-2026-12.md §1.2, §1.4, §2.2, §5 and §6 (by its registry
#: spelling in vLLM 0.33 / SGLang 0.5.23).
REFERENCE_ARCHITECTURES = (
    "DeepseekV2ForCausalLM",
    "DeepseekV3ForCausalLM",
    "DeepseekV32ForCausalLM",
    "DeepseekV4ForCausalLM",
    "DeepseekV41ForCausalLM",
    "KimiK25ForConditionalGeneration",
    "KimiK3ForConditionalGeneration",
    "MistralLarge3ForCausalLM",
    "GlmMoeDsaForCausalLM",
    "Glm5NextForConditionalGeneration",
    "Glm4MoeForCausalLM",
    "Glm4MoeLiteForCausalLM",
    "HYV4ForCausalLM",
    "HYV3ForCausalLM",
    "HunYuanMoEV1ForCausalLM",
    "KimiVLForConditionalGeneration",
    "DeepseekVLV2ForCausalLM",
    "DotsVLMForCausalLM",
    "DeepseekOCRForCausalLM",
    "Qwen2MoeForCausalLM",
    "Qwen3MoeForCausalLM",
    "Qwen3NextForCausalLM",
    "Qwen3_5MoeForCausalLM",
    "Qwen3_5MoeForConditionalGeneration",
    "Qwen3VLMoeForConditionalGeneration",
    "InternS2PreviewForConditionalGeneration",
    "Qwen4ExpForConditionalGeneration",
    "MellumForCausalLM",
    "MiniMaxM2ForCausalLM",
    "MiniMaxM3SparseForCausalLM",
    "MixtralForCausalLM",
    "Llama4ForConditionalGeneration",
    "GptOssForCausalLM",
    "Step3VLForConditionalGeneration",
    "Step3p5ForCausalLM",
    "Step3p7ForConditionalGeneration",
    "Step5ForCausalLM",
    "Ernie4_5_MoeForCausalLM",
    "Ernie4_5_VLMoeForConditionalGeneration",
    "BailingMoeForCausalLM",
    "BailingMoeV2ForCausalLM",
    "LongcatFlashForCausalLM",
    "MuseSparkForConditionalGeneration",
    "Gemma4ForConditionalGeneration",
    "NemotronHForCausalLM",
    "DbrxForCausalLM",
    "MiMoV2FlashForCausalLM",
    "AriaForConditionalGeneration",
    "ExaoneMoeForCausalLM",
    "K2HorizonForCausalLM",
    "LagunaForCausalLM",
)


@pytest.mark.parametrize("architecture", REFERENCE_ARCHITECTURES)
def test_every_family_of_the_reference_is_read_or_refused_by_name(architecture):
    from moe_oracle.model.adapters.catalog import find_refusal, find_rules
    from moe_oracle.model.adapters.families import WRAPPED_LANGUAGE_MODELS

    known = find_rules(architecture, None) or find_refusal(architecture) or architecture in WRAPPED_LANGUAGE_MODELS
    assert known, f"{architecture} would get the generic 'unsupported model' message"
