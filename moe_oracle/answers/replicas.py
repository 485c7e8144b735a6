"""The replica step: where the expert-parallel group crosses an NVLink/XGMI domain, one domain-sized replica.

When the requested expert-parallel group crosses a domain, the same model is decided again on one domain-sized
replica (e.g. DP8+EP8 instead of DP16+EP16); the replica layout is adopted when it runs a fused backend that the
requested layout cannot (two DP8+EP8 replicas behind a router, as the only published SM90 mega-MoE serving figures
ran it: a vLLM pull request description that depends on vllm-project/DeepGEMM#44, neither publicly located on
2026-12-01), and shown as the considered alternative otherwise. ``select`` names the adopted replicas next to its
answer; ``plan`` and ``serve`` launch them.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from moe_oracle.decide.replicas import replica_deployment
from moe_oracle.decide.selection import Decision
from moe_oracle.errors import OverrideRefusedError
from moe_oracle.rules import ReasonCode
from moe_oracle.spec.deployment import Deployment

__all__ = ["ReplicaChoice", "global_choice", "replica_choice", "replica_deployment", "routed_experts", "split_reason"]


def global_choice(decision: Decision) -> tuple[str | None, str | None, str | None]:
    """(backend, variant, why-not): engines apply one MoE backend to every MoE layer of a model."""
    chosen = [(g.group.name, g.chosen) for g in decision.groups]
    missing = [name for name, c in chosen if c is None]
    if missing:
        g = next(g for g in decision.groups if g.chosen is None)
        return (
            None,
            None,
            f"no fused mega-MoE backend is eligible for layer group(s) {', '.join(missing)}: "
            + (_first_reasons(g.candidates)),
        )
    backends = {c.spec.backend for _, c in chosen if c is not None}
    if len(backends) > 1:
        picks = ", ".join(f"{name}: {c.spec.key}" for name, c in chosen if c is not None)
        return None, None, f"layer groups want different backends ({picks}); the engine takes one for all layers"
    first = chosen[0][1]
    assert first is not None
    variants = {c.spec.variant for _, c in chosen if c is not None}
    return first.spec.backend, first.spec.variant if len(variants) == 1 else ",".join(sorted(variants)), None


@dataclass(frozen=True)
class ReplicaChoice:
    """Where the expert-parallel group crosses an NVLink/XGMI domain: the domain-sized replica layout and its
    decision, and whether it is adopted (it runs a fused backend the requested layout cannot). ``deployment``
    None: no replica layout splits the ranks (``why_not`` says why); ``decision`` None: an override refused it."""

    deployment: Deployment | None
    count: int
    decision: Decision | None
    adopted: bool
    why_not: str = ""


def replica_choice(
    deployment: Deployment,
    decision: Decision | None,
    decide_on: Callable[[Deployment], Decision],
    fits: Callable[[Decision], Any] | None = None,
    experts: int | None = None,
) -> ReplicaChoice | None:
    """The replica step of a question on ``deployment`` (None when its EP stays inside one domain), with
    ``decide_on`` deciding the same question on another deployment: ``plan`` serves the adopted replicas, and
    ``select`` names them next to its answer for the layout as given. ``fits``: the memory fit of one replica's
    server (a :class:`~moe_oracle.decide.fit.Fit`); replicas that do not fit are not adopted (the requested layout,
    on the engine's own path, is then what ``plan`` serves and ``select`` answers for). ``experts``: the routed
    experts every layer group divides: replicas are then also considered where EP exceeds or does not divide them,
    sized to divide them, and adopted whenever EP exceeds them (#32: never EP beyond the expert count)."""
    ep = deployment.parallel.ep
    within = ep <= deployment.topology.effective_domain
    if within and (experts is None or (ep <= experts and (ep <= 1 or experts % ep == 0))):
        return None
    rep = replica_deployment(deployment, experts)
    if isinstance(rep, str):
        return ReplicaChoice(None, 0, None, False, f"no domain-sized replica layout: {rep}")
    rep_dep, count = rep
    try:
        rep_decision = decide_on(rep_dep)
    except OverrideRefusedError:
        return ReplicaChoice(rep_dep, count, None, False, "the override cannot run on a replica either")
    rep_backend, _, rep_why = global_choice(rep_decision)
    current = global_choice(decision)[0] if decision is not None else None
    adopted = (rep_backend is not None and current is None) or (experts is not None and ep > experts)
    why_not = "" if adopted else rep_why or "the requested layout already runs a fused backend"
    if adopted and decision is not None and fits is not None:
        verdict = fits(rep_decision)
        if not verdict.fits:
            par = rep_dep.parallel
            adopted = False
            why_not = (
                f"{count} replicas of DP{par.dp}+EP{par.ep} would run {rep_backend} but do not fit: "
                f"{verdict.reasons[0].message}"
            )
    return ReplicaChoice(rep_dep, count, rep_decision, adopted, why_not)


def routed_experts(model: Any) -> int:
    """The routed-expert count every layer group of ``model`` divides (their greatest common divisor)."""
    return math.gcd(*(g.num_experts for g in model.layer_groups))


def split_reason(dep: Deployment, experts: int) -> str:
    """Why a layout is split into replicas, as a clause: ``crosses the 8-GPU NVLink/XGMI domain``, ``puts EP 288
    over 256 routed experts``, ``does not divide the 256 routed experts``."""
    ep, domain = dep.parallel.ep, dep.topology.effective_domain
    parts = []
    if ep > domain:
        parts.append(f"crosses the {domain}-GPU NVLink/XGMI domain")
    if ep > experts:
        parts.append(f"puts EP {ep} over {experts} routed experts (ranks without an expert)")
    elif experts % ep:
        parts.append(f"does not divide the {experts} routed experts (every fused kernel needs them divided evenly)")
    return " and ".join(parts)


def _first_reasons(candidates: Any) -> str:
    """The most relevant rejection: the candidates not rejected for architecture alone."""
    same_arch = [c for c in candidates if c.failures and c.failures[0].code is not ReasonCode.ARCH_UNSUPPORTED]
    pool = same_arch or list(candidates)
    parts = []
    for c in pool[:3]:
        if c.failures:
            parts.append(f"{c.spec.key} [{c.failures[0].code.value}] {c.failures[0].message}")
    return "; ".join(parts) or "no candidate"
