"""The default software of each engine is its release plus only the DeepGEMM build the chosen variant needs on the
device (issue 29 item 2: D3, D4, D5, D7), and every derived size is the installed build's."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from moe_oracle.cli.app import cli
from moe_oracle.decide.question import ConversionOptions
from moe_oracle.inputs import DeploymentFlags
from moe_oracle.launch.build import PlanRequest, build_plan
from moe_oracle.launch.model import LaunchPlan
from moe_oracle.releases.defaults import default_software
from moe_oracle.releases.profiles import NAMED_PROFILES, named_profile
from moe_oracle.rules import Engine
from moe_oracle.software.catalog import known_builds

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "models"
DSV31_NVFP4 = str(FIXTURES / "nvidia--DeepSeek-V3.1-NVFP4")
KIMI26_NVFP4 = str(FIXTURES / "nvidia--Kimi-K2.6-NVFP4")
QWEN3_FP8 = str(FIXTURES / "Qwen--Qwen3-235B-A22B-FP8")


def _plan(model: str, engine: str, device: str, *, software: str | None = None, lossy: bool = False) -> LaunchPlan:
    flags = DeploymentFlags(device=device, dp=8, ep=8)
    conv = ConversionOptions(allow_lossy=lossy)
    return build_plan(PlanRequest(model, flags, Engine(engine), software=software, conversion=conv))


def _installed(plan: LaunchPlan) -> str | None:
    profile = named_profile(plan.software)
    assert profile is not None
    return profile.only_build("deep_gemm")


@pytest.mark.parametrize("model", [DSV31_NVFP4, KIMI26_NVFP4])
def test_sglang_on_8xb200_chooses_sm100_nvfp4_for_nvfp4_checkpoints_by_default(model: str) -> None:
    result = CliRunner().invoke(cli, ["select", model, "--device", "b200", "--engine", "sglang", "--json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    chosen = [g["chosen"] for g in doc["layer_groups"]]
    assert chosen and all(c == {"backend": "deep_gemm_mega_moe", "variant": "sm100_nvfp4"} for c in chosen)
    assert doc["software"]["profile"] == "sglang-0.5.23+moe-oracle"


def test_glm5_fp8_keeps_its_online_nvfp4_route_on_b200_under_the_default_profile() -> None:
    lossy = _plan("zai-org/GLM-5-FP8", "sglang", "b200", lossy=True)
    assert (lossy.backend, lossy.variant) == ("deep_gemm_mega_moe", "sm100_nvfp4")
    assert _installed(lossy) == "sgl-deep-gemm-0.2.3.post2"


@pytest.mark.parametrize("engine", ["sglang", "vllm"])
@pytest.mark.parametrize("model", [QWEN3_FP8, "zai-org/GLM-5-FP8"])
def test_no_sm90_fp8xfp8_plan_asks_for_an_unreleased_build(engine: str, model: str) -> None:
    p = _plan(model, engine, "h200")
    assert p.variant == "sm90_fp8xfp8"
    build = known_builds()[_installed(p) or ""]
    assert build.released, build.name
    assert not any("unreleased" in n or ("PR #323" in n and "Install" in n) for n in p.notes)
    assert all(g["unreleased_build"] is None for g in p.groups if g.get("built", True))


def test_pr323_is_installed_only_for_an_sm90_fp4_kernel_and_sized_for() -> None:
    for engine in ("sglang", "vllm"):
        p = _plan("deepseek-ai/DeepSeek-V4-Pro", engine, "h200")
        assert p.variant == "sm90_fp8xfp4", engine
        assert _installed(p) == "deepgemm-pr323"
        assert p.software_origin.startswith(f"default for --engine {engine} on h200 (sm90): deepgemm-pr323 for ")
        rows = next(d for d in p.derived if d.key == "deepgemm_num_max_tokens_per_rank")
        assert rows.value % 384 == 0 and "1920" not in rows.formula


def test_every_buffer_is_sized_for_the_build_the_plan_installs() -> None:
    """D5: SGLang's megamoe on H200 and the plug-ins size with the one build the profile lists."""
    cases = [
        (QWEN3_FP8, "sglang", "h200", "sgl-deep-gemm-0.2.3.post2", 1920),
        (QWEN3_FP8, "vllm", "h200", "sgl-deep-gemm-0.2.3.post2", 1920),
        ("deepseek-ai/DeepSeek-V4-Pro", "sglang", "h200", "deepgemm-pr323", 384),
        ("deepseek-ai/DeepSeek-V4-Flash", "vllm", "b200", "vllm-deepgemm-2.8.1", 1920),
        (DSV31_NVFP4, "sglang", "b200", "sgl-deep-gemm-0.2.3.post2", 1920),
    ]
    for model, engine, device, build, alignment in cases:
        p = _plan(model, engine, device)
        assert _installed(p) == build, (model, engine, device, p.software)
        rows = [d for d in p.derived if d.key == "deepgemm_num_max_tokens_per_rank"]
        assert rows, (model, engine, device)
        for d in rows:
            assert d.value % alignment == 0, (model, engine, device, d.formula)
            assert f", {alignment})" in d.formula


def test_every_engine_profile_lists_one_deep_gemm_build() -> None:
    """D7: an engine loads one deep_gemm module; a profile of an engine release describes exactly that one."""
    for name in NAMED_PROFILES:
        profile = named_profile(name)
        assert profile is not None
        lib = profile.library("deep_gemm")
        if name == "all" or lib is None:
            continue
        assert len(lib.builds) == 1, (name, sorted(lib.builds))
        assert lib.builds <= set(known_builds()), name
        assert lib.symbols <= known_builds()[next(iter(lib.builds))].symbols, name


def test_default_options_start_with_the_release_and_replace_only_deep_gemm() -> None:
    for engine in (Engine.VLLM, Engine.SGLANG):
        for arch in ("sm90", "sm100", "gfx950"):
            options = default_software(engine, arch)
            assert options[0].replaces is None
            release = named_profile(options[0].profile)
            assert release is not None
            for option in options[1:]:
                other = named_profile(option.profile)
                assert other is not None and option.replaces in known_builds()
                changed = {
                    k
                    for k in {*release.libraries, *other.libraries}
                    if release.libraries.get(k) != other.libraries.get(k)
                }
                assert changed == {"deep_gemm"}, option.profile


def test_vllm_flashinfer_moe_ep_mega_deep_gemm_is_the_second_native_route() -> None:
    """Issue 29 item 7: vLLM 0.33's --moe-backend flashinfer_moe_ep_mega_deep_gemm, gated as its wheel gates it."""
    from moe_oracle.registry import load_registry
    from moe_oracle.releases.vllm_0_33.gates import PROFILE

    spec = next(v for v in load_registry().variants if v.key == "deep_gemm_mega_moe:sm100_fp8xfp4")
    flags = [s.flag_value for s in PROFILE.routes(spec) if s.route == "engine"]
    assert flags == ["deep_gemm_mega_moe", "flashinfer_moe_ep_mega_deep_gemm"]
    flash = "deepseek-ai/DeepSeek-V4-Flash"
    default = build_plan(PlanRequest(flash, DeploymentFlags(device="b200", dp=8, ep=8), Engine.VLLM))
    assert default.argv[default.argv.index("--moe-backend") + 1] == "deep_gemm_mega_moe"
    # vLLM's own mega path refuses the passthrough all2all (fused_moe/config.py); FlashInfer's route binds it itself
    flags_pt = DeploymentFlags(device="b200", dp=8, ep=8, all2all_backend="passthrough")
    fi = build_plan(PlanRequest(flash, flags_pt, Engine.VLLM))
    assert fi.argv[fi.argv.index("--moe-backend") + 1] == "flashinfer_moe_ep_mega_deep_gemm"
    assert "--all2all-backend" not in fi.argv
    eplb = DeploymentFlags(device="b200", dp=8, ep=8, all2all_backend="passthrough", eplb=True)
    assert "flashinfer_moe_ep_mega_deep_gemm" not in build_plan(PlanRequest(flash, eplb, Engine.VLLM)).argv
