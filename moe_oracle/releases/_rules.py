"""Parallelism rules several engine routes declare alike (vLLM's AITER and plug-in routes, SGLang's plug-in route)."""

from __future__ import annotations

from moe_oracle.rules import Check, ReasonCode
from moe_oracle.rules import checks as c


def tp_one(rule: str, why: str, remediation: str, sources: tuple[str, ...]) -> Check:
    return c.scenario_predicate(
        ReasonCode.TP_UNSUPPORTED,
        lambda sc: sc.deployment.parallel.tp == 1,
        rule=rule,
        message=lambda sc: f"tp={sc.deployment.parallel.tp}: {why}",
        remediation=remediation,
        sources=sources,
    )


def pp_one(why: str, sources: tuple[str, ...], remediation: str = "Drop --pipeline-parallel-size.") -> Check:
    return c.scenario_predicate(
        ReasonCode.PP_UNSUPPORTED,
        lambda sc: sc.deployment.parallel.pp == 1,
        rule="pp == 1",
        message=lambda sc: f"pp={sc.deployment.parallel.pp}: {why}",
        remediation=remediation,
        sources=sources,
    )


def no_eplb(rule: str, why: str, sources: tuple[str, ...], remediation: str = "Drop --enable-eplb.") -> Check:
    return c.scenario_predicate(
        ReasonCode.EPLB_UNSUPPORTED,
        lambda sc: not sc.deployment.parallel.eplb,
        rule=rule,
        message=lambda sc: f"EPLB is enabled{why}",
        remediation=remediation,
        sources=sources,
    )
