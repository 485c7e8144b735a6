"""Where the cost model cannot rank two paths: a predicted gap inside its transfer error.

On a shape nobody measured, a path's time comes from a fit over other shapes (:func:`moe_oracle.cost.calibration.
fit_pooled`), whose error on a left-out shape is a few percent at the median and larger at its worst
(``benchmarks/cost_model_loso.py``, docs/performance.md §16). When two paths' estimates are closer than that, the
ranking between them is the model's guess, not its answer: every output that ranks them says so, with the way to
settle it (``moe-oracle tune`` measures both paths on the GPU in hand), and the choice is left as ranked.

:data:`NEAR_TIE` is the band, set from the leave-one-shape-out scoring over the sixteen shapes measured on the H200
(173 (shape, T) cells of an FP8 checkpoint, ``benchmarks/cost_model_loso.py --near-ties``): the error of the predicted
ratio between the two paths ranked first is 3.2% at the median and 5.7% at the 75th percentile, and a 5% band flags
36 cells, 4 of the 6 whose choice was more than 1% slower than the best path among them (the other two: Qwen3.5-397B
at T = 8192, 1.9%, where two runs of one shape move a ratio between paths by up to 8.5%, docs/performance.md §17.3,
and Qwen3-Next-80B at T = 32, 5.1%, whose fused FP8 time is predicted 8.8% slow, §18.3). A 2% band, the first
choice, was set on thirteen shapes; the two cells over 1% of the three shapes measured after it, ERNIE-4.5-21B-A3B
at T = 256 and 512, had predicted gaps of 3.1% and 4.5%. Estimates of this shape's own measured
points (or own fit) are not banded: their ranking is the measurement's.
"""

from __future__ import annotations

from dataclasses import dataclass

from moe_oracle.cost.model import CostEstimate

#: predicted gap (slower / faster - 1) below which two estimates, one of them from other shapes, are a near tie
NEAR_TIE = 0.05


def predicted_gap(a: CostEstimate, b: CostEstimate) -> float:
    """How much slower the slower of ``a`` and ``b`` is predicted to be: slower / faster - 1 (0 when the faster costs
    nothing)."""
    fast, slow = sorted((a.us, b.us))
    return slow / fast - 1 if fast > 0 else 0.0


def is_near_tie(a: CostEstimate, b: CostEstimate, band: float = NEAR_TIE) -> bool:
    """True when ``a`` and ``b`` are within ``band`` of each other (:func:`predicted_gap`) and at least one of them
    was estimated from other shapes (:attr:`CostEstimate.transferred`)."""
    return (a.transferred or b.transferred) and min(a.us, b.us) > 0 and predicted_gap(a, b) < band


@dataclass(frozen=True)
class NearTie:
    """Two paths the model ranks within :data:`NEAR_TIE` of each other on an unmeasured shape.

    ``paths``: the keys, the one ranked first first; ``gap``: the largest predicted slower / faster - 1 over
    ``tokens``, the span of tokens per rank (first, last) where they tie, or None for the workload's weighted cost."""

    paths: tuple[str, str]
    gap: float
    tokens: tuple[int, int] | None = None

    def where(self) -> str:
        """``the workload`` or ``T 256-1024`` (tokens per rank)."""
        if self.tokens is None:
            return "the workload"
        first, last = self.tokens
        return f"T {first}" if first == last else f"T {first}-{last}"

    def to_json(self) -> dict[str, object]:
        return {
            "paths": list(self.paths),
            "gap": round(self.gap, 4),
            "tokens": None if self.tokens is None else list(self.tokens),
            "band": NEAR_TIE,
        }


def near_tie_advice(ties: tuple[NearTie, ...], device: str, tokens: tuple[int, ...]) -> str:
    """One note for ``ties`` (at least one): what ties where, and the ``moe-oracle tune`` run (its ``tokens``, the
    batch sizes per rank the ties span) that settles it on ``device``."""
    parts = "; ".join(f"{t.where()}: {t.paths[0]} vs {t.paths[1]} ({t.gap:.1%} apart)" for t in ties)
    return (
        f"near tie the cost model cannot call (predicted within {NEAR_TIE:.0%}, estimated from other shapes): {parts}; "
        f"the ranking there is a guess: run moe-oracle tune on the serving GPU ({device}) with --tokens "
        f"{','.join(map(str, tokens))} to measure both (docs/performance.md §16)"
    )
