"""Calibration points as data, and the fit the cost model uses for shapes nobody measured.

A calibration entry holds kernel times (microseconds) for one variant on one device class at one EP size and
one shape. :func:`fit_pooled` solves, by non-negative least squares on relative error over the entries of every
shape measured for a path, ``t = sum_i c_i * x_i`` with one term ``x_i`` (:data:`TERMS`) per kind of work a
call does on one rank, counted in the blocks the kernel's own heuristics pick (:mod:`moe_oracle.cost.geometry`):

- a launch and grid barriers (fixed); bookkeeping over every local expert (non-fused); the fused scheduler's
  walk over every local expert on every SM, each step a lookup over ``ceil(E_local / 32)`` registers (on the
  H200 at T = 1 a 512-expert layer takes about 170 us beyond streaming its active experts' weights, a 64-expert
  one about 45);
- the active experts' weight MB streamed once, and again for every further M-block of an expert (what L2 does
  not catch); the MMA work of the M-blocks as padded to BLOCK_M (large T with few experts: 64 experts at
  T = 4096 run 4.5 blocks of 128 for 512 tokens), except the FP8xMXFP4 kernel's swapAB blocks, which run an MMA
  only as wide as their tokens (8 to 64 rows, ``geometry.FP4_SWAP_L1_WIDTHS``); token-pair activations (FP8 in,
  BF16 out);
- the weight MB of the busiest SM (tiles are dealt in whole rounds over the 132 SMs: at T = 1 with H 8192
  the 448 L1 tiles of 8 experts take 4 rounds of 1 MB); the expert waves run one after the other (1 to 4
  tokens per expert); a cost per tile of each block configuration (swapAB, BLOCK_M 64, BLOCK_M 128: pipeline
  fill and epilogue, which dominate tiles with a short K);
- in the FP8 kernel at BLOCK_M 128, the scheduler's walk counted again (its lookups spill, below), and with more
  than 384 local experts one rate per weight MB it streams (an expert's weights once per M-block) in place of the
  block terms, the main loop itself slowed. At BLOCK_M 128 the kernel's 512 epilogue threads get 112 registers each
  (``sm90_fp8_mega_moe.cuh:462-470``: "only 3584 registers of headroom at epilogue=112"), the scheduler holds
  ``ceil(E_local / 32)`` per-lane token counts in every thread (``scheduler/mega_moe.cuh``), and the kernels the
  H200 compiled keep a stack frame that grows with the local experts: 48, 72, 104-112, 160 and 248 bytes at 64,
  128, 256, 384 and 512 (``cuobjdump --dump-resource-usage`` of the JIT cache; at BLOCK_M 64, 168 registers:
  0-32 bytes up to 256 experts, 112 at 512). Measured: Qwen3-Next (H 2048, I 512) and Qwen3.5-397B (H 4096,
  I 1024), both 512 experts, stream 0.92-1.07 TB/s of expert weights per M-block at T = 4096 and 8192, where the
  shapes of 64 to 384 experts stream 2.2-2.9 TB/s from H 3072 (Kimi-K2's 384 at T = 4096 and 8192: 2.6) and
  1.5-2.1 at H 2048 (Laguna-XS.2, Qwen3-30B); at BLOCK_M 64 the 512-expert shapes run at the others' rate. That
  spilled registers are what slows the main loop is inferred from the frame sizes and the times, not traced
  instruction by instruction (docs/performance.md §13.1);
- in the FP8 kernel at BLOCK_M 128 x BLOCK_N 256 with H >= 7168 (DeepSeek-V3, Kimi-K2), its own rate per padded
  TFLOP: the host turns on the split-phase hot path there (``split_phase_hot_path``,
  ``csrc/jit_kernels/impls/sm90_fp8_mega_moe.hpp:181-182``: the L1 and L2 blocks through separate compile-time
  lambdas), and its math warps rescale the running accumulator once per K-block (``rescale_l1_final``, from
  ``sm90_fp8_mega_moe.cuh:1081``) where a smaller H pre- and post-scales it around every K-block's WGMMAs; measured
  on one H200 in one run, DeepSeek-V3's shape took 23-24% less time per unit of work than GLM-5's (H 6144) at
  T = 4096 and 8192 (docs/performance.md §17.1);
- in the m_indices layout of the non-fused path, the MB its all-padding blocks load: DeepGEMM's TMA warp issues A
  and B for every K-block of every block it is dealt (``sm90_fp8_gemm_1d2d.cuh:175-206``; expert 0's weights for a
  block whose ``m_indices`` are -1) and the math warps wait for each before skipping the MMA (``:273-274``,
  ``:351-356``), so a padding block costs a tile's loads from L2, not only its scheduling (fit: 0.07 us per MB);
- in the psum layout, the scheduler's walk over every local expert that the SM's tiles do not hide
  (:func:`moe_oracle.cost.geometry.exposed_walk`: one dependent load per expert, each GEMM; on the H200 at T = 1
  with one tile per SM, 0.14 us per local expert for the two GEMMs, 137 us at 1024 experts).

Which terms a path's fit uses is :data:`PATH_TERMS` (the fused SM90 kernels, the non-fused grouped GEMMs, and
the five-term model for paths whose blocks are not modelled). One shape cannot tell most terms apart: its own
fit (another EP of a measured shape) keeps fixed + active-expert MB + TFLOP. Terms the data do not support get
a zero coefficient. ``benchmarks/cost_model_loso.py`` scores the fit on shapes it was not fit on.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from contextvars import ContextVar
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources

from moe_oracle.cost.active_experts import expected_active_experts
from moe_oracle.cost.geometry import Kernel, Regime, geometry, kernel_for


@dataclass(frozen=True)
class Calibration:
    variant: str
    device: str
    ep: int
    library: str
    measured: bool
    source: str
    hidden_size: int
    moe_intermediate_size: int
    num_experts: int
    top_k: int
    expert_bytes: int
    points: tuple[tuple[int, float | None, float], ...]
    #: "measured on this machine (date)" for an entry of a local calibration file (:mod:`moe_oracle.cost.local`)
    origin: str = ""

    @classmethod
    def from_entry(cls, e: dict) -> Calibration:
        """One entry of ``calibration.json``."""
        s = e["shape"]
        return cls(
            variant=e["variant"],
            device=e["device"],
            ep=e["ep"],
            library=e["library"],
            measured=e["measured"],
            source=e["source"],
            hidden_size=s["hidden_size"],
            moe_intermediate_size=s["moe_intermediate_size"],
            num_experts=s["num_experts"],
            top_k=s["top_k"],
            expert_bytes=s["expert_bytes"],
            points=tuple((int(t), a, float(us)) for t, a, us in e["points"]),
        )

    def to_entry(self) -> dict:
        """The ``calibration.json`` entry (inverse of :meth:`from_entry`)."""
        shape = ("hidden_size", "moe_intermediate_size", "num_experts", "top_k", "expert_bytes")
        head = ("variant", "device", "ep", "library", "measured", "source")
        return {
            **{k: getattr(self, k) for k in head},
            "shape": {k: getattr(self, k) for k in shape},
            "points": [list(p) for p in self.points],
        }


#: the fit's terms, in the order :func:`features` returns them (units: us per unit)
TERMS = (
    "fixed",
    "per local expert",
    "per scheduler step (local experts x ceil(local experts / 32), thousands)",
    "per active-expert MB",
    "per re-read expert MB (further M-blocks)",
    "per TFLOP",
    "per padded TFLOP (the rows the MMAs run: M-blocks x BLOCK_M; FP8xMXFP4 swapAB blocks as wide as their tokens)",
    "per token-pair MB",
    "per MB of the busiest SM",
    "per MB of one tile column (BLOCK_N x (H + I)) per further expert wave",
    "per tile, BLOCK_M 64 swapAB",
    "per tile, BLOCK_M 64",
    "per tile, BLOCK_M 128",
    "per MB streamed (expert MB x its M-blocks), FP8 kernel at BLOCK_M 128 with over 384 local experts",
    "per scheduler step at BLOCK_M 128, FP8 kernel (local experts x ceil(local experts / 32), thousands)",
    "per padded TFLOP, FP8 kernel's split-phase hot path (BLOCK_M 128, BLOCK_N 256, H >= 7168)",
    "per MB the m_indices layout's all-padding blocks load (every K-block of A and B; MMA skipped)",
    "per thousand steps of the psum layout's scheduler walk its tiles do not hide (both GEMMs)",
)
#: the previous model's five terms (fixed, local experts, active-expert MB, TFLOP, token-pair MB): paths whose
#: blocks are not modelled, and the "before" column of ``benchmarks/cost_model_loso.py``
FIVE_TERMS = (0, 1, 3, 5, 7)
#: the terms of one shape's own fit (fixed, active-expert MB, TFLOP), and with fewer points (fixed, MB)
ONE_SHAPE_TERMS = (0, 3, 5)
FEW_POINT_TERMS = (0, 3)
#: the terms each kind of path is fit with over several shapes
PATH_TERMS: dict[Kernel | None, tuple[int, ...]] = {
    Kernel.SM90_FP8: (0, 2, 3, 4, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
    Kernel.SM90_FP4: (0, 2, 3, 4, 6, 7, 8, 9, 10, 11, 12),
    Kernel.GROUPED: (0, 1, 3, 4, 6, 7, 8, 12, 16),
    Kernel.GROUPED_PSUM: (0, 3, 4, 6, 7, 8, 12, 17),
    None: FIVE_TERMS,
}
_TILE_TERM = {Regime.SWAP_AB: 10, Regime.SPLIT_N: 11, Regime.LARGE_M: 12}
#: local experts above which the SM90 FP8 kernel at BLOCK_M 128 runs its main loop spilled (measured on the H200:
#: 384 runs at the rate of 64-256, 512 at 0.4x of it; the module docstring)
SPILLED_LARGE_M_EXPERTS = 384


@dataclass(frozen=True)
class Fit:
    """Coefficients (us per unit of each of :data:`TERMS`), the worst relative error on the points fit, their count,
    and the fastest padded MMA rate (TFLOP/s) any of them sustained (0: no cap). A prediction is never faster than
    its padded work at that rate: the power limit caps the sustained rate, not the terms (on the H200, 700 W, the SM
    clock falls to 1425-1710 MHz under the non-fused GEMMs of the 64-expert shapes at T = 4096, which then run
    about 1,000 TFLOP/s however much work they are given)."""

    coef: tuple[float, ...]
    max_rel_error: float
    num_points: int
    peak_padded_tflop_s: float = 0.0

    @property
    def fixed_us(self) -> float:
        return self.coef[0]

    def predict(self, x: tuple[float, ...]) -> float:
        """Microseconds for the :func:`features` ``x``."""
        linear = sum(c * v for c, v in zip(self.coef, x, strict=True))
        if self.peak_padded_tflop_s > 0 and x[6] > 0:
            return max(linear, x[6] / self.peak_padded_tflop_s * 1e6)
        return linear


#: The entries of the local calibration file the current decision uses (set by
#: :func:`moe_oracle.cost.local.active_for`); they come before the package's.
ACTIVE_LOCAL: ContextVar[tuple[Calibration, ...]] = ContextVar("moe_oracle_local_calibration", default=())


def load_calibrations() -> tuple[Calibration, ...]:
    """The local entries in use (if any), then the package's (``moe_oracle/data/calibration.json``)."""
    return ACTIVE_LOCAL.get() + _load()


@lru_cache(maxsize=1)
def _load() -> tuple[Calibration, ...]:
    text = resources.files("moe_oracle.data").joinpath("calibration.json").read_text(encoding="utf-8")
    return tuple(Calibration.from_entry(e) for e in json.loads(text)["entries"])


def features(
    path: str,
    tokens: float,
    active: float,
    expert_bytes: int,
    top_k: int,
    hidden: int,
    inter: int,
    num_experts: int,
    ep: int = 1,
) -> tuple[float, ...]:
    """The :data:`TERMS` for one call on ``path`` (a calibration's variant key) of ``tokens`` tokens per rank with
    ``active`` experts active on the rank, ``expert_bytes`` per expert, at EP ``ep``. FLOPs count the three
    projections (2 x T x top-k x 3 x H x I); token pairs T x top-k x H x (1 byte in + 2 bytes out)."""
    local = max(1, num_experts // max(ep, 1))
    flops = 2.0 * tokens * top_k * 3 * hidden * inter
    x = [0.0] * len(TERMS)
    x[0], x[1], x[2] = 1.0, float(local), local * math.ceil(local / 32) / 1e3
    x[3], x[5], x[7] = active * expert_bytes / 1e6, flops / 1e12, tokens * top_k * hidden * 3 / 1e6
    kernel = kernel_for(path)
    if kernel is not None:
        g = geometry(kernel, tokens, hidden, inter, num_experts, top_k, ep)
        x[4] = max(0.0, g.m_blocks - active) * expert_bytes / 1e6
        x[6] = (g.mma_rows_l1 * 4.0 + g.mma_rows_l2 * 2.0) * hidden * inter / 1e12  # both GEMMs, as padded
        x[8] = g.critical_mb
        x[9] = (g.expert_waves - 1) * g.block_n * (hidden + inter) / 1e6
        x[_TILE_TERM[g.regime]] = g.tiles
        x[16], x[17] = g.padding_mb, g.walk_steps / 1e3
        if kernel is Kernel.SM90_FP8 and g.regime is Regime.LARGE_M and local > SPILLED_LARGE_M_EXPERTS:
            # the spilled main loop sets the pace: one rate per weight MB streamed (once per M-block), the block
            # terms give way (see the module docstring)
            x[13] = x[3] + x[4]
            x[2] = x[4] = x[6] = x[8] = x[9] = x[12] = 0.0
        elif kernel is Kernel.SM90_FP8 and g.regime is Regime.LARGE_M:
            x[14] = x[2]  # the same walk, its per-lane counts spilled
            if g.split_phase:
                x[15], x[6] = x[6], 0.0
    return tuple(x)


def nnls(
    rows: Sequence[Sequence[float]], ys: Sequence[float], use: Sequence[int], weights: Sequence[float] | None = None
) -> list[float]:
    """Coefficients >= 0 over the terms ``use`` (the others 0) minimising the sum of squared relative errors
    ``w * (row . c - y) / y`` (``weights`` w, default 1): Lawson and Hanson's active-set method, columns scaled
    to unit size."""
    w = [1.0] * len(ys) if weights is None else list(weights)
    a = [[row[i] / y * wi for i in use] for row, y, wi in zip(rows, ys, w, strict=True)]
    n = len(use)
    scale = [max((abs(r[j]) for r in a), default=0.0) or 1.0 for j in range(n)]
    a = [[v / s for v, s in zip(r, scale, strict=True)] for r in a]
    ata = [[sum(r[i] * r[j] for r in a) for j in range(n)] for i in range(n)]
    atb = [sum(r[i] * wi for r, wi in zip(a, w, strict=True)) for i in range(n)]  # b = w (relative error)

    def solve(free: list[int]) -> list[float]:
        m = [[ata[i][j] for j in free] + [atb[i]] for i in free]
        k = len(free)
        for col in range(k):
            piv = max(range(col, k), key=lambda r: abs(m[r][col]))
            m[col], m[piv] = m[piv], m[col]
            if abs(m[col][col]) < 1e-12:
                continue
            for r in range(k):
                if r != col:
                    f = m[r][col] / m[col][col]
                    m[r] = [u - f * v for u, v in zip(m[r], m[col], strict=True)]
        z = [0.0] * n
        for pos, i in enumerate(free):
            z[i] = m[pos][k] / m[pos][pos] if abs(m[pos][pos]) >= 1e-12 else 0.0
        return z

    x = [0.0] * n
    free: list[int] = []
    for _ in range(3 * n + 10):
        grad = [atb[i] - sum(ata[i][j] * x[j] for j in range(n)) for i in range(n)]
        candidates = [i for i in range(n) if i not in free and grad[i] > 1e-10]
        if not candidates:
            break
        free.append(max(candidates, key=lambda i: grad[i]))
        while True:
            z = solve(sorted(free))
            if all(z[i] > 0 for i in free):
                x = z
                break
            alpha = min(x[i] / (x[i] - z[i]) for i in free if z[i] <= 0)
            x = [xi + alpha * (zi - xi) for xi, zi in zip(x, z, strict=True)]
            free = [i for i in free if x[i] > 1e-12]
            x = [xi if i in free else 0.0 for i, xi in enumerate(x)]
            if not free:
                break
    coef = [0.0] * len(rows[0]) if rows else []
    for j, i in enumerate(use):
        coef[i] = max(0.0, x[j] / scale[j])
    return coef


def _solve(rows: Sequence[Sequence[float]], ys: Sequence[float], use: tuple[bool, ...]) -> list[float]:
    """Least squares on relative error over the terms ``use`` marks (the others get 0)."""
    idx = [i for i, u in enumerate(use) if u]
    n = len(idx)
    ata = [[0.0] * n for _ in range(n)]
    aty = [0.0] * n
    for row, y in zip(rows, ys, strict=False):
        w = 1.0 / y  # relative error
        scaled = [row[i] * w for i in idx]
        for a in range(n):
            aty[a] += scaled[a] * y * w
            for b in range(n):
                ata[a][b] += scaled[a] * scaled[b]
    # Gaussian elimination with partial pivoting.
    m = [ata[i] + [aty[i]] for i in range(n)]
    coef = [0.0] * len(use)
    for col in range(n):
        piv = max(range(col, n), key=lambda r: abs(m[r][col]))
        m[col], m[piv] = m[piv], m[col]
        if abs(m[col][col]) < 1e-30:
            return coef
        for r in range(n):
            if r != col:
                f = m[r][col] / m[col][col]
                m[r] = [x - f * y for x, y in zip(m[r], m[col], strict=False)]
    for k, i in enumerate(idx):
        coef[i] = m[k][n] / m[k][k]
    return coef


@dataclass(frozen=True)
class DecodeFit:
    """``t = fixed_us + us_per_expert * active experts`` over the decode points (T <= ``max_tokens``)."""

    fixed_us: float
    us_per_expert: float
    max_rel_error: float
    num_points: int


def decode_fit(cal: Calibration, max_tokens: int = 128) -> DecodeFit:
    """Least-squares (relative error) fit of a fixed cost plus a cost per active expert to the points with
    ``T <= max_tokens`` (active experts as measured, else expected from uniform routing)."""
    rows, ys = [], []
    for tokens, active, us in cal.points:
        if tokens <= max_tokens:
            a = active if active is not None else expected_active_experts(cal.num_experts, cal.top_k, tokens, cal.ep)
            rows.append((1.0, float(a)))
            ys.append(us)
    if len(ys) < 2:
        raise ValueError(f"{cal.variant}: fewer than two points with T <= {max_tokens}")
    coef = _solve(rows, ys, (True, True))
    err = max(abs(coef[0] + coef[1] * r[1] - y) / y for r, y in zip(rows, ys, strict=True))
    return DecodeFit(coef[0], coef[1], err, len(ys))


def fit(cal: Calibration) -> Fit:
    """Fit the model to ``cal``'s points."""
    return fit_pooled((cal,))


#: Huber threshold (relative error) and reweighting rounds of :func:`robust_nnls`
HUBER_DELTA = 0.05
HUBER_ROUNDS = 10


def robust_nnls(rows: Sequence[Sequence[float]], ys: Sequence[float], use: Sequence[int]) -> list[float]:
    """:func:`nnls` reweighted to Huber's loss on relative error: a point off by more than :data:`HUBER_DELTA`
    counts linearly, not squared, so the few points whose cost no term expresses (a clock the power limit drops
    for one shape's largest T) do not pull every other shape's coefficients."""
    coef = nnls(rows, ys, use)
    for _ in range(HUBER_ROUNDS):
        err = [abs(sum(c * v for c, v in zip(coef, r, strict=True)) / y - 1.0) for r, y in zip(rows, ys, strict=True)]
        coef = nnls(rows, ys, use, [1.0 if e <= HUBER_DELTA else math.sqrt(HUBER_DELTA / e) for e in err])
    return coef


def calibration_features(cal: Calibration) -> list[tuple[tuple[float, ...], float]]:
    """(features, measured us) of every point of ``cal`` (active experts as measured, else expected)."""
    out = []
    for tokens, active, us in cal.points:
        if active is None:
            active = expected_active_experts(cal.num_experts, cal.top_k, tokens, cal.ep)
        shape = (cal.expert_bytes, cal.top_k, cal.hidden_size, cal.moe_intermediate_size, cal.num_experts, cal.ep)
        out.append((features(cal.variant, tokens, active, *shape), us))
    return out


@lru_cache(maxsize=64)
def fit_pooled(cals: tuple[Calibration, ...], terms: tuple[int, ...] | None = None, robust: bool = True) -> Fit:
    """Fit the model to the points of several calibrations at once (one variant, several shapes): each point's
    features come from its own shape, so the coefficients are what the shapes share. Over several shapes the fit
    uses the variant's :data:`PATH_TERMS`; one shape cannot tell most of them apart (every per-shape term is a
    constant there, pairs are proportional to TFLOP): its fit has :data:`ONE_SHAPE_TERMS`, with fewer points than
    that :data:`FEW_POINT_TERMS`. Several shapes are fit with :func:`robust_nnls`, one shape by plain least squares
    (:func:`nnls`), and with the package's terms a fit over several shapes caps its predictions at the fastest
    padded MMA rate they sustained (:class:`Fit`). ``terms`` (indices into :data:`TERMS`) replaces the choice of
    terms (no cap) and ``robust=False`` fits several shapes by plain least squares too: a benchmark scoring another
    model."""
    points = [p for cal in cals for p in calibration_features(cal)]
    rows, ys = [r for r, _ in points], [y for _, y in points]
    shapes = {(c.hidden_size, c.moe_intermediate_size, c.num_experts // c.ep, c.top_k) for c in cals}
    default = terms is None
    if terms is None:
        terms = PATH_TERMS.get(kernel_for(cals[0].variant), FIVE_TERMS) if len(shapes) > 1 else ONE_SHAPE_TERMS
        if len(rows) < len(terms):
            terms = FEW_POINT_TERMS
    solver = robust_nnls if robust and len(shapes) > 1 else nnls  # one shape's points are one kernel's behaviour
    cap = 0.0
    if default and len(shapes) > 1:  # the fastest sustained MMA rate the shapes reached (see Fit)
        cap = max((r[6] / y * 1e6 for r, y in zip(rows, ys, strict=True) if r[6] > 0), default=0.0)
    fitted = Fit(tuple(solver(rows, ys, terms)), 0.0, len(ys), cap)
    err = max(abs(fitted.predict(r) - y) / y for r, y in zip(rows, ys, strict=True))
    return Fit(fitted.coef, err, len(ys), cap)
