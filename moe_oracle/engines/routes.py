"""Which route serves each layer group of an engine's decision, and the plan a plug-in ships for it.

A chosen variant reaches an engine either through the engine's own code (vLLM ``--moe-backend``,
SGLang ``--moe-a2a-backend megamoe``: one value for the whole model) or through moe-oracle's
runtime (the engine's plug-in, per layer group); the routes and their rules are the engine's
profile (:mod:`moe_oracle.releases`). Torch-free and engine-free: the plug-ins' start-up hooks and
``moe-oracle plan`` both use it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from moe_oracle.engines.layer_plan import LayerPlan
from moe_oracle.releases import engine_profile
from moe_oracle.rules import Reason, ReasonCode, Scenario, Status
from moe_oracle.rules.engine import ENGINE_ROUTE, MOE_ORACLE_ROUTE, EngineProfile, EngineSupport, Route

if TYPE_CHECKING:
    from moe_oracle.decide.candidates import Candidate
    from moe_oracle.decide.selection import Decision, GroupDecision

_TITLES = {"vllm": "vLLM", "sglang": "SGLang"}


def _profile(decision: Decision) -> EngineProfile:
    profile = engine_profile(decision.engine)
    if profile is None:
        raise ValueError(f"engine {decision.engine.value} has no routes (a plug-in serves vLLM or SGLang)")
    return profile


@dataclass(frozen=True)
class GroupRoute:
    """One layer group: what serves it in vLLM and why."""

    name: str
    layers: tuple[int, ...]
    route: Route | None  # None: the engine's own (non-fused) MoE
    key: str | None  # the chosen candidate's key
    plan: LayerPlan | None
    why: str
    engine: str = "vllm"

    def to_json(self) -> dict[str, Any]:
        own = self.engine
        return {
            "name": self.name,
            "layers": list(self.layers),
            "runs": {ENGINE_ROUTE: f"{own}-native", MOE_ORACLE_ROUTE: "moe-oracle", None: own}[self.route],
            "variant": self.key,
            "layer_plan": None if self.plan is None else self.plan.to_json(),
            "why": self.why,
        }


def _scenario(decision: Decision, gd: GroupDecision, candidate: Candidate) -> Scenario:
    group = gd.group
    if candidate.conversion is not None:
        group = group.model_copy(update={"weight_quant": candidate.conversion.target})
    return Scenario(
        group,
        decision.deployment,
        decision.software,
        decision.engine,
        decision.model.architecture,
        decision.model.model_type,
    )


def candidate_support(decision: Decision, gd: GroupDecision, candidate: Candidate) -> EngineSupport | None:
    """The first route (:class:`~moe_oracle.rules.engine.EngineSupport`) whose rules pass for ``candidate`` (the
    engine's own first), or None."""
    return _profile(decision).route(candidate.spec, _scenario(decision, gd, candidate))


def candidate_route(decision: Decision, gd: GroupDecision, candidate: Candidate) -> Route | None:
    """The first route whose rules pass for ``candidate`` (the engine's own first), or None."""
    support = candidate_support(decision, gd, candidate)
    return None if support is None else support.route


def route_reasons(decision: Decision, gd: GroupDecision, candidate: Candidate, route: Route) -> list[Reason]:
    """Failures of ``candidate`` on one route alone: that route's engine rules first, then its kernel's, then the
    known-bad advisories that reject it (``KNOWN_BAD``: the decision's, which every route inherits)."""
    sc = _scenario(decision, gd, candidate)
    out: list[Reason] = []
    for support in _profile(decision).routes(candidate.spec):
        if support.route == route:
            out += [r for r in support.evaluate(candidate.spec, sc) if r.status is Status.FAIL]
    out += [r for r in candidate.spec.evaluate(sc) if r.status is Status.FAIL]
    return out + [r for r in candidate.failures if r.code is ReasonCode.KNOWN_BAD]


def plugin_reasons(decision: Decision, gd: GroupDecision, candidate: Candidate) -> list[Reason]:
    """Failures of moe-oracle's route alone for ``candidate`` (an explicit plug-in request needs it)."""
    return route_reasons(decision, gd, candidate, MOE_ORACLE_ROUTE)


def layer_plan(
    decision: Decision, gd: GroupDecision, candidate: Candidate, *, emulate: bool = False, allow_lossy: bool = False
) -> LayerPlan:
    conv = candidate.conversion
    return LayerPlan(
        group=gd.group,
        variant=candidate.spec.key,
        max_tokens_per_rank=decision.deployment.parallel.tokens_per_rank,
        emulate=emulate,
        convert_from=None if conv is None else conv.source.value,
        allow_lossy=allow_lossy,
    )


def group_routes(decision: Decision, *, emulate: bool = False) -> list[GroupRoute]:
    """Every layer group's route under automatic selection (the chosen candidate; none: the engine's own MoE)."""
    own = decision.engine.value
    title = _TITLES.get(own, own)
    out = []
    for gd in decision.groups:
        c = gd.chosen
        if c is None:
            fallback = gd.fallback or "no fused backend"
            out.append(GroupRoute(gd.group.name, gd.group.layers, None, None, None, fallback, engine=own))
            continue
        route = candidate_route(decision, gd, c)
        plan = None
        if route == MOE_ORACLE_ROUTE:
            plan = layer_plan(decision, gd, c, emulate=emulate, allow_lossy=decision.conversion.allow_lossy)
        why = f"{title}'s own code path" if route == ENGINE_ROUTE else f"moe-oracle's runtime ({title} plug-in)"
        out.append(GroupRoute(gd.group.name, gd.group.layers, route, c.key, plan, why, engine=own))
    return out


def backend_pins(decision: Decision, runtime: list[GroupRoute]) -> str | dict[str, str]:
    """The plug-in's backend request: one variant when every layer group runs it through moe-oracle, else one
    pin per layer group (a variant, or the engine's name for a group the engine's own MoE serves)."""
    own = decision.engine.value
    by_name = {r.name: (r.key or "").split("+")[0] for r in runtime}
    pins = {g.group.name: by_name.get(g.group.name, own) for g in decision.groups}
    values = set(pins.values())
    if len(values) == 1 and own not in values:
        return values.pop()
    return pins
