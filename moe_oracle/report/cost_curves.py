"""Expected cost against tokens per rank for each eligible path of a scenario, for the HTML report's chart.

For the main layer group of a decided scenario: every eligible fused candidate (after its load-time conversion
where it has one) and the measured non-fused path where one applies, each evaluated by the cost model
(:func:`moe_oracle.cost.model.estimate_us`, the figures ``select`` ranks by) at powers of two from 1 to the
per-rank token budget, with the basis of each curve (measured, published, roofline; the source).
"""

from __future__ import annotations

from typing import Any

#: The largest tokens-per-rank point charted.
MAX_POINT = 8192


def points(budget: int) -> list[int]:
    """1, 2, 4, ... up to the per-rank budget (and :data:`MAX_POINT`)."""
    out, t = [], 1
    while t <= min(budget, MAX_POINT):
        out.append(t)
        t *= 2
    return out


def cost_curves(decision: Any) -> list[dict[str, Any]]:
    """``[{"path", "basis", "kind", "chosen", "us": [...]}]`` for the main layer group's eligible paths, with the
    token points in each record's ``t``; empty when no path is eligible."""
    from moe_oracle.cost.model import estimate_us

    g = decision.main
    dep = decision.deployment
    ts = points(dep.parallel.tokens_per_rank)
    paths: list[tuple[str, Any, Any, bool]] = []
    seen: set[str] = set()
    pool = [c for c in g.candidates if c.eligible]
    if g.chosen is not None and all(c is not g.chosen for c in pool):
        pool.insert(0, g.chosen)
    for c in pool:
        if c.label in seen:
            continue
        seen.add(c.label)
        group = g.group if c.conversion is None else g.group.model_copy(update={"weight_quant": c.conversion.target})
        paths.append((c.label, c.spec, group, c is g.chosen))
    if g.nonfused is not None:
        paths.append((f"{g.nonfused.key} (non-fused)", g.nonfused.key, g.group, False))
    out = []
    for label, spec, group, chosen in paths:
        estimates = [estimate_us(spec, group, dep, t) for t in ts]
        basis = estimates[-1].basis
        out.append(
            {
                "path": label,
                "chosen": chosen,
                "kind": basis.split(",", 1)[0].split()[0] if basis.strip() else "unknown",
                "basis": basis,
                "t": ts,
                "us": [round(e.us, 1) for e in estimates],
            }
        )
    return out
