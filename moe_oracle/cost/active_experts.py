"""Expected active experts per rank under uniform routing.

With ``T * ep`` tokens each choosing ``k`` of ``E`` experts, a given expert is hit with probability
``1 - (1 - k/E) ** (T * ep)``. Both the cost model and the calibration fits use it (for points
recorded without a measured active-expert count).
"""

from __future__ import annotations


def expected_active_experts(num_experts: int, top_k: int, tokens_per_rank: int, ep: int) -> float:
    """Expected distinct experts one rank runs for ``tokens_per_rank`` tokens on every rank."""
    local = num_experts / ep
    p_miss = (1.0 - top_k / num_experts) ** (tokens_per_rank * ep)
    return local * (1.0 - p_miss)
