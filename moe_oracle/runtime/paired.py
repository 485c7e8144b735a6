"""Paired comparison of two timed paths: the median per-round difference and a distribution-free interval for it.

Two paths timed in the same rounds (``timing.time_interleaved``, every path replayed in every round, adjacently
with ``sweep=True``) give one pair of per-round medians per round. A clock, power or neighbour drift between rounds
moves both members of a pair together, so the per-round difference ``d_r = b_r - a_r`` carries the comparison and
the drift cancels; the spread of either path's own per-round medians does not.

:func:`paired_difference` returns the median of the ``d_r`` and the **sign-test** confidence interval for the median
difference: the order statistics ``[d_(k), d_(n+1-k)]`` (1-based, ascending) with ``k`` the largest rank for which
``P(Bin(n, 1/2) <= k - 1) <= (1 - confidence) / 2``. It assumes only that the rounds are independent and that the
difference has a continuous distribution (no normality, no symmetry); its exact coverage ``1 - 2 P(Bin(n, 1/2) <=
k - 1)`` is at least ``confidence`` and is returned with it (15 rounds at 95%: ``[d_(4), d_(12)]``, 96.5%). No
random numbers: the same rounds give the same interval. A lead is **measurable** when the interval excludes 0.

Pure Python (no torch): the benchmarks call it on the rounds a GPU measured, the tests on numbers.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

#: fewest rounds that give any 95% sign-test interval (n = 6: [min, max], coverage 1 - 2/64 = 96.9%)
MIN_ROUNDS_95 = 6


@dataclass(frozen=True)
class PairedDifference:
    """The per-round differences ``b - a`` summarised (same unit as the inputs, e.g. microseconds).

    ``median``: median of the differences; ``low``/``high``: the sign-test interval for the median difference;
    ``coverage``: its exact coverage (>= the confidence asked for); ``rounds``: number of pairs.
    """

    median: float
    low: float
    high: float
    coverage: float
    rounds: int

    @property
    def measurable(self) -> bool:
        """Does the interval exclude 0 (the median difference is not 0 at the stated coverage)?"""
        return self.low > 0 or self.high < 0

    def verdict(self) -> str:
        """``b faster``, ``a faster`` (interval below / above 0) or ``tie`` (interval contains 0)."""
        if self.high < 0:
            return "b faster"
        if self.low > 0:
            return "a faster"
        return "tie"

    def to_json(self) -> dict[str, float | int | str]:
        return {
            "median": self.median,
            "low": self.low,
            "high": self.high,
            "coverage": self.coverage,
            "rounds": self.rounds,
            "verdict": self.verdict(),
        }


def sign_test_rank(n: int, confidence: float = 0.95) -> tuple[int, float]:
    """The rank ``k`` (1-based) of the sign-test interval ``[d_(k), d_(n+1-k)]`` for ``n`` pairs, and its coverage.

    Raises ``ValueError`` when ``n`` pairs are too few for any interval at ``confidence`` (fewer than
    :data:`MIN_ROUNDS_95` at 95%) or ``confidence`` is not in (0, 1).
    """
    if not 0 < confidence < 1:
        raise ValueError(f"confidence {confidence} is not in (0, 1): give e.g. 0.95")
    tail = (1 - confidence) / 2
    k, cdf = 0, 0.0  # cdf = P(Bin(n, 1/2) <= k) while k grows
    while k < n:
        nxt = cdf + math.comb(n, k) / 2**n
        if nxt > tail:
            break
        cdf, k = nxt, k + 1
    if k == 0:
        raise ValueError(
            f"{n} rounds give no sign-test interval at {confidence:.0%}: P(all {n} of one sign) ="
            f" {1 / 2 ** (n - 1):.3f} > {1 - confidence:.3f}; time at least {_fewest(confidence)} rounds"
        )
    return k, 1 - 2 * cdf


def _fewest(confidence: float) -> int:
    n = 1
    while 1 / 2 ** (n - 1) > 1 - confidence:
        n += 1
    return n


def paired_difference(b: Sequence[float], a: Sequence[float], confidence: float = 0.95) -> PairedDifference:
    """Median and sign-test interval of ``b[r] - a[r]`` over the rounds ``r`` (module docstring).

    ``b`` and ``a``: one value per round, in round order, equally many. Raises ``ValueError`` on unequal lengths
    or too few rounds (:func:`sign_test_rank`).
    """
    if len(b) != len(a):
        raise ValueError(f"{len(b)} rounds of b but {len(a)} of a: pair the same rounds of both paths")
    d = sorted(x - y for x, y in zip(b, a, strict=True))
    k, coverage = sign_test_rank(len(d), confidence)
    return PairedDifference(statistics.median(d), d[k - 1], d[len(d) - k], coverage, len(d))
