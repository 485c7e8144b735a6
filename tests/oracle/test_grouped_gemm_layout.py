"""The port of DeepGEMM's SM90 grouped-GEMM heuristic against the configurations DeepGEMM itself printed.

``benchmarks/grouped_gemm_probe.py`` ran the non-fused path of twelve MoE shapes at five token counts on the H200
with ``DG_PRINT_CONFIGS=1``, and the expert-count and H 2048 probes of 2026-12-03 (``fused_vs_nonfused.py`` with
the same variable: H 2048 / I 512 at 64-1024 experts, H 4096 / I 2048 at 64 and 512, T = 1-128; H 2048 / I 2048
and MiMo-V2-Flash at T = 512-8192) printed more: each line is a ``GemmDesc`` (rows launched, N, K, psum or
m_indices layout) and the ``GemmConfig`` and ``LayoutInfo`` DeepGEMM chose. The port must give the same blocks,
cluster, stages, waves and cycle estimate for every one of them.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from moe_oracle.cost.grouped_gemm import best_layout, rows_bound
from tests.oracle.helpers import PROBE_PRINTOUTS

PROBES = (
    Path(__file__).resolve().parents[2] / "benchmarks/results/h200/2026-12-02/grouped_gemm_probe.txt",
    *PROBE_PRINTOUTS,
)
LINE = re.compile(
    r"GemmDesc\(gemm_type=(\d+), kernel_type=1, m=(\d+), n=(\d+), k=(\d+), .*?\): GemmConfig\(layout=Layout\("
    r"swap_ab=0, block_m=(\d+), block_n=(\d+), block_k=128, cluster_m=(\d+), cluster_n=(\d+)\).*?"
    r"num_stages=(\d+)\).*?LayoutInfo\(num_waves=(\d+), last_wave_util=(\d+), num_cycles=(\d+)\)"
)
PSUM, M_INDICES = 5, 1  # GemmType::MGroupedContiguousWithPsumLayout, GemmType::MGroupedContiguous


def printed() -> list[tuple[int, ...]]:
    return sorted({tuple(map(int, m.groups())) for f in PROBES for m in LINE.finditer(f.read_text())})


def test_the_probe_printed_both_layouts_of_every_shape():
    lines = printed()
    assert len(lines) >= 350  # 240 from the first probe, 116 from the later ones
    assert {line[0] for line in lines} == {PSUM, M_INDICES}


def _id(v: tuple[int, ...]) -> str:
    return f"{'psum' if v[0] == PSUM else 'midx'}-m{v[1]}-n{v[2]}-k{v[3]}"


@pytest.mark.parametrize("line", printed(), ids=_id)
def test_port_picks_what_deep_gemm_printed(line):
    gemm_type, m, n, k, *expected = line
    got = best_layout(m, n, k, psum=gemm_type == PSUM)
    assert [
        got.block_m, got.block_n, got.cluster_m, got.cluster_n, got.num_stages,
        got.num_waves, got.last_wave_util, got.num_cycles,
    ] == expected  # fmt: skip


def test_rows_bound_of_the_probe_shapes():
    assert rows_bound(512, 8, 128) == 20352  # Qwen3-30B-A3B at T = 512 (the probe's rows=20352)
    assert rows_bound(4096, 10, 512) == 105984  # Qwen3-Next-80B-A3B at T = 4096
    assert rows_bound(0, 8, 128) == 0
