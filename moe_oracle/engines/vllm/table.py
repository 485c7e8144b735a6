"""The plug-in's decision table: per layer group, what serves it in vLLM, and every rejected candidate."""

from __future__ import annotations

from typing import TYPE_CHECKING

from moe_oracle.rules.engine import ENGINE_ROUTE, MOE_ORACLE_ROUTE

if TYPE_CHECKING:
    from moe_oracle.decide.selection import Decision
    from moe_oracle.engines.routes import GroupRoute

_RUNS = {
    ENGINE_ROUTE: "vLLM's own {key}",
    MOE_ORACLE_ROUTE: "moe-oracle runtime {key}",
}


def decision_table(
    decision: Decision, headline: str, routes: list[GroupRoute] | None = None, *, engine_title: str = "vLLM"
) -> list[str]:
    """One readable table: what runs each layer group (and through which route), one line per rejection.

    ``routes`` (:func:`moe_oracle.engines.vllm.routes.group_routes`) names the route of each chosen
    candidate; without it the chosen key alone is shown.
    """
    from moe_oracle.model.spans import layer_span

    lines = [headline]
    signatures = []
    by_name = {r.name: r for r in routes or ()}
    for g in decision.groups:
        grp = g.group
        route = by_name.get(grp.name)
        if route is not None and route.route is not None:  # a pinned route may name what decide() did not choose
            served = next((c for c in (*g.candidates, *g.conversions) if c.key == route.key), g.chosen)
            runs = _RUNS[route.route].replace("vLLM", engine_title)
            chosen = runs.format(key=route.key or (served.key if served is not None else "?"))
            chosen += f" (accuracy class {served.accuracy_class})" if served is not None else ""
        elif g.chosen is None or route is not None:
            chosen = (
                "vLLM's own MoE (--moe-backend auto path, non-fused)"
                if engine_title == "vLLM"
                else f"{engine_title}'s own MoE"
            )
        else:
            chosen = f"{g.chosen.key} (accuracy class {g.chosen.accuracy_class})"
        lines.append(
            f"  layer group {grp.name} (layers {layer_span(grp.layers)}, {grp.weight_quant.label()}, "
            f"E{grp.num_experts} top{grp.top_k}): {chosen}"
        )
        signatures.append(tuple((c.spec.key, tuple((r.code, r.message) for r in c.failures)) for c in g.candidates))
    same = all(s == signatures[0] for s in signatures)
    for i, g in enumerate(decision.groups):
        if same and i > 0:
            break
        scope = "every layer group" if same else f"layer group {g.group.name}"
        rejected = [c for c in g.candidates if not c.eligible]
        if rejected:
            lines.append(f"  rejected ({scope}):")
        for c in rejected:
            first = c.failures[0]
            more = list(dict.fromkeys(r.code.value for r in c.failures[1:]))
            tail = f" (also {', '.join(more)})" if more else ""
            lines.append(f"    {c.spec.key}: [{first.code.value}] {first.message}{tail}")
        slower = [c for c in g.candidates if c.eligible and c is not g.chosen]
        for c in slower:
            lines.append(f"    {c.spec.key}: eligible, not chosen (higher expected cost)")
    return lines
