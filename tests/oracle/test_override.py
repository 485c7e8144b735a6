"""Explicit --moe-backend: validated against the same declarations, never silently replaced."""

from __future__ import annotations

import pytest

from moe_oracle.decide.selection import Override
from moe_oracle.errors import BadInputError, ExitCode, OverrideRefusedError
from tests.oracle.helpers import GLM51_NVFP4, V4_FLASH, chosen, run


def test_valid_override_is_kept():
    d = run(V4_FLASH, "b200", dp=8, ep=8, override="deep_gemm_mega_moe")
    assert chosen(d) == "deep_gemm_mega_moe:sm100_fp8xfp4"
    assert d.override == Override("deep_gemm_mega_moe")


def test_override_with_variant_and_engine_spelling():
    assert Override.parse("Deep-GEMM_mega_moe:SM100_FP8XFP4") == Override("deep_gemm_mega_moe", "sm100_fp8xfp4")
    d = run(V4_FLASH, "b200", dp=8, ep=8, override="deep_gemm_mega_moe:sm100_fp8xfp4")
    assert chosen(d) == "deep_gemm_mega_moe:sm100_fp8xfp4"


def test_override_on_the_wrong_gpu_is_refused_with_every_reason():
    with pytest.raises(OverrideRefusedError) as err:
        run(V4_FLASH, "mi355x", dp=8, ep=8, override="deep_gemm_mega_moe")
    assert err.value.exit_code == ExitCode.OVERRIDE_REFUSED
    text = err.value.one_line()
    assert "\n" not in text
    for variant in ("sm90_fp8xfp8", "sm90_fp8xfp4", "sm100_fp8xfp4", "sm100_bf16"):
        assert variant in text
    assert "ARCH_UNSUPPORTED" in text and "--allow-fallback" in text


def test_override_refused_when_one_layer_group_cannot_run_it():
    # GLM-5.1-NVFP4: NVFP4 routed layers, BF16 MTP layer; sm100_nvfp4 cannot run the MTP group.
    with pytest.raises(OverrideRefusedError) as err:
        run(GLM51_NVFP4, "b200", dp=8, ep=8, override="deep_gemm_mega_moe:sm100_nvfp4")
    assert "QUANT_UNSUPPORTED" in err.value.one_line() and "mtp" in err.value.one_line()


def test_allow_fallback_warns_and_names_what_runs_instead():
    d = run(GLM51_NVFP4, "b200", dp=8, ep=8, override="deep_gemm_mega_moe:sm100_nvfp4", allow_fallback=True)
    assert chosen(d) == "deep_gemm_mega_moe:sm100_nvfp4"
    assert len(d.warnings) == 1
    assert "falling back to deep_gemm_mega_moe:sm100_bf16" in d.warnings[0]
    d = run(V4_FLASH, "h200", dp=8, ep=8, software="vllm-0.33.0", override="deep_gemm_mega_moe", allow_fallback=True)
    assert chosen(d) is None and "no fused backend" in d.warnings[0]


@pytest.mark.parametrize(
    "text, fragment",
    [("deepgemm", "not a known mega-MoE backend"), ("deep_gemm_mega_moe:sm70", "has no variant"), (":", "malformed")],
)
def test_unknown_override_is_bad_input(text, fragment):
    with pytest.raises(BadInputError) as err:
        run(V4_FLASH, "b200", dp=8, ep=8, override=text)
    assert fragment in err.value.one_line()
    assert err.value.exit_code == ExitCode.BAD_INPUT
