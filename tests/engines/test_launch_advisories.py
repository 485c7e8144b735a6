"""Launch advisory MOA-2026-002 (DeepGEMM PR #447): SGLang plans running the SM90 FP8 or SM100 NVFP4 mega kernel set
DeepGEMM PDL off with SGLang's own switch and say why (issue #29 item 6)."""

from __future__ import annotations

from moe_oracle.decide.launch_advisories import bundled_launch_advisories, launch_advisories
from moe_oracle.inputs import DeploymentFlags
from moe_oracle.launch.build import PlanRequest, build_plan
from moe_oracle.rules import Engine


def _plan(model: str, engine: Engine, device: str):
    return build_plan(PlanRequest(model=model, flags=DeploymentFlags(device=device, dp=8, ep=8), engine=engine))


def test_the_advisory_is_bundled_with_its_source() -> None:
    (adv,) = [a for a in bundled_launch_advisories() if a.id == "MOA-2026-002"]
    assert adv.link == "https://github.com/deepseek-ai/DeepGEMM/pull/447" and adv.env == {"SGLANG_DEEPGEMM_PDL": "0"}
    assert launch_advisories("sglang", "0.5.23", [("deep_gemm_mega_moe", "sm90_fp8xfp8")]) == [adv]
    assert launch_advisories("sglang", "0.5.23", [("deep_gemm_mega_moe", "sm100_nvfp4")]) == [adv]
    assert not launch_advisories("sglang", "0.5.23", [("deep_gemm_mega_moe", "sm100_fp8xfp4")])  # it waits
    assert not launch_advisories("vllm", "0.33.0", [("deep_gemm_mega_moe", "sm90_fp8xfp8")])


def test_sglang_sm90_mega_plan_names_the_pdl_hazard_and_turns_pdl_off() -> None:
    p = _plan("zai-org/GLM-5-FP8", Engine.SGLANG, "h200")
    assert p.variant == "sm90_fp8xfp8"
    assert dict(p.commands[0].env)["SGLANG_DEEPGEMM_PDL"] == "0"
    assert any(n.startswith("launch advisory MOA-2026-002:") and "SGLANG_DEEPGEMM_PDL=0" in n for n in p.notes)


def test_plans_without_those_kernels_leave_pdl_alone() -> None:
    p = _plan("tests/fixtures/models/Qwen--Qwen3-30B-A3B", Engine.SGLANG, "b200")  # sm100_bf16
    assert "SGLANG_DEEPGEMM_PDL" not in dict(p.commands[0].env)
    assert not any("MOA-2026-002" in n for n in p.notes)
