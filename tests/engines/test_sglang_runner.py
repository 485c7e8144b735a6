"""The MoE runner SGLang 0.5.23 resolves and what moe-oracle's SGLang plug-in does about it (issue #29, D1, D6).

SGLang-free: the runner data and judgement (``engines/sglang/runner.py``) and the plans. The same resolution inside
the real SGLang (its own platform override for SM100, the plug-in layer on Qwen3-MoE, GLM-4.x and DeepSeek-V3
blocks against the FP32 reference) is ``tests/engines/test_real_sglang_layer.py``.
"""

from __future__ import annotations

import pytest

from moe_oracle.engines.sglang.runner import RUNNER_FLAG, ResolvedLayer, runner_pin, sm100_override
from moe_oracle.inputs import DeploymentFlags
from moe_oracle.launch.build import PlanRequest, build_plan
from moe_oracle.model.types import WeightFormat
from moe_oracle.rules import Engine

QWEN3 = "tests/fixtures/models/Qwen--Qwen3-30B-A3B"
GLM45 = "tests/fixtures/models/reconstructed--GLM-4.5-Air"
SCOUT = "tests/fixtures/models/meta-llama--Llama-4-Scout-17B-16E-Instruct"
BF16 = (WeightFormat.BF16,)


def _argv(model: str, device: str) -> tuple[list[str], list[str]]:
    p = build_plan(PlanRequest(model=model, flags=DeploymentFlags(device=device, dp=8, ep=8), engine=Engine.SGLANG))
    return list(p.commands[0].argv), list(p.notes)


@pytest.mark.parametrize(
    ("architecture", "formats", "expected"),
    [
        ("Qwen3MoeForCausalLM", BF16, "flashinfer_trtllm"),
        ("Qwen3MoeForCausalLM", (WeightFormat.FP8_BLOCK,), "flashinfer_trtllm"),
        ("Glm4MoeForCausalLM", BF16, "flashinfer_trtllm"),
        ("Glm4MoeForCausalLM", (WeightFormat.FP8_BLOCK,), None),  # glm4_moe.py: modelopt_fp4 or unquantized only
        ("DeepseekV3ForCausalLM", (WeightFormat.FP8_BLOCK,), "flashinfer_trtllm"),
        ("MixtralForCausalLM", BF16, None),
    ],
)
def test_sm100_overrides_as_sglang_declares_them(architecture: str, formats: tuple, expected: str | None) -> None:
    found = sm100_override(architecture, formats)
    assert (found.runner if found else None) == expected
    assert runner_pin("sm90", architecture, formats) is None  # SM100 only
    assert (runner_pin("sm100", architecture, formats) is not None) == (expected is not None)
    assert runner_pin("sm100", architecture, (WeightFormat.NVFP4,)) is None  # NVFP4 has no Triton runner


def test_the_loader_order_is_the_exclusive_or_of_sglangs_two_switches() -> None:
    def layer(up_first: bool, swaps: bool) -> ResolvedLayer:
        return ResolvedLayer("flashinfer_trtllm", "UnquantizedFusedMoEMethod", up_first, swaps, False, 256)

    assert not layer(False, False).w13_up_first  # triton: the checkpoint's [gate; up]
    assert layer(False, True).w13_up_first  # flashinfer_trtllm swaps w1/w3 (layer.py:1375-1380)
    assert layer(True, False).w13_up_first  # load_up_proj_weight_first (FlashInfer CUTLASS)
    assert not layer(True, True).w13_up_first
    assert "w13 loaded [up; gate]" in layer(False, True).line()


def test_a_layout_the_layer_cannot_read_is_refused_with_the_flag() -> None:
    padded = ResolvedLayer("flashinfer_trtllm", "Fp8MoEMethod", False, True, False, 1536)
    assert padded.refusal(1536) is None
    why = ResolvedLayer("flashinfer_trtllm", "Fp8MoEMethod", False, True, False, 1536).refusal(1408)
    assert why is not None and "pads the expert width 1408 to 1536" in why and why.endswith(f"Fix: {RUNNER_FLAG}")
    why = ResolvedLayer("triton_kernels", "UnquantizedFusedMoEMethod", False, False, True, 256).refusal(256)
    assert why is not None and "transposed" in why and why.endswith(f"Fix: {RUNNER_FLAG}")


@pytest.mark.parametrize("model", [QWEN3, GLM45])
def test_b200_plugin_plans_pin_the_triton_runner(model: str) -> None:
    """Done-when of issue #29: the B200 SGLang plug-in plans for Qwen3-30B-A3B and GLM-4.5(-Air) pin the runner."""
    argv, notes = _argv(model, "b200")
    assert "SGLANG_PLUGINS" not in argv and "--moe-a2a-backend" not in argv
    assert argv[argv.index("--moe-runner-backend") + 1] == "triton"
    assert any(n.startswith(f"{RUNNER_FLAG}: on sm100 SGLang's model override") for n in notes)


def test_h200_plugin_plan_leaves_the_runner_to_sglang() -> None:
    argv, _ = _argv(QWEN3, "h200")
    assert "--moe-runner-backend" not in argv


def test_llama4_refusals_do_not_send_the_operator_to_the_other_engine() -> None:
    """D6: vLLM and SGLang both refuse Llama-4 (router weight on input); neither fix names the other engine, and
    SGLang's table lists the class the checkpoint declares (``Llama4ForConditionalGeneration``, mllama4.py:1026)."""
    import json

    from moe_oracle.releases import sglang
    from tests.cli.runner import cli

    assert sglang.model_classes.TABLE.find("Llama4ForConditionalGeneration") is not None
    assert not sglang.model_classes.sglang_plugin_serves("Llama4ForConditionalGeneration")

    def fixes_of(node: object) -> list[str]:
        if isinstance(node, dict):
            own = [node["remediation"]] if node.get("code") == "MODEL_CLASS_UNSUPPORTED" else []
            return own + [f for v in node.values() for f in fixes_of(v)]
        return [f for v in node for f in fixes_of(v)] if isinstance(node, list) else []

    for engine, other in (("vllm", "--engine sglang"), ("sglang", "--engine vllm")):
        out = cli("select", SCOUT, "--engine", engine, "--device", "h200", "--tp", "8", "--ep", "8", "--json")
        fixes = fixes_of(json.loads(out.out))
        assert fixes and not [f for f in fixes if other in f], fixes
