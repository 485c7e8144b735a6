"""``flashinfer_megamoe`` (FlashInfer's CuTeDSL MegaMoE): engine-native, reachable only as SGLang 0.5.23's
``--moe-a2a-backend flashinfer_megamoe``; ranked on its roofline like the others; refused by every other engine
(moe-oracle's own runtime included) with ENGINE_UNSUPPORTED. Real configs: the GLM-4.7 NVFP4 fixture
(Glm4MoeForCausalLM, allow-listed; SGLang's DeepGEMM megamoe does not serve its MoE block), the bundled
GLM-5.1 NVFP4 preset, Qwen3.5 NVFP4 (not allow-listed)."""

from __future__ import annotations

import json

import pytest

from tests.cli.runner import cli
from tests.model.model_test_helpers import FIXTURES

GLM47_NVFP4 = str(FIXTURES / "reconstructed--GLM-4.7-NVFP4")
QWEN35_NVFP4 = str(FIXTURES / "nvidia--Qwen3.5-397B-A17B-NVFP4")
GLM51_NVFP4 = "nvidia/GLM-5.1-NVFP4"
B200_DP8 = ["--device", "b200", "--dp", "8", "--ep", "8"]
KEY = ("flashinfer_megamoe", "sm100_nvfp4xnvfp4")


def _select(*args: str) -> dict:
    r = cli("select", *args, "--json")
    assert r.code == 0, r.err
    return json.loads(r.out)


def _reasons(data: dict, variant: str) -> list[str]:
    (cand,) = [c for c in data["candidates"] if (c["backend"], c["variant"]) == ("flashinfer_megamoe", variant)]
    return [r["code"] for r in cand["reasons"] if r.get("status", "fail") == "fail"]


def test_sglang_chooses_it_for_an_allow_listed_nvfp4_model_and_the_plan_launches_it():
    data = _select(GLM47_NVFP4, *B200_DP8, "--engine", "sglang")
    assert (data["chosen"]["backend"], data["chosen"]["variant"]) == KEY
    (cand,) = [c for c in data["candidates"] if (c["backend"], c["variant"]) == KEY]
    assert cand["eligible"] and "roofline" in cand["cost_basis"] and "unmeasured" in cand["cost_basis"]
    plan = cli("plan", GLM47_NVFP4, *B200_DP8, "--engine", "sglang")
    assert plan.code == 0, plan.err
    assert "--moe-a2a-backend flashinfer_megamoe" in plan.out and "--attn-dp-size 8" in plan.out
    # moe_hook.py:326-333 asserts this runner; a model override (DeepSeek V4 NVFP4) may have replaced 'auto' before
    assert "--moe-runner-backend flashinfer_megamoe" in plan.out
    assert "SGLANG_PLUGINS" not in plan.out  # SGLang's own route, not moe-oracle's plug-in


def test_preset_override_is_served_by_sglang():
    plan = cli("plan", GLM51_NVFP4, *B200_DP8, "--engine", "sglang", "--moe-backend", "flashinfer_megamoe")
    assert plan.code == 0, plan.err
    assert "flashinfer_megamoe (sm100_nvfp4xnvfp4)" in plan.out and "--moe-a2a-backend flashinfer_megamoe" in plan.out


@pytest.mark.parametrize("engine", ["vllm", "none"])
def test_every_other_engine_refuses_it(engine):
    data = _select(GLM47_NVFP4, *B200_DP8, "--engine", engine)
    assert "ENGINE_UNSUPPORTED" in _reasons(data, "sm100_nvfp4xnvfp4")
    r = cli("select", GLM47_NVFP4, *B200_DP8, "--engine", engine, "--moe-backend", "flashinfer_megamoe")
    assert r.code == 3 and "ENGINE_UNSUPPORTED" in r.err, r.err


def test_sglang_limits_attention_dp_allow_list_and_arch():
    tp8 = _select(GLM47_NVFP4, "--device", "b200", "--tp", "8", "--ep", "8", "--engine", "sglang")
    assert "TP_UNSUPPORTED" in _reasons(tp8, "sm100_nvfp4xnvfp4")
    qwen = _select(QWEN35_NVFP4, *B200_DP8, "--engine", "sglang")
    assert "MODEL_CLASS_UNSUPPORTED" in _reasons(qwen, "sm100_nvfp4xnvfp4")
    h200 = _select(GLM47_NVFP4, "--device", "h200", "--dp", "8", "--ep", "8", "--engine", "sglang")
    assert "ARCH_UNSUPPORTED" in _reasons(h200, "sm100_nvfp4xnvfp4")
