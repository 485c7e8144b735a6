"""Every MoE family of shared/reference/families-2026-12.md: read from a real public config, field by field.

Fixtures: tests/fixtures/models/<org>--<name>/ (verbatim copies; see tests/fixtures/models/PROVENANCE.md).
Expected values are the model cards' / reference table's (families §5).
"""

from __future__ import annotations

import copy

import pytest

from moe_oracle.errors import ModelConfigError, UnsupportedArchitectureError
from moe_oracle.model.adapters import describe_config, describe_model
from moe_oracle.model.types import ActivationKind, Scoring, WeightFormat
from tests.model.model_test_helpers import FIXTURES, QWEN15_MOE_A2_7B, assert_one_line, fixture

# fixture -> (family, MoE layers, H, I, E, top-k, shared count, shared width, shared gated)
SHAPE = {
    "Qwen--Qwen3-30B-A3B": ("qwen3_moe", 48, 2048, 768, 128, 8, 0, 0, False),
    "Qwen--Qwen3-30B-A3B-FP8": ("qwen3_moe", 48, 2048, 768, 128, 8, 0, 0, False),
    "Qwen--Qwen3-235B-A22B-FP8": ("qwen3_moe", 94, 4096, 1536, 128, 8, 0, 0, False),
    "nvidia--Qwen3-235B-A22B-NVFP4": ("qwen3_moe", 94, 4096, 1536, 128, 8, 0, 0, False),
    "Qwen--Qwen3-VL-30B-A3B-Instruct": ("qwen3_vl_moe", 48, 2048, 768, 128, 8, 0, 0, False),
    "Qwen--Qwen3-Next-80B-A3B-Thinking": ("qwen3_next", 48, 2048, 512, 512, 10, 1, 512, True),
    "Qwen--Qwen3.5-397B-A17B": ("qwen3_5_moe", 60, 4096, 1024, 512, 10, 1, 1024, True),
    "nvidia--Qwen3.5-397B-A17B-NVFP4": ("qwen3_5_moe", 60, 4096, 1024, 512, 10, 1, 1024, True),
    "mistralai--Mixtral-8x7B-v0.1": ("mixtral", 32, 4096, 14336, 8, 2, 0, 0, False),
    "openai--gpt-oss-20b": ("gpt_oss", 24, 2880, 2880, 32, 4, 0, 0, False),
    "openai--gpt-oss-120b": ("gpt_oss", 36, 2880, 2880, 128, 4, 0, 0, False),
    "meta-llama--Llama-4-Scout-17B-16E-Instruct": ("llama4", 48, 5120, 8192, 16, 1, 1, 8192, False),
    "meta-llama--Llama-4-Maverick-17B-128E-Instruct": ("llama4", 24, 5120, 8192, 128, 1, 1, 8192, False),
    "MiniMaxAI--MiniMax-M2.5": ("minimax_m2", 62, 3072, 1536, 256, 8, 0, 0, False),
    "moonshotai--Kimi-K2-Instruct": ("deepseek_v3", 60, 7168, 2048, 384, 8, 1, 2048, False),
    "moonshotai--Kimi-K2.5": ("deepseek_v3", 60, 7168, 2048, 384, 8, 1, 2048, False),
    "google--gemma-4-26B-A4B": ("gemma4", 30, 2816, 704, 128, 8, 0, 0, False),
    "moonshotai--Kimi-K3": ("kimi_k3", 92, 3584, 3072, 896, 16, 2, 6144, False),
    "nvidia--NVIDIA-Nemotron-3-Nano-30B-A3B-BF16": ("nemotron_h", 23, 2688, 1856, 128, 6, 1, 3712, False),
    "MiniMaxAI--MiniMax-M3": ("minimax_m3", 57, 6144, 3072, 128, 4, 1, 3072, False),
    "XiaomiMiMo--MiMo-V2-Flash": ("mimo_v2", 47, 4096, 2048, 256, 8, 0, 0, False),
    "poolside--Laguna-XS.2-FP8": ("laguna", 39, 2048, 512, 256, 8, 1, 512, False),
}
# fixture -> (weights, activation, scoring, correction bias, renormalize, weight on input, expert bias)
SEMANTICS = {
    "Qwen--Qwen3-30B-A3B": ("bf16", "swiglu", "softmax", False, True, False, False),
    "Qwen--Qwen3-30B-A3B-FP8": ("fp8_block 128x128 fp32", "swiglu", "softmax", False, True, False, False),
    "Qwen--Qwen3-235B-A22B-FP8": ("fp8_block 128x128 fp32", "swiglu", "softmax", False, True, False, False),
    "nvidia--Qwen3-235B-A22B-NVFP4": ("nvfp4 g16 e4m3", "swiglu", "softmax", False, True, False, False),
    "Qwen--Qwen3-VL-30B-A3B-Instruct": ("bf16", "swiglu", "softmax", False, True, False, False),
    "Qwen--Qwen3-Next-80B-A3B-Thinking": ("bf16", "swiglu", "softmax", False, True, False, False),
    "Qwen--Qwen3.5-397B-A17B": ("bf16", "swiglu", "softmax", False, True, False, False),
    "nvidia--Qwen3.5-397B-A17B-NVFP4": ("nvfp4 g16 e4m3", "swiglu", "softmax", False, True, False, False),
    "mistralai--Mixtral-8x7B-v0.1": ("bf16", "swiglu", "softmax", False, True, False, False),
    "openai--gpt-oss-20b": ("mxfp4 g32 ue8m0", "swigluoai clamp 7 interleaved", "softmax", False, True, False, True),
    "openai--gpt-oss-120b": ("mxfp4 g32 ue8m0", "swigluoai clamp 7 interleaved", "softmax", False, True, False, True),
    "meta-llama--Llama-4-Scout-17B-16E-Instruct": ("bf16", "swiglu", "sigmoid", False, False, True, False),
    "meta-llama--Llama-4-Maverick-17B-128E-Instruct": ("bf16", "swiglu", "sigmoid", False, False, True, False),
    "MiniMaxAI--MiniMax-M2.5": ("fp8_block 128x128 fp32", "swiglu", "sigmoid", True, True, False, False),
    "moonshotai--Kimi-K2-Instruct": ("fp8_block 128x128 fp32", "swiglu", "sigmoid", True, True, False, False),
    "moonshotai--Kimi-K2.5": ("int4 g32 bf16", "swiglu", "sigmoid", True, True, False, False),
    "google--gemma-4-26B-A4B": ("bf16", "gelu", "softmax", False, True, False, False),
    "moonshotai--Kimi-K3": ("mxfp4 g32 ue8m0", "situ a4 b25", "sigmoid", True, True, False, False),
    "nvidia--NVIDIA-Nemotron-3-Nano-30B-A3B-BF16": ("bf16", "relu2", "sigmoid", True, True, False, False),
    "MiniMaxAI--MiniMax-M3": ("bf16", "swigluoai clamp 7", "sigmoid", True, True, False, False),
    "XiaomiMiMo--MiMo-V2-Flash": ("fp8_block 128x128 fp32", "swiglu", "sigmoid", True, True, False, False),
    "poolside--Laguna-XS.2-FP8": ("fp8_block 128x128 fp32", "swiglu", "sigmoid", True, True, False, False),
}
EXPECTED = {name: SHAPE[name] + SEMANTICS[name] for name in SHAPE}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_family_fixture_field_by_field(name):
    desc = describe_model(str(FIXTURES / name))
    g = desc.main_group
    r = g.routing
    got = (
        desc.family,
        len(g.layers),
        g.hidden_size,
        g.moe_intermediate_size,
        g.num_experts,
        g.top_k,
        g.num_shared_experts,
        g.shared_intermediate_size,
        g.shared_expert_gate,
        g.weight_quant.label(),
        g.activation.label(),
        r.scoring.value,
        r.correction_bias,
        r.renormalize,
        r.weight_on_input,
        g.expert_bias,
    )
    assert got == EXPECTED[name]


def test_llama4_maverick_moe_every_second_layer_and_scout_every_layer():
    maverick = describe_model(str(FIXTURES / "meta-llama--Llama-4-Maverick-17B-128E-Instruct")).main_group
    assert maverick.layers == tuple(range(1, 48, 2))
    scout = describe_model(str(FIXTURES / "meta-llama--Llama-4-Scout-17B-16E-Instruct")).main_group
    assert scout.layers == tuple(range(48))


def test_gpt_oss_implied_semantics_are_reported_with_their_source():
    desc = describe_model(str(FIXTURES / "openai--gpt-oss-20b"))
    act = desc.main_group.activation
    assert (act.kind, act.alpha, act.beta, act.clamp, act.interleaved) == (ActivationKind.SWIGLU, 1.702, 1.0, 7.0, True)
    assert any("biases" in line for line in desc.assumptions)
    assert any("gpt_oss.py" in line for line in desc.assumptions)


def test_qwen_shared_expert_gate_is_an_assumption_and_nvfp4_shared_expert_stays_bf16():
    desc = describe_model(str(FIXTURES / "nvidia--Qwen3.5-397B-A17B-NVFP4"))
    g = desc.main_group
    assert g.shared_expert_quant is not None and g.shared_expert_quant.format is WeightFormat.BF16
    assert "shared_expert" in g.shared_expert_quant.source
    assert any("shared_expert_gate" in line for line in desc.assumptions)


def test_qwen_schedule_mlp_only_layers_and_sparse_step():
    config, _ = fixture("Qwen--Qwen3-30B-A3B")
    config["mlp_only_layers"] = [0, 47]
    assert describe_config(config).main_group.layers == tuple(range(1, 47))
    config["mlp_only_layers"] = None  # null = absent
    config["decoder_sparse_step"] = 2
    assert describe_config(config).main_group.layers == tuple(range(1, 48, 2))


def test_qwen2_moe_zero_shared_width_means_no_shared_expert():
    config, _ = fixture("Qwen--Qwen3-Next-80B-A3B-Thinking")
    config["shared_expert_intermediate_size"] = 0
    g = describe_config(config).main_group
    assert (g.num_shared_experts, g.shared_expert_gate) == (0, False)


def test_minimax_routing_bias_key_and_scoring():
    config, _ = fixture("MiniMaxAI--MiniMax-M2.5")
    config["use_routing_bias"] = False
    r = describe_config(config).main_group.routing
    assert (r.scoring, r.correction_bias) == (Scoring.SIGMOID, False)
    config["use_routing_bias"] = "yes"
    with pytest.raises(ModelConfigError) as info:
        describe_config(config, model_id="mm")
    assert_one_line(info.value, 'use_routing_bias="yes"', "true or false")


def test_wrappers_llm_config_and_language_config_are_read():
    config, _ = fixture("Qwen--Qwen3-30B-A3B")
    for key in ("llm_config", "language_config"):
        wrapped = {
            "architectures": ["SomeVLForConditionalGeneration"],
            "model_type": "some_vl",
            key: copy.deepcopy(config),
        }
        g = describe_config(wrapped).main_group
        assert (g.hidden_size, g.num_experts, g.top_k) == (2048, 128, 8)


def test_gemma_gelu_and_foreign_activation_refused_for_silu_families():
    config, _ = fixture("Qwen--Qwen3-30B-A3B")
    config["hidden_act"] = "gelu"
    with pytest.raises(ModelConfigError) as info:
        describe_config(config, model_id="q")
    assert_one_line(info.value, 'hidden_act="gelu"', "qwen3_moe", "--activation")


@pytest.mark.parametrize(
    ("config", "needles"),
    [
        ({"architectures": ["DbrxForCausalLM"], "model_type": "dbrx"}, ["DBRX", "ffn_config", "RoutedExperts", "4096"]),
        (
            {"architectures": ["HunYuanMoEV1ForCausalLM"], "model_type": "hunyuan_v1_moe"},
            ["Hunyuan", "moe_topk", "fused MoE"],
        ),
    ],
)
def test_unread_families_are_refused_by_name_with_their_blocker(config, needles):
    with pytest.raises(UnsupportedArchitectureError) as info:
        describe_config(config, model_id="m")
    assert_one_line(info.value, *needles)


def test_ernie_step_bailing_rules_on_reference_values():
    """ERNIE-4.5-21B-A3B, Step3 and Bailing have no verbatim config here: their rules run on the reference values."""
    ernie = {
        "architectures": ["Ernie4_5_MoeForCausalLM"],
        "model_type": "ernie4_5_moe",
        "hidden_size": 2560,
        "moe_intermediate_size": 1536,
        "moe_num_experts": 64,
        "moe_k": 6,
        "moe_num_shared_experts": 2,
        "moe_layer_start_index": 1,
        "num_hidden_layers": 28,
        "hidden_act": "silu",
    }
    g = describe_config(ernie).main_group
    assert g.layers == tuple(range(1, 28))
    assert (g.num_shared_experts, g.shared_intermediate_size) == (2, 3072)
    assert (g.routing.scoring, g.routing.correction_bias, g.routing.renormalize) == (Scoring.SOFTMAX, True, True)
    step3 = {
        "architectures": ["Step3VLForConditionalGeneration"],
        "model_type": "step3_vl",
        "text_config": {
            "hidden_size": 7168,
            "moe_intermediate_size": 5120,
            "moe_num_experts": 48,
            "moe_top_k": 3,
            "share_expert_dim": 5120,
            "moe_layers_enum": "4,5,6",
            "num_hidden_layers": 8,
        },
    }
    g = describe_config(step3).main_group
    assert g.layers == (4, 5, 6) and g.routing.renormalize is False and g.shared_intermediate_size == 5120
    bailing = {
        "architectures": ["BailingMoeV2ForCausalLM"],
        "model_type": "bailing_moe",
        "hidden_size": 4096,
        "moe_intermediate_size": 1536,
        "num_experts": 256,
        "num_experts_per_tok": 8,
        "num_shared_experts": 1,
        "first_k_dense_replace": 4,
        "score_function": "sigmoid",
        "moe_router_enable_expert_bias": True,
        "n_group": 8,
        "topk_group": 4,
        "routed_scaling_factor": 2.5,
        "num_hidden_layers": 32,
    }
    g = describe_config(bailing).main_group
    assert g.layers == tuple(range(4, 32))
    r = g.routing
    assert (r.scoring, r.correction_bias, r.num_groups, r.topk_groups, r.routed_scaling_factor) == (
        Scoring.SIGMOID,
        True,
        8,
        4,
        2.5,
    )


def test_qwen2_moe_rule_on_qwen15_moe_values():
    """Qwen1.5-MoE-A2.7B's values (no verbatim copy found): gated shared expert 5632 wide, no renormalization."""
    config = dict(QWEN15_MOE_A2_7B)
    desc = describe_config(config)
    g = desc.main_group
    assert desc.family == "qwen2_moe" and g.layers == tuple(range(24))
    assert (g.moe_intermediate_size, g.num_experts, g.top_k) == (1408, 60, 4)
    assert (g.num_shared_experts, g.shared_intermediate_size, g.shared_expert_gate) == (1, 5632, True)
    assert (g.routing.scoring, g.routing.correction_bias, g.routing.renormalize) == (Scoring.SOFTMAX, False, False)


def test_nemotron_h_pattern_schedule_and_ungated_expert_bytes():
    config, _ = fixture("nvidia--NVIDIA-Nemotron-3-Nano-30B-A3B-BF16")
    g = describe_config(config).main_group
    assert g.layers == tuple(i for i, ch in enumerate(config["hybrid_override_pattern"]) if ch == "E")
    assert g.expert_weight_bytes() == 2 * (2 * g.hidden_size * g.moe_intermediate_size)  # bf16 up + down only
    config["hybrid_override_pattern"] = "ME"
    with pytest.raises(ModelConfigError) as info:
        describe_config(config, model_id="n")
    assert_one_line(info.value, 'hybrid_override_pattern="ME"', "52 characters")
