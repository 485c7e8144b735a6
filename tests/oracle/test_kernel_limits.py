"""PR #323's SM90 FP8 kernel limits as its host heuristics and static assertions give them (issue #31 item 2).

``moe_oracle_backends._sm90_fp8_kernel`` transcribes the configuration DeepGEMM picks per call and the assertions
that depend on it; the H200 saw H 8192 (ERNIE-4.5-300B-A47B's experts: I 3584, E 64, top-8) fail to compile at
T = 512 and 4096 on one rank with "Hidden is too large" and compile at T = 1, 8, 64, and H 7168 compile at every T
(tests/runtime/test_gpu_kernel_limits.py checks both sides on the GPU).
"""

from __future__ import annotations

import pytest
from moe_oracle_backends import _sm90_fp8_kernel as k

from moe_oracle.rules import ReasonCode
from tests.oracle.helpers import chosen, codes, manual, run

FP8 = "deep_gemm_mega_moe:sm90_fp8xfp8"
ERNIE = {"hidden": 8192, "inter": 3584, "num_experts": 64, "top_k": 8}


@pytest.mark.parametrize(("tokens", "compiles"), [(1, True), (8, True), (64, True), (512, False), (4096, False)])
def test_h8192_fails_from_64_tokens_per_expert_as_seen_on_the_h200(tokens, compiles):
    cfg = k.config(tokens, **ERNIE)
    bad = k.failures(cfg, 8)
    assert (not bad) is compiles
    if not compiles:
        assert (cfg.block_m, cfg.block_n, cfg.combine_warps, cfg.num_stages, cfg.combine_chunks) == (128, 256, 16, 2, 4)
        assert any("Hidden is too large" in b and "196608 B > SMEM_BEFORE_BARRIER_SIZE 181248 B" in b for b in bad)


@pytest.mark.parametrize("experts", [256, 384])
@pytest.mark.parametrize("tokens", [1, 8, 64, 512, 4096, 8192])
def test_h7168_compiles_at_every_token_count(experts, tokens):
    cfg = k.config(tokens, hidden=7168, inter=2048, num_experts=experts, top_k=8)
    assert k.failures(cfg, 8) == []
    if cfg.block_m == 128:
        assert cfg.combine_chunks == 7  # 7168 = 7 x 1024: seven chunks fit the combine stage


def test_first_failure_is_the_first_token_count_with_64_per_expert():
    lim = k.first_failure(**ERNIE, num_ranks=1, max_tokens=8192)
    assert lim is not None and lim.first_failing_tokens == 512  # 512 x 8 / 64 = 64 tokens per expert
    assert k.first_failure(**ERNIE, num_ranks=1, max_tokens=511) is None
    # EP8: every rank receives 8x the tokens, so 64 tokens per rank already reach 64 per expert
    assert k.first_failure(**ERNIE, num_ranks=8, max_tokens=8192).first_failing_tokens == 64


def test_every_regime_start_is_the_first_token_count_of_its_configuration():
    for e, tk, ranks in ((64, 8, 1), (256, 6, 8), (384, 8, 8), (512, 10, 1)):
        starts = k.regime_starts(e, tk, ranks, 8192)
        for a, b in zip(starts, (*starts[1:], 8193), strict=True):
            want = k.config(a, hidden=4096, inter=3072, num_experts=e, top_k=tk, num_ranks=ranks)
            for t in {a, (a + b - 1) // 2, b - 1}:
                got = k.config(t, hidden=4096, inter=3072, num_experts=e, top_k=tk, num_ranks=ranks)
                assert (got.block_m, got.block_n, got.swap_ab, got.num_stages) == (
                    want.block_m,
                    want.block_n,
                    want.swap_ab,
                    want.num_stages,
                )


def test_the_audit_names_every_static_assertion_file():
    where = " ".join(a.where for a in k.AUDIT)
    for line in ("2182-2186", "496", "186", "137"):
        assert line in where


def _ernie_fp8():
    return manual(hidden=8192, inter=3584, experts=64, top_k=8, fmt="fp8_block", scoring="softmax")


def test_select_never_chooses_sm90_fp8xfp8_for_h8192_where_it_does_not_compile():
    """The issue's command: 8 x H200 DP8/EP8 with 8192 tokens per rank of prefill."""
    d = run(_ernie_fp8(), "h200", dp=8, ep=8, software="deepgemm-pr323")
    assert chosen(d) != FP8
    assert ReasonCode.SHAPE_UNSUPPORTED.value in codes(d, FP8)
    reason = next(r for c in d.groups[0].candidates if c.spec.key == FP8 for r in c.failures)
    assert "Hidden is too large" in reason.message and "from 64 tokens per rank" in reason.message
    assert "sm90_fp8_mega_moe.cuh:2183" in reason.message


def test_a_budget_below_the_limit_keeps_sm90_fp8xfp8_eligible():
    """EP8 at 32 tokens per rank stays under 64 per expert: the kernel compiles for every call."""
    d = run(_ernie_fp8(), "h200", dp=8, ep=8, software="deepgemm-pr323", max_num_batched_tokens=32)
    assert ReasonCode.SHAPE_UNSUPPORTED.value not in codes(d, FP8)


def test_h7168_kimi_shape_is_not_refused():
    d = run(
        manual(hidden=7168, inter=2048, experts=384, top_k=8, fmt="fp8_block"),
        "h200",
        dp=8,
        ep=8,
        software="deepgemm-pr323",
    )
    assert ReasonCode.SHAPE_UNSUPPORTED.value not in codes(d, FP8)
