"""One layer group's paths costed per batch size: which is cheapest where, and where the cost model cannot tell.

One path serves every batch of a deployment, chosen for the workload (:mod:`moe_oracle.decide.selection`); these
notes show how the ranking changes with the tokens per rank, and the near ties (:mod:`moe_oracle.cost.near_tie`):
per batch size, on the workload, and between the two cheapest fused candidates.
"""

from __future__ import annotations

from moe_oracle.cost.model import CostEstimate, Workload, workload_cost
from moe_oracle.cost.near_tie import NearTie, is_near_tie, predicted_gap
from moe_oracle.cost.nonfused import applicable_paths
from moe_oracle.decide.candidates import Candidate
from moe_oracle.model.types import MoELayerGroup
from moe_oracle.rules import Engine
from moe_oracle.spec.deployment import Deployment

#: (tokens per rank, the cost of each path there), in increasing tokens
Batches = list[tuple[int, dict[str, CostEstimate]]]


def per_batch(fused: Candidate, group: MoELayerGroup, deployment: Deployment, engine: Engine) -> Batches:
    """``fused`` and every measured non-fused path costed at each batch size (powers of two up to the per-rank token
    budget, and the budget)."""
    budget = deployment.parallel.tokens_per_rank
    grid = sorted({1 << i for i in range(budget.bit_length()) if 1 << i <= budget} | {budget})
    costed = group if fused.conversion is None else group.model_copy(update={"weight_quant": fused.conversion.target})
    paths = [p.key for p in applicable_paths(group, deployment, engine)]
    out = []
    for t in grid:
        point = Workload(((t, 1.0),))
        costs = {fused.key: workload_cost(fused.spec, costed, deployment, point)}
        for key in paths:
            est = workload_cost(key, group, deployment, point)
            if est.measured:
                costs[key] = est
        out.append((t, costs))
    return out


def regimes_note(batches: Batches) -> str | None:
    """Which of the paths :func:`per_batch` costed is cheapest at each batch size, as ranges; None when one path
    wins everywhere."""
    winners: list[tuple[str, int, int]] = []
    for t, costs in batches:
        best = min(costs, key=lambda k: costs[k].us)
        if winners and winners[-1][0] == best:
            winners[-1] = (best, winners[-1][1], t)
        else:
            winners.append((best, t, t))
    if len(winners) < 2:
        return None
    spans = ", ".join(f"T {a}{'' if a == b else f'-{b}'}: {key}" for key, a, b in winners)
    return f"cheapest per batch (tokens per rank): {spans}; one path serves every batch, chosen for the workload"


def fused_tie(ranked: list[Candidate]) -> tuple[NearTie, ...]:
    """The two cheapest of the ``ranked`` eligible fused candidates (cheapest first), when the model cannot tell them
    apart."""
    ranked = [c for c in ranked if c.eligible and c.cost is not None][:2]
    if len(ranked) < 2:
        return ()
    first, second = ranked[0].cost, ranked[1].cost
    assert first is not None and second is not None
    if not is_near_tie(first, second):
        return ()
    return (NearTie((ranked[0].key, ranked[1].key), predicted_gap(first, second)),)


def workload_tie(fused: Candidate | None, key: str, cost: CostEstimate) -> tuple[NearTie, ...]:
    """The fused choice against the best measured non-fused path (``key``, its ``cost``) on the workload's weighted
    cost."""
    if fused is None or fused.cost is None or not is_near_tie(fused.cost, cost):
        return ()
    keys = (fused.key, key) if fused.cost.us <= cost.us else (key, fused.key)
    return (NearTie(keys, predicted_gap(fused.cost, cost)),)


def batch_ties(batches: Batches) -> tuple[NearTie, ...]:
    """Per batch size, the two cheapest paths when the model cannot tell them apart; neighbouring batch sizes with
    the same pair in the same order are one span (its largest gap)."""
    spans: list[NearTie] = []
    start, last = 0, -2  # the current span's first batch size, and the grid index of the last tie
    for i, (t, costs) in enumerate(batches):
        order = sorted(costs, key=lambda k: costs[k].us)
        if len(order) < 2 or not is_near_tie(costs[order[0]], costs[order[1]]):
            continue
        pair, gap = (order[0], order[1]), predicted_gap(costs[order[0]], costs[order[1]])
        if spans and last == i - 1 and spans[-1].paths == pair:
            spans[-1] = NearTie(pair, max(gap, spans[-1].gap), (start, t))
        else:
            start = t
            spans.append(NearTie(pair, gap, (t, t)))
        last = i
    return tuple(spans)


def tie_tokens(ties: tuple[NearTie, ...], batches: Batches, workload: Workload) -> tuple[int, ...]:
    """The batch sizes per rank that measure ``ties``: the grid's sizes inside each span, the workload's points for a
    tie on the workload."""
    out: set[int] = set()
    for tie in ties:
        if tie.tokens is None:
            out.update(t for t, _ in workload.points)
        else:
            out.update(t for t, _ in batches if tie.tokens[0] <= t <= tie.tokens[1])
    return tuple(sorted(out))
