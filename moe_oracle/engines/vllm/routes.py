"""Which route serves each layer group of a vLLM decision, and the plan the plug-in ships for it.

A chosen variant reaches vLLM either through vLLM's own code (``--moe-backend deep_gemm_mega_moe``
or ``aiter_mega_moe``, one value for the whole model) or through moe-oracle's runtime (the plug-in's
out-of-tree ``RoutedExperts``, per layer group); see ``moe_oracle/releases/vllm_0_33/gates.py``.
Torch-free and vLLM-free: the config hook and ``moe-oracle plan`` both use it.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TYPE_CHECKING

from moe_oracle.engines.routes import (
    GroupRoute,
    candidate_route,
    group_routes,
    layer_plan,
    plugin_reasons,
    route_reasons,
)
from moe_oracle.rules.engine import MOE_ORACLE_ROUTE, Route

if TYPE_CHECKING:
    from moe_oracle.decide.candidates import Candidate
    from moe_oracle.decide.selection import Decision

__all__ = [
    "GroupRoute",
    "candidate_route",
    "group_routes",
    "layer_plan",
    "plugin_reasons",
    "refusal_lines",
    "route_reasons",
    "vllm_fix",
]


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


def refusal_lines(
    decision: Decision, matches: Callable[[Candidate], bool], route: Route = MOE_ORACLE_ROUTE
) -> list[str]:
    """One short line per layer group: the closest candidate's first reason code, values and a vLLM fix.

    ``matches(candidate)`` selects the candidates the operator asked for; ``route`` the route they
    must run on (an explicit ``--moe-backend`` is vLLM's own code path). The whole trail is the table.
    """
    from moe_oracle.model.spans import layer_span

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
