"""What a plan needs beyond the engine release, said first: the plug-in, the kernel build, how the path was
validated, and the stock alternative (the same question planned on the engine release alone).

The default software profiles (``vllm-0.33.0+moe-oracle``, ``sglang-0.5.23+moe-oracle``) assume moe-oracle's
plug-in in the engine's environment and, for the SM90 kernels, an unreleased DeepGEMM build. An operator reads
that before the command, not in the notes; and sees in one line what the engine release alone would run, whether
it fits, and the flag that plans it.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from moe_oracle.errors import OracleError
from moe_oracle.launch.model import LaunchPlan

_TITLE = {"vllm": "vLLM", "sglang": "SGLang"}
#: The plug-in's entry point group in each engine (see docs/engines.md).
_ENTRY_POINT = {"vllm": "vllm.general_plugins", "sglang": "sglang.srt.plugins"}
_PLUS = "+moe-oracle"


@dataclass(frozen=True)
class StockAlternative:
    """The plan of the same question on the engine release alone (``--software <release>``)."""

    flag: str
    path: str
    fit: str

    def line(self, engine: str) -> str:
        return f"stock alternative ({engine} alone, `{self.flag}`): {self.path}; memory: {self.fit}"


def plugin_groups(plan: LaunchPlan) -> list[str]:
    """The layer groups the plan serves through moe-oracle's runtime inside the engine (its plug-in)."""
    from moe_oracle.engines.routes import group_routes
    from moe_oracle.rules.engine import MOE_ORACLE_ROUTE

    if plan.decision_obj is None or plan.engine not in _TITLE:
        return []
    return [r.name for r in group_routes(plan.decision_obj) if r.route == MOE_ORACLE_ROUTE]


def _path(plan: LaunchPlan) -> str:
    if not plan.fused:
        return "the engine's non-fused MoE (no fused backend eligible)"
    return f"{plan.backend}:{plan.variant}"


def _fit(plan: LaunchPlan) -> str:
    fit = plan.fit
    if fit is None:
        return "not weighed"
    if not fit.weighed_all:
        return fit.verdict
    return f"{fit.verdict}, {fit.kv_bytes / (1 << 30):.1f} GiB KV cache per rank"


def stock_alternative(plan: LaunchPlan, request: Any) -> StockAlternative | None:
    """The same request planned on the engine's release profile without moe-oracle (None when the plan already
    uses a profile without the plug-in). A refusal there (it does not fit, or cannot be planned) is the answer."""
    from moe_oracle.launch.build import build_plan

    if _PLUS not in plan.software:
        return None
    stock = plan.software.split(_PLUS, 1)[0]
    flag = f"--software {stock}"
    try:
        other = build_plan(dataclasses.replace(request, software=stock))
    except OracleError as exc:
        return StockAlternative(flag, "refused", f"{type(exc).__name__}: {exc.message}"[:300])
    same = (other.layout.label(), other.layout.nodes) == (plan.layout.label(), plan.layout.nodes)
    layout = "" if same else f" on {other.layout.label()}"
    return StockAlternative(flag, _path(other) + layout, _fit(other))


def prerequisites(plan: LaunchPlan, request: Any | None) -> list[str]:
    """The plan's first lines: what to install beyond the engine release (plug-in, kernel build: released or
    not, where to get it), how the chosen path was validated, and the stock alternative (``request``: the plan's
    request, to plan it; None leaves it out)."""
    title = f"{_TITLE.get(plan.engine, plan.engine)} {plan.engine_version}"
    out = []
    served = plugin_groups(plan)
    if served:
        out.append(
            f"install moe-oracle (this package, the same version) into {title}'s Python environment: its plug-in "
            f"(entry point {_ENTRY_POINT[plan.engine]}) serves layer group(s) {', '.join(served)} and reads the "
            "moe_oracle pins on the command line; without it the engine refuses or ignores them"
        )
    builds = list(dict.fromkeys(g["unreleased_build"] for g in plan.groups if g.get("unreleased_build")))
    out += [f"kernel build (not in any release): {b.removeprefix('needs an unreleased build: ')}" for b in builds]
    replaced = plan.software.split(_PLUS, 1)[1].lstrip("+") if _PLUS in plan.software else ""
    if replaced and not builds:  # a released build in place of the engine's own (profile ...+sgl-deep-gemm)
        builds.append(replaced)
        out.append(
            f"kernel build in place of the engine release's: {replaced} (software profile {plan.software}; "
            "`moe-oracle list builds` says what it is and where to get it)"
        )
    if not served and not builds:
        out.append(f"nothing to install beyond {title}: the path is the engine's own, with its own kernels")
    validation = next((g["validation"] for g in plan.groups if g.get("validation")), None)
    if validation:
        out.append(f"validated: {validation}")
    if request is not None and (served or builds):
        alt = stock_alternative(plan, request)
        if alt is not None:
            out.append(alt.line(title))
    return out


def with_prerequisites(plan: LaunchPlan, request: Any | None) -> LaunchPlan:
    """``plan`` with its :func:`prerequisites` filled in."""
    return dataclasses.replace(plan, prerequisites=prerequisites(plan, request))
