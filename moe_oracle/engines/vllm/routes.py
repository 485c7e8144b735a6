"""Which route serves each layer group of a vLLM decision, and the plan the plug-in ships for it.

A chosen variant reaches vLLM either through vLLM's own code (``--moe-backend deep_gemm_mega_moe``
or ``aiter_mega_moe``, one value for the whole model) or through moe-oracle's runtime (the plug-in's
out-of-tree ``RoutedExperts``, per layer group); see :mod:`moe_oracle.engine_gates.vllm`.
Torch-free and vLLM-free: the config hook and ``moe-oracle plan`` both use it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from moe_oracle.engine_gates.vllm import PROFILE
from moe_oracle.engines.vllm.shipped import LayerPlan
from moe_oracle.rules import Reason, Scenario, Status
from moe_oracle.rules.engine import ENGINE_ROUTE, MOE_ORACLE_ROUTE


@dataclass(frozen=True)
class GroupRoute:
    """One layer group: what serves it in vLLM and why."""

    name: str
    layers: tuple[int, ...]
    route: str | None  # "engine", "moe-oracle", or None: vLLM's own (non-fused) MoE
    key: str | None  # the chosen candidate's key
    plan: LayerPlan | None
    why: str

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "layers": list(self.layers),
            "runs": {ENGINE_ROUTE: "vllm-native", MOE_ORACLE_ROUTE: "moe-oracle", None: "vllm"}[self.route],
            "variant": self.key,
            "layer_plan": None if self.plan is None else self.plan.to_json(),
            "why": self.why,
        }


def _scenario(decision: Any, gd: Any, candidate: Any) -> Scenario:
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


def candidate_route(decision: Any, gd: Any, candidate: Any) -> str | None:
    """The first route whose rules pass for ``candidate`` (the engine's own first), or None."""
    support = PROFILE.route(candidate.spec, _scenario(decision, gd, candidate))
    return None if support is None else support.route


def route_reasons(decision: Any, gd: Any, candidate: Any, route: str) -> list[Reason]:
    """Failures of ``candidate`` on one route alone: that route's engine rules first, then its kernel's."""
    sc = _scenario(decision, gd, candidate)
    out: list[Reason] = []
    for support in PROFILE.routes(candidate.spec):
        if support.route == route:
            out += [r for r in support.evaluate(candidate.spec, sc) if r.status is Status.FAIL]
    return out + [r for r in candidate.spec.evaluate(sc) if r.status is Status.FAIL]


def plugin_reasons(decision: Any, gd: Any, candidate: Any) -> list[Reason]:
    """Failures of moe-oracle's route alone for ``candidate`` (an explicit plug-in request needs it)."""
    return route_reasons(decision, gd, candidate, MOE_ORACLE_ROUTE)


def layer_plan(
    decision: Any, gd: Any, candidate: Any, *, emulate: bool = False, allow_lossy: bool = False
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


def group_routes(decision: Any, *, emulate: bool = False) -> list[GroupRoute]:
    """Every layer group's route under automatic selection (the chosen candidate; none: vLLM's own MoE)."""
    out = []
    for gd in decision.groups:
        c = gd.chosen
        if c is None:
            out.append(GroupRoute(gd.group.name, gd.group.layers, None, None, None, gd.fallback or "no fused backend"))
            continue
        route = candidate_route(decision, gd, c)
        plan = None
        if route == MOE_ORACLE_ROUTE:
            plan = layer_plan(decision, gd, c, emulate=emulate, allow_lossy=decision.conversion.allow_lossy)
        why = "vLLM's own code path" if route == ENGINE_ROUTE else "moe-oracle's runtime (vLLM plug-in)"
        out.append(GroupRoute(gd.group.name, gd.group.layers, route, c.key, plan, why))
    return out


#: moe-oracle CLI spellings in remediation texts -> what ``vllm serve`` accepts
_VLLM_FIXES = (
    (re.compile(r"--ep (\d+)"), "--enable-expert-parallel (EP = TP x DP = \\1)"),
    (re.compile(r"--dp (\d+)"), "--data-parallel-size \\1"),
    (re.compile(r"--tp (\d+)"), "--tensor-parallel-size \\1"),
    (re.compile(r"--pp (\d+)"), "--pipeline-parallel-size \\1"),
    (re.compile(r"--eplb\b"), "--enable-eplb"),
    (re.compile(r"--allow-lossy-conversion"), "--additional-config moe_oracle.allow_lossy_conversion=true"),
    (re.compile(r"--no-convert"), "--additional-config moe_oracle.convert=false"),
    (re.compile(r"Use --engine sglang[^.;]*"), "Serve with SGLang instead"),
    (re.compile(r",? or pass --allow-fallback"), ""),
)


def vllm_fix(text: str) -> str:
    """A remediation written for moe-oracle's CLI, in flags ``vllm serve`` accepts."""
    for pattern, repl in _VLLM_FIXES:
        text = pattern.sub(repl, text)
    return text


def refusal_lines(decision: Any, matches: Any, route: str = MOE_ORACLE_ROUTE) -> list[str]:
    """One short line per layer group: the closest candidate's first reason code, values and a vLLM fix.

    ``matches(candidate)`` selects the candidates the operator asked for; ``route`` the route they
    must run on (an explicit ``--moe-backend`` is vLLM's own code path). The whole trail is the table.
    """
    from moe_oracle.model.types import layer_span

    lines = []
    for gd in decision.groups:
        wanted = [c for c in gd.candidates if matches(c)]
        failing = [(c, route_reasons(decision, gd, c, route)) for c in wanted]
        if not failing or any(not reasons for _, reasons in failing):
            continue
        c, reasons = min(failing, key=lambda cr: len(cr[1]))
        first = reasons[0]
        lines.append(
            f"layer group '{gd.group.name}' (layers {layer_span(gd.group.layers)}): {c.spec.key} "
            f"[{first.code.value}] {first.message}. Fix: {vllm_fix(first.remediation)}"
        )
    return lines
