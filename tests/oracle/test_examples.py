"""The decisions the product promises, on the bundled real configs."""

from __future__ import annotations

import pytest

from tests.oracle.helpers import GLM5, GLM5_FP8, GLM51_NVFP4, V4_FLASH, V4_FLASH_NVFP4, V4_PRO, chosen, codes, run


def test_v4_flash_on_8_b200_dp8_ep8_chooses_sm100_fp8xfp4():
    d = run(V4_FLASH, "b200", dp=8, ep=8)
    assert [chosen(d, i) for i in range(len(d.groups))] == ["deep_gemm_mega_moe:sm100_fp8xfp4"] * len(d.groups)


def test_v4_flash_on_8_mi355x_chooses_aiter_a8w4():
    d = run(V4_FLASH, "mi355x", dp=8, ep=8)
    assert chosen(d) == "aiter_mega_moe:gfx950_a8w4"
    assert "EP_SIZE_UNSUPPORTED" in codes(d, "aiter_mega_moe:gfx950_a4w4")


def test_v4_flash_on_8_h200_with_vllm_profile_has_nothing_eligible():
    d = run(V4_FLASH, "h200", dp=8, ep=8, software="vllm-0.33.0")
    assert chosen(d) is None
    assert d.main.fallback and "non-fused" in d.main.fallback
    assert "KERNEL_MISSING" in codes(d, "deep_gemm_mega_moe:sm90_fp8xfp4")
    assert not any(c.eligible for c in d.main.candidates)


def test_v4_flash_on_h200_with_every_kernel_chooses_fp8_after_conversion():
    # the FP8 kernel is faster on SM90 (h200.md §4) and the converted experts fit at EP8
    d = run(V4_FLASH, "h200", dp=8, ep=8)
    assert d.main.chosen is not None
    assert d.main.chosen.key == "deep_gemm_mega_moe:sm90_fp8xfp8+convert(mxfp4->fp8_block)"
    # at EP1 they do not fit, and the MXFP4 kernel serves the checkpoint as stored
    assert chosen(run(V4_FLASH, "h200", gpus_per_node=1)) == "deep_gemm_mega_moe:sm90_fp8xfp4"


def test_glm5_fp8_on_h200_sglang_chooses_sm90_fp8():
    d = run(GLM5_FP8, "h200", dp=8, ep=8, engine="sglang", software="sglang-0.5.23")
    assert chosen(d) == "deep_gemm_mega_moe:sm90_fp8xfp8"


def test_glm5_bf16_on_b200_chooses_sm100_bf16():
    d = run(GLM5, "b200", dp=8, ep=8)
    assert chosen(d) == "deep_gemm_mega_moe:sm100_bf16"


def test_nvfp4_checkpoint_splits_nvfp4_main_and_mxfp4_mtp():
    d = run(V4_FLASH_NVFP4, "b200", dp=8, ep=8)
    by_format = {g.group.weight_format.value: (g.chosen.spec.key if g.chosen else None) for g in d.groups}
    assert by_format["nvfp4"] == "deep_gemm_mega_moe:sm100_nvfp4"
    assert by_format["mxfp4"] == "deep_gemm_mega_moe:sm100_fp8xfp4"


def test_glm51_nvfp4_bf16_mtp_layer_gets_its_own_decision():
    d = run(GLM51_NVFP4, "b200", dp=8, ep=8)
    assert chosen(d) == "deep_gemm_mega_moe:sm100_nvfp4"
    mtp = [g for g in d.groups if g.group.weight_format.value == "bf16"]
    assert mtp and mtp[0].chosen is not None and mtp[0].chosen.spec.key == "deep_gemm_mega_moe:sm100_bf16"


def test_vllm_engine_on_b200_keeps_dsv4_and_judges_glm_by_its_kernel():
    assert chosen(run(V4_PRO, "b200", dp=8, ep=8, engine="vllm")) == "deep_gemm_mega_moe:sm100_fp8xfp4"
    d = run(GLM5_FP8, "b200", dp=8, ep=8, engine="vllm")
    assert chosen(d) is None
    # moe-oracle's runtime serves GLM inside vLLM: only the kernel's own format rule rejects it now
    assert codes(d, "deep_gemm_mega_moe:sm100_fp8xfp8") == ["QUANT_UNSUPPORTED"]
    assert "vLLM FusedMoE" in (d.main.fallback or "")


def test_vllm_engine_on_h200_serves_v4_and_glm5_through_the_runtime():
    from moe_oracle.engines.vllm.routes import group_routes

    for model, want in ((V4_FLASH, "deep_gemm_mega_moe:sm90_fp8xfp"), (GLM5_FP8, "deep_gemm_mega_moe:sm90_fp8xfp8")):
        d = run(model, "h200", dp=8, ep=8, engine="vllm")
        assert chosen(d) is not None and chosen(d).startswith(want), chosen(d)
        assert {r.route for r in group_routes(d)} == {"moe-oracle"}


@pytest.mark.parametrize("device", ["gb200", "gb300"])
def test_nvl72_allows_ep_across_trays(device):
    d = run(V4_PRO, device, nodes=16, dp=64, ep=64)
    assert chosen(d) == "deep_gemm_mega_moe:sm100_fp8xfp4"


def test_two_hgx_nodes_ep16_crosses_the_nvlink_domain_and_says_how_to_split():
    d = run(V4_FLASH, "b200", nodes=2, dp=16, ep=16)
    assert chosen(d) is None
    reasons = [r for c in d.main.candidates if c.spec.key.endswith("sm100_fp8xfp4") for r in c.failures]
    assert [r.code.value for r in reasons] == ["EP_EXCEEDS_DOMAIN"]
    assert "2 replicas of EP8" in reasons[0].remediation


def test_decision_is_deterministic():
    a = run(V4_FLASH, "b200", dp=8, ep=8)
    b = run(V4_FLASH, "b200", dp=8, ep=8)
    assert [(c.spec.key, c.reasons) for c in a.main.candidates] == [(c.spec.key, c.reasons) for c in b.main.candidates]
