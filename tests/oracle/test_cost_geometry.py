"""The cost model's terms: the blocks PR #323's heuristics pick, the work they count, and the fit over shapes."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from moe_oracle.cost.calibration import PATH_TERMS, TERMS, features, nnls, robust_nnls
from moe_oracle.cost.geometry import (
    FP4_SWAP_L1_WIDTHS,
    FP4_SWAP_L2_WIDTHS,
    SM90_SMS,
    WALK_HIDDEN_STEPS,
    WALK_STEPS_PER_TILE_MB,
    Kernel,
    Regime,
    expected_m_blocks,
    expected_swap_rows,
    exposed_walk,
    geometry,
    kernel_for,
    swap_rows,
)
from tests.oracle.helpers import PROBE_PRINTOUTS

ROOT = Path(__file__).resolve().parents[2]
FP8, FP4, GROUPED = Kernel.SM90_FP8, Kernel.SM90_FP4, Kernel.GROUPED


def test_block_m_switches_to_128_at_64_tokens_per_expert():
    # 64 experts, top-8: 64 tokens per expert at T = 512 (get_block_config_for_mega_moe_sm90's auto_split_mn)
    below, at = geometry(FP8, 511, 4096, 3072, 64, 8, 1), geometry(FP8, 512, 4096, 3072, 64, 8, 1)
    assert (below.regime, below.block_m) == (Regime.SPLIT_N, 64)
    assert (at.regime, at.block_m, at.block_n) == (Regime.LARGE_M, 128, 256)
    # at EP 8 the kernel counts the tokens of every rank: T = 64 per rank is 64 per expert (8 at EP 1)
    assert geometry(FP8, 64, 4096, 3072, 64, 8, 8).block_m == 128
    assert geometry(FP8, 64, 4096, 3072, 64, 8, 1).block_m == 64


def test_swap_ab_up_to_128_tokens_and_block_n_of_each_kernel():
    assert geometry(FP8, 128, 4096, 2048, 256, 8, 1).regime is Regime.SWAP_AB
    assert geometry(FP8, 129, 4096, 2048, 256, 8, 1).regime is Regime.SPLIT_N
    assert geometry(FP8, 256, 4096, 3072, 256, 8, 1).block_n == 256  # I >= 3072 without swapAB
    assert geometry(FP8, 256, 4096, 2048, 256, 8, 1).block_n == 128
    assert geometry(FP4, 4096, 4096, 2048, 256, 8, 1).block_n == 128  # the FP8xMXFP4 kernel: always 128
    g = geometry(GROUPED, 8, 4096, 2048, 256, 8, 1)
    assert (g.block_m, g.expert_waves) == (128, 1)
    assert kernel_for("nonfused:deepgemm_fp8_psum") is Kernel.GROUPED_PSUM
    assert kernel_for("nonfused:deepgemm_fp8_m_indices") is GROUPED
    assert kernel_for("deep_gemm_mega_moe:sm100_fp8xfp4") is None


def test_grouped_gemms_take_the_block_n_deep_gemm_picks_for_the_rows_launched():
    # Qwen3-30B-A3B at T = 512: 20352 rows; W13 (N 1536) runs BLOCK_N 192 in both layouts, W2 (N 2048) 192 with
    # m_indices but 128 with psum (11 blocks of 192 cannot pair into clusters of two), as DeepGEMM printed
    psum, midx = geometry(Kernel.GROUPED_PSUM, 512, 2048, 768, 128, 8, 1), geometry(GROUPED, 512, 2048, 768, 128, 8, 1)
    assert (psum.block_n, psum.block_n_l2, midx.block_n, midx.block_n_l2) == (192, 128, 192, 192)
    assert psum.tiles == pytest.approx(psum.m_blocks * (8 + 16))
    # m_indices launches every row of the bound: 159 blocks of 128 visited, of which 128 hold tokens (one per expert)
    assert psum.m_blocks == pytest.approx(128, abs=0.5) and midx.m_blocks == pytest.approx(psum.m_blocks)
    assert midx.tiles == pytest.approx(20352 / 128 * (8 + 11))


def test_expected_m_blocks_pad_each_expert_to_block_m():
    assert expected_m_blocks(64, 64, 8, 1, 1, 64) == pytest.approx(8.0)  # one token: top-8 experts, one block each
    assert expected_m_blocks(4, 4, 4, 300, 1, 128) == 4 * 3  # every expert gets all 300 tokens: 3 blocks
    # large T with few experts: 512 tokens per expert on average, 4 blocks of 128 only when none is over
    per_expert = expected_m_blocks(64, 64, 8, 4096, 1, 128) / 64
    assert 4.3 < per_expert < 4.7


def test_fp4_swap_ab_blocks_run_the_narrowest_instantiated_width():
    # run_swap_ab_l1 / l2 of sm90_fp8_fp4_mega_moe.cuh: tokens rounded up to 8, then the next instantiated width
    plain_l1, n24_l1 = FP4_SWAP_L1_WIDTHS
    assert swap_rows(17, 64, plain_l1) == 64 and swap_rows(17, 64, n24_l1) == 24
    assert swap_rows(17, 64, FP4_SWAP_L2_WIDTHS[0]) == 32  # the second GEMM has a 32-wide MMA
    assert (swap_rows(0, 64, plain_l1), swap_rows(1, 64, plain_l1), swap_rows(64, 64, plain_l1)) == (0, 8, 64)
    assert swap_rows(70, 64, plain_l1) == 64 + 8  # a full block, then a block of 6 tokens
    # every expert gets all 20 tokens (p = 1): each runs one 24-wide (n24) or 64-wide (plain) first GEMM
    assert expected_swap_rows(4, 4, 4, 20, 1, 64, n24_l1) == 4 * 24
    assert expected_swap_rows(4, 4, 4, 20, 1, 64, plain_l1) == 4 * 64


def test_mma_rows_are_padded_blocks_except_in_fp4_swap_ab():
    # GLM-5 (H 6144, I 2048, 256 experts, top-8) at EP 8: swapAB up to 24 tokens per expert
    for t in (1, 8, 64):
        g = geometry(FP4, t, 6144, 2048, 256, 8, 8)
        assert g.regime is Regime.SWAP_AB
        routed = t * 8 * 8 / 256 * 32  # token rows routed to one rank's 32 experts
        assert routed <= g.mma_rows_l2 <= g.mma_rows_l1 <= g.m_blocks * g.block_m
    t8 = geometry(FP4, 8, 6144, 2048, 256, 8, 8)  # 16 experts per wave and I <= 2048: the 24-wide dispatch
    assert t8.experts_per_wave == 16 and t8.mma_rows_l1 < t8.m_blocks * t8.block_m / 4
    for kernel, t in ((FP4, 256), (FP8, 64), (GROUPED, 64)):  # no swapAB widths: BLOCK_M x blocks
        g = geometry(kernel, t, 6144, 2048, 256, 8, 8)
        assert g.mma_rows_l1 == g.mma_rows_l2 == pytest.approx(g.m_blocks * g.block_m)


def test_busiest_sm_streams_whole_rounds_of_tiles():
    # T = 1 at H 8192, I 3584 (ERNIE-4.5 shape): 8 experts x 56 L1 tiles = 448 tiles = 4 rounds over 132 SMs,
    # 8 x 64 L2 tiles = 512 = 4 rounds; each L1 tile 128 x 8192 bytes, each L2 tile 128 x 3584
    g = geometry(FP8, 1, 8192, 3584, 64, 8, 1)
    assert g.tiles == pytest.approx(8 * (56 + 64))
    assert -(-448 // SM90_SMS) == 4
    assert g.critical_mb == pytest.approx((4 * 128 * 8192 + 4 * 128 * 3584) / 1e6)


def test_experts_per_wave_between_one_and_four_tokens_per_expert():
    # V4-Flash shape at T = 64: 1.5 tokens per expert, 32 L1 tiles per expert; the smallest wave filling 2 x 132
    # SMs is 9 experts, and 16 leaves no partial last wave among 9..18
    assert geometry(FP8, 64, 4096, 2048, 256, 6, 1).experts_per_wave == 16
    assert geometry(FP8, 64, 4096, 2048, 256, 6, 1).expert_waves == 16
    assert geometry(FP8, 1, 4096, 2048, 256, 6, 1).expert_waves == 1  # under one token per expert: one wave
    # the FP8xMXFP4 kernel's own rule: I <= 2048 at 32-64 tokens per expert runs 16 experts per wave
    assert geometry(FP4, 1024, 6144, 2048, 256, 8, 1).experts_per_wave == 16


def test_features_count_each_kind_of_work_once():
    tiles = [i for i, name in enumerate(TERMS) if name.startswith("per tile")]
    x = features("deep_gemm_mega_moe:sm90_fp8xfp8", 4096, 64, 37757952, 8, 4096, 3072, 64)
    assert [x[i] > 0 for i in tiles] == [False, False, True]  # BLOCK_M 128: only its tile term
    scan = TERMS.index("per scheduler step (local experts x ceil(local experts / 32), thousands)")
    assert features("nonfused:deepgemm_fp8_psum", 1, 10, 1, 10, 2048, 512, 512)[scan] == pytest.approx(512 * 16 / 1e3)
    sm100 = features("deep_gemm_mega_moe:sm100_fp8xfp4", 64, 64, 1000, 8, 4096, 2048, 256)
    assert all(sm100[i] == 0 for i in (4, 6, 8, 9, *tiles))  # blocks not modelled there: the five terms only


def test_fp8_kernel_at_block_m_128_spills_past_384_local_experts():
    fp8 = "deep_gemm_mega_moe:sm90_fp8xfp8"
    stream = TERMS.index(
        "per MB streamed (expert MB x its M-blocks), FP8 kernel at BLOCK_M 128 with over 384 local experts"
    )
    walk = TERMS.index(
        "per scheduler step at BLOCK_M 128, FP8 kernel (local experts x ceil(local experts / 32), thousands)"
    )
    tiles = TERMS.index("per tile, BLOCK_M 128")
    # Qwen3.5-397B-A17B at T = 4096: 80 tokens per expert, one M-block each; 512 local experts: the streaming term
    # alone (each expert's 12.6 MB once), no block terms
    x = features(fp8, 4096, 512, 12_582_912, 10, 4096, 1024, 512)
    assert x[stream] == pytest.approx(x[3] + x[4]) and x[stream] == pytest.approx(
        geometry(FP8, 4096, 4096, 1024, 512, 10, 1).m_blocks * 12.582912
    )
    assert x[tiles] == x[walk] == x[6] == x[8] == 0
    # the same shape at EP 2 (256 local experts) and Kimi-K2's 384: the block terms and the spilled walk
    for args in ((4096, 512, 12_582_912, 10, 4096, 1024, 512, 2), (4096, 384, 44_040_192, 8, 7168, 2048, 384)):
        x = features(fp8, *args)
        assert x[stream] == 0 and x[tiles] > 0 and x[2] > 0 and x[walk] == pytest.approx(x[2])
    # BLOCK_M 64 (T = 2048: 40 tokens per expert): neither
    x = features(fp8, 2048, 512, 12_582_912, 10, 4096, 1024, 512)
    assert x[stream] == x[walk] == 0
    # the FP8xMXFP4 kernel has neither term
    x = features("deep_gemm_mega_moe:sm90_fp8xfp4", 4096, 512, 6_815_744, 10, 4096, 1024, 512)
    assert x[stream] == x[walk] == 0


def test_fp8_kernel_runs_its_split_phase_hot_path_from_h_7168_at_block_m_128():
    # sm90_fp8_mega_moe.hpp:181-182: BLOCK_M 128, BLOCK_N 256 and H >= 7168 (DeepSeek-V3, Kimi-K2 at large T)
    assert geometry(FP8, 4096, 7168, 2048, 256, 8, 1).split_phase
    assert geometry(FP8, 8192, 7168, 2048, 384, 8, 1).split_phase
    assert not geometry(FP8, 4096, 6144, 2048, 256, 8, 1).split_phase  # GLM-5's H
    assert not geometry(FP8, 512, 7168, 2048, 256, 8, 1).split_phase  # 16 tokens per expert: BLOCK_M 64
    assert not geometry(FP4, 4096, 7168, 2048, 256, 8, 1).split_phase  # the FP8xMXFP4 kernel has no such path
    fast = TERMS.index("per padded TFLOP, FP8 kernel's split-phase hot path (BLOCK_M 128, BLOCK_N 256, H >= 7168)")
    fp8 = "deep_gemm_mega_moe:sm90_fp8xfp8"
    x = features(fp8, 4096, 256, 44_040_192, 8, 7168, 2048, 256)
    assert x[fast] > 0 and x[6] == 0  # its padded work at its own rate
    x = features(fp8, 4096, 256, 37_748_736, 8, 6144, 2048, 256)
    assert x[fast] == 0 and x[6] > 0


def test_m_indices_padding_blocks_load_every_k_block_of_their_tiles():
    padding = TERMS.index(
        "per MB the m_indices layout's all-padding blocks load (every K-block of A and B; MMA skipped)"
    )
    # GLM-5 at T = 32: 256 routed rows padded per expert to 32,768 launched rows (256 blocks of 128) for about 160
    # active experts: the rest are all padding, each streaming BLOCK_M + BLOCK_N rows of K bytes per N-tile
    g = geometry(GROUPED, 32, 6144, 2048, 256, 8, 1)
    blocks = 32768 / 128
    l1_n, l2_n = -(-2 * 2048 // g.block_n), -(-6144 // g.block_n_l2)
    assert 150 < g.m_blocks < 170 and g.tiles == pytest.approx(blocks * (l1_n + l2_n))
    per_block = (l1_n * (128 + g.block_n) * 6144 + l2_n * (128 + g.block_n_l2) * 2048) / 1e6
    assert g.padding_mb == pytest.approx((blocks - g.m_blocks) * per_block)
    x = features("nonfused:deepgemm_fp8_m_indices", 32, 160, 37_748_736, 8, 6144, 2048, 256)
    assert x[padding] == pytest.approx(g.padding_mb)
    # the psum layout visits only the blocks that hold tokens, the fused kernels' schedulers only routed ones
    assert geometry(Kernel.GROUPED_PSUM, 32, 6144, 2048, 256, 8, 1).padding_mb == 0
    assert features("nonfused:deepgemm_fp8_psum", 32, 160, 37_748_736, 8, 6144, 2048, 256)[padding] == 0
    assert geometry(FP8, 32, 6144, 2048, 256, 8, 1).padding_mb == 0
    # at T = 8192 the bound (65,536 routed rows + 127 per expert: 766 blocks) still launches about 130 blocks past
    # the routed ones
    large = geometry(GROUPED, 8192, 6144, 2048, 256, 8, 1)
    assert large.padding_mb == pytest.approx((766 - large.m_blocks) * per_block) and 120 < 766 - large.m_blocks < 140


def test_psum_scheduler_walk_is_exposed_before_the_first_tile_and_after_the_last():
    walk = TERMS.index("per thousand steps of the psum layout's scheduler walk its tiles do not hide (both GEMMs)")
    # one tile per SM: the walk past the prologue's 35 steps splits in two exposed halves, all of it on the path
    assert exposed_walk(1024, 1, 0.1) == pytest.approx(1024 - WALK_HIDDEN_STEPS)
    assert exposed_walk(20, 1, 0.1) == 0  # within the prologue
    assert exposed_walk(1024, 0, 0.1) == pytest.approx(1024 - WALK_HIDDEN_STEPS)  # an SM dealt no tile walks it all
    # three tiles: four segments of 247.25 steps; a tile of 0.25 MB loads for 111 of them, so each of the two
    # segments between tiles exposes 136
    segment = (1024 - WALK_HIDDEN_STEPS) / 4
    between = segment - 0.25 * WALK_STEPS_PER_TILE_MB
    assert 110 < 0.25 * WALK_STEPS_PER_TILE_MB < 112
    assert exposed_walk(1024, 3, 0.25) == pytest.approx(2 * segment + 2 * between)
    assert exposed_walk(1024, 3, 1.0) == pytest.approx(2 * segment)  # a tile of 1 MB hides a whole segment
    # the expert-count probe (H 2048, I 512, top-8, one rank): T = 1 deals one tile per SM in both GEMMs, so the
    # exposed walk is 2 x (E - 35) steps, 0.138 us each pair as measured; at T = 8 and 1024 experts, 0.72 of it
    for e in (64, 128, 256, 512, 1024):
        assert geometry(Kernel.GROUPED_PSUM, 1, 2048, 512, e, 8, 1).walk_steps == pytest.approx(2 * (e - 35))
    at_8 = geometry(Kernel.GROUPED_PSUM, 8, 2048, 512, 1024, 8, 1).walk_steps
    assert at_8 / (2 * (1024 - 35)) == pytest.approx(0.72, abs=0.01)
    # only the psum layout walks
    assert geometry(GROUPED, 1, 2048, 512, 1024, 8, 1).walk_steps == 0
    assert geometry(FP8, 1, 2048, 512, 512, 8, 1).walk_steps == 0
    x = features("nonfused:deepgemm_fp8_psum", 1, 8, 12_582_912, 8, 2048, 512, 1024)
    assert x[walk] == pytest.approx(2 * (1024 - 35) / 1e3)
    assert walk in PATH_TERMS[Kernel.GROUPED_PSUM] and walk not in PATH_TERMS[Kernel.GROUPED]


def test_nnls_keeps_coefficients_non_negative():
    rows = [(1.0, float(x), -float(x)) for x in range(1, 9)]
    ys = [2.0 + 3.0 * x for x in range(1, 9)]
    assert nnls(rows, ys, (0, 1, 2)) == pytest.approx([2.0, 3.0, 0.0], abs=1e-9)
    only = nnls(rows, ys, (0, 2))  # the -x column would need a negative coefficient: it gets 0, the constant alone
    assert only[1:] == [0.0, 0.0] and only[0] == pytest.approx(sum(1 / y for y in ys) / sum(1 / y**2 for y in ys))


def test_robust_fit_is_not_pulled_by_one_point_no_term_expresses():
    rows = [(1.0, float(x)) for x in range(1, 13)]
    ys = [10.0 + 2.0 * x for x in range(1, 13)]
    ys[-1] *= 1.8  # one point the terms cannot express
    plain, robust = nnls(rows, ys, (0, 1)), robust_nnls(rows, ys, (0, 1))
    assert abs(robust[1] - 2.0) < abs(plain[1] - 2.0) / 3


def test_loso_table_is_the_committed_result_and_the_docs_quote_it():
    out = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "cost_model_loso.py")], capture_output=True, text=True, check=True
    ).stdout
    saved = (ROOT / "benchmarks/results/h200/2026-12-03/model/cost_model_loso.txt").read_text()
    assert out == saved
    docs = (ROOT / "docs/performance.md").read_text()
    assert all(line in docs for line in saved.splitlines() if line.startswith(("|", "package model", "previous")))


def test_predicted_before_measured_and_the_rates_are_the_committed_results():
    bench, res = ROOT / "benchmarks", "benchmarks/results/h200/2026-12-02"
    run = [
        sys.executable,
        str(bench / "cost_model_predict.py"),
        "--against",
        f"{res}/cost_model_predict_before_measuring.json",
    ]
    sweeps = [f"{res}/fused_vs_nonfused_qwen3.5-397b-a17b.json", f"{res}/fused_vs_nonfused_kimi-k2_large_t.json"]
    out = subprocess.run([*run, *sweeps], capture_output=True, text=True, check=True, cwd=ROOT).stdout
    assert out == (ROOT / res / "cost_model_predict_vs_measured.txt").read_text()
    folders = [str(ROOT / "benchmarks/results/h200" / day) for day in ("2026-12-01", "2026-12-02")]  # as committed
    rates = subprocess.run(
        [sys.executable, str(bench / "cost_model_loso.py"), "--rates", *folders],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert rates == (ROOT / res / "fp8_block_m_128_rates.txt").read_text()
    spilled = [line for line in rates.splitlines() if line.startswith("| Qwen/Qwen3") and "| 512 |" in line]
    assert len(spilled) == 4 and all(float(line.split("|")[-2]) < 1.1 for line in spilled)  # 512 local experts


RESULTS = ROOT / "benchmarks/results/h200/2026-12-02"
MEGA = re.compile(
    r"MegaMoESM90(FP4)?Config\(num_ranks=(\d+), num_experts=(\d+), hidden=(\d+), intermediate_hidden=(\d+), "
    r"num_max_tokens_per_rank=\d+, num_tokens=(\d+), num_topk=(\d+).*?swap_ab=(\w+)[,)].*?: MegaMoESM90Config\("
    r"block_m=(\d+), block_n=(\d+), .*?num_experts_per_wave=(\d+),"
)


def printed_mega() -> list[tuple]:
    """Every fused configuration DeepGEMM printed on the H200 (``DG_PRINT_CONFIGS=1``): the FP8xMXFP4 kernel for
    twelve shapes x eight T (``mega_config_probe.py``), the FP8 kernel for three shapes x five T (the probe of the
    grouped GEMMs), and the FP8 kernel again in the expert-count and H 2048 probes of 2026-12-03 (64-512 experts at
    T = 1-128; 256 experts at T = 512-8192)."""
    files = [RESULTS / "mega_config_probe_fp4.txt", RESULTS / "grouped_gemm_probe.txt", *PROBE_PRINTOUTS]
    text = "".join(f.read_text() for f in files)
    return sorted({m.groups() for m in MEGA.finditer(text)}, key=lambda v: (v[0] or "", *map(int, v[1:7])))


def test_the_probes_printed_both_fused_kernels():
    lines = printed_mega()
    assert sum(line[0] == "FP4" for line in lines) >= 96 and sum(line[0] is None for line in lines) >= 68


@pytest.mark.parametrize("line", printed_mega(), ids=lambda v: f"{v[0] or 'FP8'}-E{v[2]}-H{v[3]}-I{v[4]}-T{v[5]}")
def test_fused_geometry_is_what_deep_gemm_printed(line):
    fp4, ranks, e, h, i, t, k, swap, block_m, block_n, wave = line
    g = geometry(FP4 if fp4 else FP8, int(t), int(h), int(i), int(e), int(k), int(ranks))
    assert (g.block_m, g.block_n, g.experts_per_wave) == (int(block_m), int(block_n), int(wave))
    assert (g.regime is Regime.SWAP_AB) == (swap == "true")
