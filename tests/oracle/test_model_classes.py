"""Per model class: a decision never names a mega path the engine's MoE block for that class does not call."""

from __future__ import annotations

import pytest

from moe_oracle.releases import RELEASES
from moe_oracle.releases import sglang as sglang_release
from moe_oracle.releases import vllm as vllm_release
from tests.oracle.helpers import GLM5_FP8, V4_FLASH, chosen, codes, manual, run

GLM45_AIR = "tests/fixtures/models/reconstructed--GLM-4.5-Air"
GLM47_FLASH = "tests/fixtures/models/trimmed--GLM-4.7-Flash"
SM90_FP8 = "deep_gemm_mega_moe:sm90_fp8xfp8"
SM100_FP4 = "deep_gemm_mega_moe:sm100_fp8xfp4"
A8W4 = "aiter_mega_moe:gfx950_a8w4"
PLUGIN = "sglang-0.5.23+moe-oracle"


def _model_class_reasons(d) -> list:
    return [
        r for c in d.main.candidates if c.spec.key == SM90_FP8 for r in c.failures if r.code.value.startswith("MODEL")
    ]


def _fp8(architecture: str):
    return manual(fmt="fp8_block", hidden=4096, inter=1536, experts=128, top_k=8, architecture=architecture)


@pytest.mark.parametrize("architecture", ["Glm4MoeForCausalLM", "Glm4MoeLiteForCausalLM", "MixtralForCausalLM"])
def test_sglang_megamoe_is_not_named_for_a_block_without_a_mega_forward(architecture: str) -> None:
    d = run(_fp8(architecture), "h200", dp=8, ep=8, engine="sglang", software="sglang-0.5.23")
    assert "MODEL_CLASS_UNSUPPORTED" in codes(d, SM90_FP8)
    assert chosen(d) is None
    (r,) = _model_class_reasons(d)
    assert "never calls layers/moe/mega_moe.py" in r.message and "re-laid-out" in r.message
    assert "--moe-a2a-backend unset" in r.remediation


@pytest.mark.parametrize(
    "architecture", ["DeepseekV3ForCausalLM", "GlmMoeDsaForCausalLM", "Qwen3MoeForCausalLM", "Qwen3NextForCausalLM"]
)
def test_sglang_mega_blocks_keep_the_mega_path(architecture: str) -> None:
    d = run(_fp8(architecture), "h200", dp=8, ep=8, engine="sglang")
    assert "MODEL_CLASS_UNSUPPORTED" not in codes(d, SM90_FP8)


def test_sglang_rocm_diversion_only_from_deepseek_v2_moe() -> None:
    qwen = manual(fmt="mxfp4", hidden=4096, inter=1536, experts=128, top_k=8, architecture="Qwen3MoeForCausalLM")
    assert "MODEL_CLASS_UNSUPPORTED" in codes(run(qwen, "mi355x", dp=8, ep=8, engine="sglang"), A8W4)
    assert "MODEL_CLASS_UNSUPPORTED" not in codes(run(V4_FLASH, "mi355x", dp=8, ep=8, engine="sglang"), A8W4)


def test_unknown_architecture_gets_no_mega_claim() -> None:
    d = run(_fp8("SomethingNewForCausalLM"), "h200", dp=8, ep=8, engine="sglang")
    (r,) = _model_class_reasons(d)
    assert "not in moe-oracle's table of sglang model classes" in r.message


def test_real_glm4_configs_on_sglang() -> None:
    for model in (GLM45_AIR, GLM47_FLASH):
        for device in ("h200", "b200"):
            d = run(model, device, dp=8, ep=8, engine="sglang", software="sglang-0.5.23")
            assert all(g.chosen is None for g in d.groups), (model, device)
    assert chosen(run(GLM5_FP8, "h200", dp=8, ep=8, engine="sglang")) == SM90_FP8


@pytest.mark.parametrize("architecture", ["Glm4MoeForCausalLM", "Glm4MoeLiteForCausalLM", "MixtralForCausalLM"])
def test_sglang_plugin_serves_a_fused_moe_block_without_a_mega_forward(architecture: str) -> None:
    """Where SGLang's own megamoe never runs, moe-oracle's plug-in (the default sglang profile) serves the block."""
    from moe_oracle.engines.routes import group_routes

    d = run(_fp8(architecture), "h200", dp=8, ep=8, engine="sglang", software=PLUGIN)
    assert chosen(d) == SM90_FP8
    assert {r.route for r in group_routes(d)} == {"moe-oracle"}
    assert sglang_release.model_classes.sglang_plugin_serves(architecture)


def test_sglang_plugin_refuses_a_block_it_does_not_replace() -> None:
    d = run(_fp8("GptOssForCausalLM"), "h200", dp=8, ep=8, engine="sglang", software=PLUGIN)
    assert chosen(d) is None
    assert (
        "does not build its experts as the FusedMoE the plug-in replaces"
        in sglang_release.model_classes.sglang_plugin_why_not("GptOssForCausalLM")
    )


def _native_codes(model) -> list[str]:
    """Reason codes of vLLM's own deep_gemm_mega_moe route (not the plug-in's) for SM100 FP8xFP4."""
    d = run(model, "b200", dp=8, ep=8, engine="vllm")
    spec = next(c.spec for c in d.main.candidates if c.spec.key == SM100_FP4)
    gate = vllm_release.gates.PROFILE.gate("deep_gemm_mega_moe")
    assert gate is not None
    return [r.code.value for r in gate.evaluate(spec, d.question.scenario(d.main.group))]


def test_vllm_native_mega_only_for_dsv4_classes() -> None:
    assert "MODEL_CLASS_UNSUPPORTED" in _native_codes(manual(architecture="DeepseekV3ForCausalLM"))
    assert "MODEL_CLASS_UNSUPPORTED" not in _native_codes(V4_FLASH)


@pytest.mark.parametrize("architecture", ["GptOssForCausalLM", "DbrxForCausalLM", "Llama4ForCausalLM"])
def test_vllm_plugin_route_refused_where_the_plugin_cannot_serve(architecture: str) -> None:
    d = run(_fp8(architecture), "h200", dp=8, ep=8, engine="vllm")
    assert chosen(d) is None
    spec = next(c.spec for c in d.main.candidates if c.spec.key == SM90_FP8)
    plugin = next(s for s in vllm_release.gates.PROFILE.routes(spec) if s.route == "moe-oracle")
    reasons = plugin.evaluate(spec, d.question.scenario(d.main.group))
    assert [r.code.value for r in reasons] == ["MODEL_CLASS_UNSUPPORTED"]
    assert vllm_release.model_classes.TABLE.find(architecture).blocker in reasons[0].message


def test_vllm_plugin_hook_and_decision_share_one_table() -> None:
    assert set(vllm_release.flags.HOOKED_ARCHITECTURES) == set(vllm_release.model_classes.plugin_architectures())
    assert {"DeepseekV3ForCausalLM", "DeepseekV32ForCausalLM", "Qwen3MoeForCausalLM"} <= set(
        vllm_release.flags.HOOKED_ARCHITECTURES
    )
    assert not {"GptOssForCausalLM", "DbrxForCausalLM"} & set(vllm_release.flags.HOOKED_ARCHITECTURES)
    for arch in vllm_release.model_classes.plugin_architectures():
        assert vllm_release.model_classes.plugin_serves(arch) and not vllm_release.model_classes.plugin_why_not(arch)


def test_every_family_of_the_reference_has_a_row_in_both_tables() -> None:
    families = (
        "DeepseekV3ForCausalLM",
        "DeepseekV32ForCausalLM",
        "DeepseekV4ForCausalLM",
        "GlmMoeDsaForCausalLM",
        "Glm4MoeForCausalLM",
        "Glm4MoeLiteForCausalLM",
        "KimiK25ForConditionalGeneration",
        "Qwen2MoeForCausalLM",
        "Qwen3MoeForCausalLM",
        "Qwen3NextForCausalLM",
        "Qwen3_5MoeForConditionalGeneration",
        "Qwen3VLMoeForConditionalGeneration",
        "MixtralForCausalLM",
        "Llama4ForCausalLM",
        "GptOssForCausalLM",
        "MiniMaxM2ForCausalLM",
        "Ernie4_5_MoeForCausalLM",
        "BailingMoeForCausalLM",
        "Step3p5ForCausalLM",
    )
    for arch in families:
        assert sglang_release.model_classes.TABLE.find(arch) is not None, arch
        assert vllm_release.model_classes.TABLE.find(arch) is not None, arch
    for table in (r.model_classes.rows for r in RELEASES.values()):
        archs = [a for row in table for a in row.architectures]
        assert len(archs) == len(set(archs))


def test_sglang_plugin_route_needs_the_plugin_installed() -> None:
    d = run(_fp8("Glm4MoeForCausalLM"), "h200", dp=8, ep=8, engine="sglang", software="sglang-0.5.23")
    assert chosen(d) is None
    (c,) = [c for c in d.main.candidates if c.spec.key == SM90_FP8]
    assert c.failures  # SGLang's own megamoe route: its block never calls it; the plug-in route: not installed


def test_dsv4_pro_on_8xh200_runs_sm90_fp8xfp4_through_the_sglang_plugin() -> None:
    """The issue's case: SGLang alone dequantizes MXFP4 to FP8 (double the expert bytes); the plug-in keeps MXFP4,
    with the PR #323 build in place of sgl-deep-gemm (the profile the default takes for it, issue 29 D3)."""
    from moe_oracle.engines.routes import group_routes

    d = run("deepseek-ai/DeepSeek-V4-Pro", "h200", dp=8, ep=8, engine="sglang", software=PLUGIN + "+pr323")
    assert chosen(d) == "deep_gemm_mega_moe:sm90_fp8xfp4"
    assert {r.route for r in group_routes(d) if r.key} == {"moe-oracle"}
