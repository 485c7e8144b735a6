"""The memory fit and the layout step, on the real configs (bundled presets and tests/fixtures/models)."""

from __future__ import annotations

from pathlib import Path

import pytest

from moe_oracle.decide.fit import built_groups, measure_fit
from moe_oracle.decide.layout import fit_with_fix, propose_layout, smallest_fitting
from moe_oracle.decide.memory_share import EngineMemorySettings
from moe_oracle.inputs import DeploymentFlags, build_deployment
from moe_oracle.model.resolve import resolve_model
from moe_oracle.rules import Engine, ReasonCode

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "models"

#: Total parameters each checkpoint's model card states (the main model, MTP layers not counted), as the
#: project's model notes record them: DeepSeek-V4-Flash 284B, -Pro 1.6T, GLM-5 / 5.1 / 5.2 744B.
CARD_PARAMS = {
    "deepseek-ai/DeepSeek-V4-Flash": 284e9,
    "nvidia/DeepSeek-V4-Flash-NVFP4": 284e9,
    str(FIXTURES / "RedHatAI--DeepSeek-V4-Flash-NVFP4-FP8"): 284e9,
    "deepseek-ai/DeepSeek-V4-Pro": 1.6e12,
    "zai-org/GLM-5": 744e9,
    "zai-org/GLM-5-FP8": 744e9,
    "nvidia/GLM-5.1-NVFP4": 744e9,
    str(FIXTURES / "nvidia--GLM-5-NVFP4"): 744e9,
    str(FIXTURES / "zai-org--GLM-5.2"): 744e9,
}
#: The cards round (1.6T for 1.57T): the config-derived count is held within 2 %.
PARAMS_TOLERANCE = 0.02


def _params(model: str) -> float:
    desc = resolve_model(model)
    assert desc.footprint is not None
    main = built_groups(desc, mtp_built=False)
    experts = sum(len(g.layers) * g.num_experts * 3 * g.hidden_size * g.moe_intermediate_size for g in main)
    return experts + desc.footprint.params(mtp=False)


@pytest.mark.parametrize("model", sorted(CARD_PARAMS))
def test_config_derived_parameters_match_the_card(model):
    got, card = _params(model), CARD_PARAMS[model]
    assert abs(got - card) / card <= PARAMS_TOLERANCE, f"{model}: {got / 1e9:.1f}B vs card {card / 1e9:.0f}B"


def _dep(device: str, **kw):
    return build_deployment(DeploymentFlags(device=device, **kw))[0]


def test_deepseek_v4_pro_on_8_h100_does_not_fit_and_names_the_layout_that_does():
    fit = fit_with_fix(resolve_model("deepseek-ai/DeepSeek-V4-Pro"), _dep("h100", dp=8, ep=8), Engine.VLLM)
    assert not fit.fits and fit.verdict == "DOES NOT FIT"
    (reason,) = fit.reasons
    assert reason.code is ReasonCode.DEPLOYMENT_MEMORY_EXCEEDED
    experts = next(i for i in fit.items if i.label == "routed experts").bytes / (1 << 30)
    assert 90 < experts < 100  # the "about 97 GiB per rank" (MTP not built here)
    assert "--dp 32 --ep 32 --nodes 4" in reason.remediation


def test_glm5_bf16_on_8_h200_offers_the_smaller_checkpoint():
    fit = fit_with_fix(resolve_model("zai-org/GLM-5"), _dep("h200", dp=8, ep=8), Engine.VLLM)
    assert not fit.fits
    assert "nvidia/GLM-5.1-NVFP4" in fit.reasons[0].remediation


def test_deepseek_v4_flash_on_8_h200_fits_its_whole_context():
    fit = measure_fit(resolve_model("deepseek-ai/DeepSeek-V4-Flash"), _dep("h200", dp=8, ep=8), Engine.VLLM)
    assert fit.fits and not fit.reasons
    assert fit.max_context == fit.model_context == 1_048_576
    assert fit.kv_bytes > 80 * (1 << 30)


def test_kv_cache_too_small_names_the_max_model_len():
    fit = measure_fit(resolve_model("zai-org/GLM-5-FP8"), _dep("h200", dp=8, ep=8), Engine.VLLM, buffer_bytes=8 << 30)
    (reason,) = fit.reasons
    assert reason.code is ReasonCode.KV_CACHE_TOO_SMALL and fit.fits
    assert f"--max-model-len {fit.max_context}" in reason.remediation


def test_mtp_layers_count_only_when_built():
    model, dep = resolve_model("deepseek-ai/DeepSeek-V4-Flash"), _dep("h200", dp=8, ep=8)
    off, on = (measure_fit(model, dep, Engine.VLLM, mtp_built=b) for b in (False, True))
    assert on.needed_bytes > off.needed_bytes


def test_sglang_share_excludes_the_runtime_reserve():
    fit = measure_fit(resolve_model("deepseek-ai/DeepSeek-V4-Flash"), _dep("h200", dp=8, ep=8), Engine.SGLANG)
    assert all(i.label != "runtime reserve" for i in fit.items)
    assert any("--mem-fraction-static" in n for n in fit.notes)


def test_a_bare_device_gets_dp_ep_over_its_gpus_with_a_reason():
    proposal = propose_layout(
        resolve_model("deepseek-ai/DeepSeek-V4-Flash"), DeploymentFlags(device="h200"), Engine.VLLM
    )
    assert (proposal.flags.dp, proposal.flags.ep, proposal.flags.tp) == (8, 8, 1)
    assert "layout chosen by moe-oracle" in proposal.why and "KV cache" in proposal.why


def test_gpus_per_node_without_nodes_is_one_node():
    proposal = propose_layout(
        resolve_model("deepseek-ai/DeepSeek-V4-Flash"), DeploymentFlags(device="b200", gpus_per_node=4), Engine.VLLM
    )
    assert (proposal.flags.nodes, proposal.flags.dp) == (1, 4)


def test_smallest_fitting_layout_is_none_when_nothing_fits():
    found = smallest_fitting(
        resolve_model("deepseek-ai/DeepSeek-V4-Pro"),
        _dep("h100", dp=8, ep=8),
        Engine.VLLM,
        settings=EngineMemorySettings(fraction=0.05),
    )
    assert found is None


def _non_expert(fit) -> int:
    return sum(i.bytes for i in fit.items if i.label not in ("routed experts", "runtime reserve"))


def test_the_mtp_layers_follow_the_speculative_decoding_plan():
    """The footprint's MTP parts and the MTP experts count exactly when the launch builds the MTP layers
    (releases.speculative.builds_mtp: --speculative mtp on an engine, or --engine none), and the text says so."""
    model = resolve_model("zai-org/GLM-5-FP8")
    plain, spec = _dep("h200", dp=8, ep=8), _dep("h200", dp=8, ep=8, speculative="mtp")
    off, on = measure_fit(model, plain, Engine.VLLM), measure_fit(model, spec, Engine.VLLM)
    assert (off.mtp_built, on.mtp_built) == (False, True)
    delta = model.footprint.bytes(mtp_built=True) - model.footprint.bytes(mtp_built=False)
    assert abs(_non_expert(on) - _non_expert(off) - delta) < 16  # tp 1: every kind whole on each rank
    assert any("MTP layers not built" in n for n in off.notes)
    assert any("MTP layers built" in n for n in on.notes)
    assert "MTP layers built" in "\n".join(on.lines())
    assert measure_fit(model, plain, Engine.NONE).mtp_built  # --engine none judges every group


def test_the_fit_names_what_the_footprint_leaves_out():
    fit = measure_fit(resolve_model(str(FIXTURES / "moonshotai--Kimi-K2.5")), _dep("h200", dp=8, ep=8), Engine.VLLM)
    assert any("vision tower" in n and "not counted" in n for n in fit.notes)


def test_a_family_without_footprint_entry_is_not_said_to_fit():
    """Only the routed experts are weighed for a family with no footprint entry: the verdict says so, the plan's
    Memory line gives no KV figure, and the JSON marks it (``weighed_all`` False)."""
    import json

    from tests.cli.runner import cli

    m3 = "tests/fixtures/models/MiniMaxAI--MiniMax-M3/config.json"
    args = ("plan", m3, "--device", "b200", "--dp", "8", "--ep", "8", "--engine", "vllm")
    text = cli(*args)
    assert text.code == 0, text.err
    assert "Memory: ROUTED EXPERTS FIT (the other weights and the KV cache are not weighed)" in text.out
    assert "GiB KV cache" not in text.out.split("Memory:")[1].split("\n")[0]
    fit = json.loads(cli(*args, "--json").out)["fit"]
    assert fit["weighed_all"] is False and fit["verdict"].startswith("ROUTED EXPERTS FIT")
