"""Load-time conversion as an oracle option: numerics, memory, cost, engine and flags."""

from __future__ import annotations

import json

import pytest
import torch

from moe_oracle.decide.conversions import expert_bytes_per_rank
from moe_oracle.decide.question import ConversionOptions
from moe_oracle.decide.record import decision_to_json, replay_inputs
from moe_oracle.decide.selection import decide
from moe_oracle.errors import OverrideRefusedError
from moe_oracle.inputs import DeploymentFlags, build_deployment, resolve_software
from moe_oracle.model.resolve import resolve_model
from tests.oracle.helpers import GLM5, V4_FLASH, chosen, manual, run

SM90_FP8 = "deep_gemm_mega_moe:sm90_fp8xfp8"


def _decide(model: str, device: str, conversion: ConversionOptions | None = None, **flags):
    dep, _ = build_deployment(DeploymentFlags(device=device, **flags))
    sw, _ = resolve_software(None, device)
    return decide(resolve_model(model), dep, sw, conversion=conversion)


def test_mxfp4_on_8_h200_converts_to_fp8_when_it_wins():
    d = _decide(V4_FLASH, "h200", dp=8, ep=8)
    g = d.main
    assert g.chosen is not None and g.chosen.key == SM90_FP8 + "+convert(mxfp4->fp8_block)"
    assert g.chosen.conversion.lossless
    assert "lossless" in g.notes[0] and "faster than deep_gemm_mega_moe:sm90_fp8xfp4 as stored" in g.notes[0]
    doc = decision_to_json(d)
    assert doc["chosen"]["conversion"]["from"] == "mxfp4" and doc["chosen"]["variant"] == "sm90_fp8xfp8"
    assert doc["layer_groups"][0]["conversion_candidates"][0]["eligible"] is True


def test_no_convert_serves_the_checkpoint_as_stored():
    d = _decide(V4_FLASH, "h200", ConversionOptions(enabled=False), dp=8, ep=8)
    assert chosen(d) == "deep_gemm_mega_moe:sm90_fp8xfp4" and not d.main.conversions


def test_converted_experts_must_fit_per_rank():
    d = _decide(V4_FLASH, "h200", gpus_per_node=1)
    assert chosen(d) == "deep_gemm_mega_moe:sm90_fp8xfp4"
    (conv,) = d.main.conversions
    (r,) = [r for r in conv.failures if r.code.value == "MEMORY_EXCEEDED"]
    assert "per rank at ep=1" in r.message and "Raise the EP size" in r.remediation
    model = resolve_model(V4_FLASH)
    assert expert_bytes_per_rank(model.layer_groups, 1, conv.conversion) > 1.8 * expert_bytes_per_rank(
        model.layer_groups, 1
    )


def test_lossy_conversion_needs_opt_in():
    model = manual(fmt="bf16")  # a BF16 MoE small enough to fit 8 H200s
    dep, _ = build_deployment(DeploymentFlags(device="h200", dp=8, ep=8))
    sw, _ = resolve_software(None, "h200")
    g = decide(model, dep, sw).main
    assert g.chosen is None
    (conv,) = g.conversions
    assert [r.code.value for r in conv.failures] == ["CONVERSION_LOSSY"]
    g = decide(model, dep, sw, conversion=ConversionOptions(allow_lossy=True)).main
    assert g.chosen is not None and g.chosen.key == SM90_FP8 + "+convert(bf16->fp8_block)"
    assert "LOSSY" in g.notes[0]


def test_glm5_bf16_does_not_fit_8_h200_even_in_fp8():
    (conv,) = _decide(GLM5, "h200", ConversionOptions(allow_lossy=True), dp=8, ep=8).main.conversions
    assert [r.code.value for r in conv.failures] == ["MEMORY_EXCEEDED"]


def test_vllm_does_not_convert_at_load():
    g = run(V4_FLASH, "h200", dp=8, ep=8, engine="vllm", software="vllm-0.33.0").main
    assert all("ENGINE_UNSUPPORTED" in [r.code.value for r in c.failures] for c in g.conversions)


def test_sglang_converts_mxfp4_itself_with_the_same_checks():
    # SGLANG_DSV4_FP4_DEQUANT: MXFP4 -> FP8 block-128 inside SGLang, then the SM90 FP8 megamoe kernel
    g = run(V4_FLASH, "h200", dp=8, ep=8, engine="sglang", software="sglang-0.5.23").main
    assert g.chosen is not None and g.chosen.key == SM90_FP8 + "+convert(mxfp4->fp8_block)"
    # the same memory rule as moe-oracle's own conversion: DSv4-Pro in FP8 does not fit 8 x H200
    g = run("deepseek-ai/DeepSeek-V4-Pro", "h200", dp=8, ep=8, engine="sglang", software="sglang-0.5.23").main
    codes = [r.code.value for c in g.conversions for r in c.failures]
    assert "MEMORY_EXCEEDED" in codes


def test_sglang_conversion_is_its_own_and_said_unverified():
    g = run(V4_FLASH, "h200", dp=8, ep=8, engine="sglang", software="sglang-0.5.23").main
    conv = g.chosen.conversion
    assert conv.runtime == "engine: SGLANG_DSV4_FP4_DEQUANT=1" and "does not check" in conv.condition
    assert [r.code.value for r in g.chosen.unverified] == ["CONVERSION_LOSSY"]
    # an MXFP4 checkpoint SGLang does not mark as FP4 experts: no engine conversion
    other = manual(architecture="SomeMoeForCausalLM")
    g = run(other, "h200", dp=8, ep=8, engine="sglang", software="sglang-0.5.23").main
    assert g.chosen is None or g.chosen.conversion is None
    assert all("ENGINE_UNSUPPORTED" in [r.code.value for r in c.failures] for c in g.conversions)


def test_override_takes_the_conversion_unless_forbidden():
    d = run(V4_FLASH, "h200", dp=8, ep=8, override=SM90_FP8)
    assert d.main.chosen.conversion is not None
    dep, _ = build_deployment(DeploymentFlags(device="h200", dp=8, ep=8))
    sw, _ = resolve_software(None, "h200")
    from moe_oracle.decide.selection import Override

    with pytest.raises(OverrideRefusedError):
        decide(resolve_model(V4_FLASH), dep, sw, override=Override.parse(SM90_FP8), conversion=ConversionOptions(False))


def test_replay_keeps_the_conversion_options(tmp_path):
    d = _decide(V4_FLASH, "h200", ConversionOptions(enabled=False), dp=8, ep=8)
    doc = decision_to_json(d)
    again = decide(**replay_inputs(json.loads(json.dumps(doc))))
    assert decision_to_json(again)["fingerprint"] == doc["fingerprint"]
    assert again.conversion == ConversionOptions(enabled=False)


def test_the_chosen_conversion_runs_through_the_interface():
    """A scaled-down V4-Flash layer: the decision's layer converts MXFP4 -> FP8 at load (emulation twin)."""
    from moe_oracle.runtime import calc_diff, reference_moe, route
    from moe_oracle.runtime.accuracy import random_masters, scaled_group
    from moe_oracle.runtime.build import build_layer_for_decision
    from moe_oracle.runtime.converting_layer import ConvertingLayer
    from moe_oracle.runtime.quantize import MXFP4, quantize_experts

    model = resolve_model(V4_FLASH)
    small = scaled_group(model.main_group, 0.125)
    model = model.model_copy(update={"layer_groups": (small,)})
    dep, _ = build_deployment(DeploymentFlags(device="h200", dp=8, ep=8))
    sw, _ = resolve_software(None, "h200")
    from moe_oracle.decide.selection import Override

    # the override takes the conversion (test_override_takes_the_conversion_unless_forbidden) whatever the costs
    # rank for this scaled shape
    d = decide(model, dep, sw, override=Override.parse(SM90_FP8))
    assert d.main.chosen.conversion is not None
    w13, w2 = random_masters(small, torch.Generator().manual_seed(0))
    experts = quantize_experts(w13, w2, MXFP4)
    layer = build_layer_for_decision(d, experts=experts, emulate=True, device="cpu", ep_size=1, max_tokens_per_rank=16)
    assert isinstance(layer, ConvertingLayer) and layer.report.lossless
    x = torch.randn(16, small.hidden_size).bfloat16()
    ids, w = route(small, torch.randn(16, small.num_experts), bias=0.1 * torch.randn(small.num_experts))
    y = layer(x, ids, w)
    assert calc_diff(y.float(), reference_moe(x, ids, w, experts, small.activation)) < 3e-3
