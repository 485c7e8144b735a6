"""EXPERT_WIDTH_EXCEEDS per variant and per DeepGEMM build, at Mixtral's width (H 4096, I 14336).

The cap is ``intermediate_hidden / 64 <= 64``: one bit per 64-wide L1 N-block in the uint64 L2-arrival mask of the
single persistent SM90 kernels (PR #323, sgl-deep-gemm 0.2.3.post2 / 0.2.5; the SM90 FP8 x MXFP4 kernel of PR #323).
DeepGEMM nv_dev (PR #383) has none, from its source: ``csrc/apis/sm90_mega.hpp`` @572557e7 (index copy
aganhui/DeepGEMM) asserts only recipe (128, 128, 128), swiglu, hidden % 256 and intermediate % 128, and
``csrc/jit_kernels/impls/sm90_fp8_mega_moe.hpp`` launches L1 and L2 as two kernels (``launch_with_phase``), so no L2
waits on an L1 N-block mask; the split-phase kernel template (``sm90_fp8_mega_moe.cuh``, the same 22 template
parameters) asserts only block divisibility of the intermediate size. PR #440's and PR #411's ``fp8_mega_moe`` on a
default buffer are nv_dev's kernels. Every release caps it: only an unreleased build serves I > 4096 on SM90.
"""

from __future__ import annotations

import pytest

from moe_oracle.rules import ReasonCode
from tests.oracle.helpers import chosen, manual, run

FP8 = "deep_gemm_mega_moe:sm90_fp8xfp8"
FP4 = "deep_gemm_mega_moe:sm90_fp8xfp4"
CAPPED = (
    "deepgemm-pr323",
    "sgl-deep-gemm-0.2.5",
    "sgl-deep-gemm-0.2.3.post2",
    "sglang-0.5.23",
    "sglang-0.5.23+moe-oracle",
    "sglang-0.5.23+moe-oracle+pr323",
    "vllm-0.33.0+moe-oracle+sgl-deep-gemm",
    "vllm-0.33.0+moe-oracle+pr323",
)
UNCAPPED = ("deepgemm-nv_dev", "deepgemm-pr440", "deepgemm-pr411", "all")


def _mixtral_like(fmt: str, inter: int = 14336):
    return manual(hidden=4096, inter=inter, experts=8, top_k=2, fmt=fmt, scoring="softmax")


def _codes(software: str, key: str, fmt: str, inter: int = 14336) -> list[ReasonCode]:
    d = run(_mixtral_like(fmt, inter), "h200", dp=8, ep=8, software=software)
    return [r.code for c in d.groups[0].candidates if c.spec.key == key for r in c.failures]


@pytest.mark.parametrize("software", CAPPED)
def test_sm90_fp8_width_cap_of_every_released_or_pr323_build(software):
    assert ReasonCode.EXPERT_WIDTH_EXCEEDS in _codes(software, FP8, "fp8_block")
    assert ReasonCode.EXPERT_WIDTH_EXCEEDS not in _codes(software, FP8, "fp8_block", inter=4096)


@pytest.mark.parametrize("software", UNCAPPED)
def test_sm90_fp8_no_width_cap_on_nv_dev_kernels(software):
    assert _codes(software, FP8, "fp8_block") == []


@pytest.mark.parametrize("software", ("all", "deepgemm-pr323"))
def test_sm90_fp8xfp4_caps_at_4096_on_every_build(software):
    assert ReasonCode.EXPERT_WIDTH_EXCEEDS in _codes(software, FP4, "mxfp4")


def test_sm100_and_aiter_variants_have_no_width_cap():
    for device, fmt in (("b200", "bf16"), ("b200", "nvfp4"), ("mi355x", "mxfp4")):
        d = run(_mixtral_like(fmt), device, dp=8, ep=8, software="all")
        for c in d.groups[0].candidates:
            if "sm90" in c.spec.variant:
                continue
            assert ReasonCode.EXPERT_WIDTH_EXCEEDS not in [r.code for r in c.failures], (device, c.spec.key)


def test_mixtral_bf16_fixture_on_h200_released_builds_say_width_and_format():
    from moe_oracle.model.adapters import describe_model
    from tests.model.model_test_helpers import FIXTURES

    desc = describe_model(str(FIXTURES / "mistralai--Mixtral-8x7B-v0.1"))
    d = run(desc, "h200", dp=8, ep=8, software="sglang-0.5.23")
    assert chosen(d) is None
    (c,) = [c for c in d.groups[0].candidates if c.spec.key == FP8]
    codes = {r.code for r in c.failures}
    assert {ReasonCode.QUANT_UNSUPPORTED, ReasonCode.EXPERT_WIDTH_EXCEEDS} <= codes


@pytest.mark.parametrize(("hidden", "inter", "ok"), [(2048, 1408, False), (2304, 1536, False), (2048, 1536, True)])
def test_sglang_pinned_sgl_deep_gemm_sm90_buffer_rows_must_be_tma_aligned(hidden, inter, ok):
    """sgl-deep-gemm 0.2.3.post2 (SGLang 0.5.23's pin): hidden % 512 and intermediate % 256, as its _C asserts."""
    model = manual(hidden=hidden, inter=inter, experts=64, top_k=8, fmt="fp8_block", scoring="softmax")
    d = run(model, "h200", dp=8, ep=8, software="sgl-deep-gemm-0.2.3.post2")
    codes = [r.code for c in d.groups[0].candidates if c.spec.key == FP8 for r in c.failures]
    assert (codes == []) is ok, codes
    assert ok or codes == [ReasonCode.SHAPE_UNSUPPORTED]
