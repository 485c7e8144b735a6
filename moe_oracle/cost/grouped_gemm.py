"""The block layout DeepGEMM's SM90 grouped FP8 GEMM picks for a non-fused MoE call, ported from its source.

``m_grouped_fp8_gemm_nt_contiguous`` (PR #323, 8ddf7f96) on SM90 runs ``sm90_m_grouped_fp8_gemm_contiguous_1d2d``
(``csrc/jit_kernels/impls/sm90_fp8_gemm_1d2d.hpp:147-180``): a ``GemmDesc`` with the launched rows ``m``, ``n``,
``k``, kernel type 1D2D and, without an expected M, ``expected_m = m`` and one expected group. Its configuration
is ``get_best_config<SM90ArchSpec>`` (``csrc/jit_kernels/heuristics/common.hpp``, ``sm90.hpp``): every legal
(BLOCK_M, BLOCK_N, cluster) candidate is costed by an L1/L2 traffic estimate divided by the last wave's
efficiency, and the first candidate with the fewest cycles wins. This module is that search, integer for integer
(C++ integer division and truncation kept), so the cost model counts the tiles the kernel really runs: BLOCK_N
is 192 for most MoE shapes from T = 16 (clusters of two M-blocks sharing the weight tile), 64-160 at T = 1.
``tests/oracle/test_grouped_gemm_layout.py`` checks it against the 240 configurations DeepGEMM printed on the H200
(``DG_PRINT_CONFIGS=1``, ``benchmarks/results/h200/2026-12-02/grouped_gemm_probe.txt``).

Units: rows, columns, bytes, cycles of DeepGEMM's estimate (not a time).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

#: ``SM90ArchSpec::smem_capacity`` (bytes)
SMEM_CAPACITY = 232448
#: ``kNumMaxStages`` of ``get_pipeline_config``
MAX_STAGES = 16
#: BLOCK_K of an FP8 GEMM (128 bytes of K per stage)
BLOCK_K = 128
#: ``get_mk_alignment_for_contiguous_layout`` on SM90: the only BLOCK_M of the contiguous layouts
CONTIGUOUS_BLOCK_M = 128
#: BLOCK_N candidates of the 1D2D kernel: multiples of 16 up to 192 (``end = 192``: register spills beyond)
BLOCK_N_CANDIDATES = tuple(range(16, 193, 16))


@dataclass(frozen=True)
class GroupedGemmLayout:
    """One grouped GEMM's configuration: blocks, cluster (``cluster_m`` M-blocks share a weight tile by TMA
    multicast), pipeline stages, and DeepGEMM's own estimate (waves over the SMs, blocks in the last wave,
    cycles)."""

    block_m: int
    block_n: int
    cluster_m: int
    cluster_n: int
    num_stages: int
    num_waves: int
    last_wave_util: int
    num_cycles: int


def rows_bound(tokens: int, top_k: int, num_experts: int, align: int = CONTIGUOUS_BLOCK_M) -> int:
    """Rows the non-fused path launches for ``tokens`` tokens: every routed row plus the worst-case padding of each
    expert's segment up to ``align``, rounded up to ``align`` (independent of the routing, so graph-safe)."""
    routed = tokens * top_k
    return -(-(routed + min(num_experts, routed) * (align - 1)) // align) * align


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


def _align(x: int, a: int) -> int:
    return _cdiv(x, a) * a


def _stages(block_m: int, block_n: int, k: int) -> int:
    """``get_pipeline_config`` for FP8 A/B, BF16 output, FP32 SFA and the 1D2D kernel's per-K SFB."""
    smem_cd = _align(block_m * block_n * 2, 1024)
    barriers = MAX_STAGES * 8 * 2
    uniform_sfb = 1 if BLOCK_K % block_n == 0 else 2
    extra_sfb = _align(_cdiv(k, BLOCK_K) * 4 * uniform_sfb, 8)
    per_stage = block_m * BLOCK_K + block_n * BLOCK_K + _align(block_m * 4, 128)
    return min((SMEM_CAPACITY - (smem_cd + barriers + extra_sfb)) // per_stage, MAX_STAGES)


def _candidates(n: int, k: int, psum: bool, num_sms: int) -> list[tuple[int, int, int, int, int]]:
    """``get_layout_candidates``: (block_m, block_n, cluster_m, cluster_n, stages) in DeepGEMM's order."""
    out = []
    for cluster_m in (1, 2):
        for cluster_n in (1, 2):
            cluster = cluster_m * cluster_n
            if cluster > 2 or num_sms % cluster:
                continue
            block_m = CONTIGUOUS_BLOCK_M
            for block_n in BLOCK_N_CANDIDATES:
                over = block_n - BLOCK_K
                if block_n > BLOCK_K and block_n % over and BLOCK_K % over:
                    continue  # the 1D2D kernel's unroll requirement
                if psum and _cdiv(n, block_n) % cluster:
                    continue  # multicast legality of the psum layout
                stages = _stages(block_m, block_n, k)
                if stages < 3 or (block_m * block_n < 128 * 192 and stages < 4):
                    continue  # too few stages to hide TMA latency
                out.append((block_m, block_n, cluster_m, cluster_n, stages))
    return out


def _cycles(m: int, n: int, k: int, block_m: int, block_n: int, cluster_m: int, cluster_n: int, num_sms: int):
    """``get_layout_info``: (waves, last-wave blocks, estimated cycles)."""
    blocks = _cdiv(m, block_m) * _cdiv(n, block_n)
    waves = _cdiv(blocks, num_sms)
    last = blocks % num_sms or num_sms
    l2_bw = int(min(64.0 * num_sms, 8e6 / 1.3e3))
    l1_bw = 128 * num_sms
    l2_ab = k * (block_m // cluster_n + block_n // cluster_m)
    l1_ab = k * (block_m + block_n)
    l1_tc = k * (max(64, block_m) + block_n) + block_m * block_n * 2
    cd = block_m * block_n * 2
    l2 = (l2_ab + cd) * blocks // l2_bw
    l1 = (l1_ab + l1_tc + cd) * blocks // l1_bw
    cycles = int(max(l1, l2) / (blocks / (waves * num_sms)))
    if cluster_m * cluster_n > 1 and waves <= 1:
        cycles = (1 << 63) - 1  # multicast is off when there is a single wave
    return waves, last, cycles


@lru_cache(maxsize=4096)
def best_layout(m: int, n: int, k: int, *, psum: bool, num_sms: int = 132) -> GroupedGemmLayout:
    """The layout ``get_best_config`` picks for an ``m x n x k`` contiguous grouped FP8 GEMM (``psum``: the
    ``use_psum_layout`` variant); ``m`` the launched rows (:func:`rows_bound`), ``n`` the weight rows, ``k`` the
    reduction (W13: ``n = 2I, k = H``; W2: ``n = H, k = I``)."""
    best: GroupedGemmLayout | None = None
    for block_m, block_n, cluster_m, cluster_n, stages in _candidates(n, k, psum, num_sms):
        waves, last, cycles = _cycles(max(m, 1), n, k, block_m, block_n, cluster_m, cluster_n, num_sms)
        if best is None or cycles < best.num_cycles:
            best = GroupedGemmLayout(block_m, block_n, cluster_m, cluster_n, stages, waves, last, cycles)
    if best is None:  # DeepGEMM asserts a candidate exists; every FP8 shape with k >= 128 has one
        raise ValueError(f"no SM90 grouped GEMM layout for n={n}, k={k}")
    return best
