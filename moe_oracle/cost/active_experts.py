"""Expected active experts per rank under uniform routing, and under skewed routing (:func:`skewed_rank`).

With ``T * ep`` tokens each choosing ``k`` of ``E`` experts, a given expert is hit with probability
``1 - (1 - k/E) ** (T * ep)``. Both the cost model and the calibration fits use it (for points
recorded without a measured active-expert count).
"""

from __future__ import annotations

import heapq
import math
import random
from functools import lru_cache


def expected_active_experts(num_experts: int, top_k: int, tokens_per_rank: int, ep: int) -> float:
    """Expected distinct experts one rank runs for ``tokens_per_rank`` tokens on every rank."""
    local = num_experts / ep
    p_miss = (1.0 - top_k / num_experts) ** (tokens_per_rank * ep)
    return local * (1.0 - p_miss)


#: Random placements of the popularity ranking over the ranks that :func:`skewed_rank` averages over, and the
#: sampled tokens :func:`pick_probabilities` estimates each expert's share from.
_PLACEMENTS = 8
_SAMPLES = 1024


@lru_cache(maxsize=64)
def pick_probabilities(num_experts: int, top_k: int, exponent: float) -> tuple[float, ...]:
    """Per expert (by popularity rank), the probability that one token picks it when the router's logits are
    standard normal plus ``-exponent * ln(rank)``: the routing ``moe-oracle tune --skew`` measures. Estimated from
    :data:`_SAMPLES` sampled tokens with a fixed seed (deterministic)."""
    rng = random.Random(0)
    offset = [-exponent * math.log(r + 1) for r in range(num_experts)]
    counts = [0] * num_experts
    for _ in range(_SAMPLES):
        scores = [rng.gauss(0.0, 1.0) + o for o in offset]
        for e in heapq.nlargest(top_k, range(num_experts), key=scores.__getitem__):
            counts[e] += 1
    return tuple(c / _SAMPLES for c in counts)


def skewed_rank(num_experts: int, top_k: int, tokens_per_rank: int, ep: int, exponent: float) -> tuple[float, float]:
    """(expected active experts, token-pair multiplier) of the busiest rank when routing is skewed by ``exponent``.

    Each of the ``T * ep`` tokens picks expert e with :func:`pick_probabilities` ``q_e``. Experts sit on ranks in
    contiguous id blocks and popularity is unrelated to id, so the ranking is placed at random (``_PLACEMENTS`` fixed
    permutations, averaged): the busiest rank receives ``multiplier`` times the mean rank's token-expert pairs (1 at
    EP 1), and its active experts are counted among its own. Exponent 0 is uniform routing
    (:func:`expected_active_experts`, multiplier 1).
    """
    if exponent <= 0:
        return expected_active_experts(num_experts, top_k, tokens_per_rank, ep), 1.0
    q = pick_probabilities(num_experts, top_k, exponent)
    local = max(1, num_experts // ep)
    n = tokens_per_rank * ep
    runs = _PLACEMENTS if ep > 1 else 1
    active_sum, mult_sum = 0.0, 0.0
    for seed in range(runs):
        order = list(range(num_experts))
        random.Random(seed).shuffle(order)
        ranks = [order[i : i + local] for i in range(0, num_experts, local)]
        hot = max(ranks, key=lambda rk: sum(q[e] for e in rk))
        active_sum += sum(1.0 - (1.0 - q[e]) ** n for e in hot)
        mult_sum += sum(q[e] for e in hot) / top_k * ep
    return active_sum / runs, max(1.0, mult_sum / runs)
