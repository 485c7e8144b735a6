"""The memory fit of one planned server, the same for ``select``, ``plan``, ``serve``, ``compare`` and the matrix.

One question (:class:`FitQuestion`: the decision served, the checkpoint as the engine names it, the engine memory
settings given and the environment) gets one answer: the :class:`~moe_oracle.decide.fit.Fit` (weights as the
engine places them, the symmetric buffers the engine's plan sizes, the engine's memory share), the settings it
settled on and why (:func:`moe_oracle.decide.layout.settle_fit`: the settings given, else ones the engine accepts
that fit). Nothing here builds a launch plan: ``select`` asks the fit without :mod:`moe_oracle.launch`.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from moe_oracle.decide.fit import Fit, chosen_conversions
from moe_oracle.decide.layout import settle_fit
from moe_oracle.decide.memory_share import EngineMemorySettings
from moe_oracle.decide.selection import Decision
from moe_oracle.decide.settings_search import budget_deployment
from moe_oracle.fit.engines import PLAN_ENGINES, engine_module
from moe_oracle.fit.server import EngineParts, PlanContext
from moe_oracle.jsonfile import path_problem
from moe_oracle.model.types import ModelDescription
from moe_oracle.spec.deployment import Deployment


@dataclass(frozen=True)
class FitQuestion:
    """What the fit of one server depends on: the decision it serves (model, deployment, engine, conversions),
    MODEL as given (``model_arg``: the checkpoint the engine's command names), the engine memory settings the user
    gave (the rest are searched) and the environment the engine will see."""

    decision: Decision
    model_arg: str
    settings: EngineMemorySettings = field(default_factory=EngineMemorySettings)
    env: dict[str, str] = field(default_factory=dict)

    def context(self) -> PlanContext:
        """The :class:`PlanContext` an engine's plan module sizes this server from (one server on the deployment
        decided)."""
        from moe_oracle.answers.replicas import global_choice

        decision = self.decision
        backend, variant, _ = global_choice(decision)
        return PlanContext(
            model_arg=served_name(self.model_arg, decision.model),
            description=decision.model,
            decision=decision,
            deployment=decision.deployment,
            replicas=1,
            backend=backend,
            variant=variant,
            user_env=dict(self.env),
            memory=self.settings,
        )


def served_name(source: str, description: ModelDescription) -> str:
    """MODEL as given (a config.json: its directory; a manual JSON file: the model id it gives)."""
    path = Path(source)
    if path.suffix.lower() == ".json" and path_problem(path) is None and path.is_file():
        return str(path.parent) if path.name == "config.json" else description.model
    return source


def settled_budget(deployment: Deployment, settings: EngineMemorySettings) -> int | None:
    """The per-rank token budget the chosen engine settings imply when it differs from the deployment's
    (:meth:`EngineMemorySettings.budget`: vLLM's ``--max-num-batched-tokens``, SGLang's per-rank prefill chunk):
    the decision (and moe-oracle's plug-in inside the engine, which decides at that budget) must be made at it."""
    par = deployment.parallel
    per_rank = settings.budget(par.dp)
    return per_rank if per_rank is not None and per_rank != par.max_num_batched_tokens else None


def _symmetric_total(parts: EngineParts) -> tuple[int, str]:
    total = next((d for d in parts.derived if d.key == "symm_buffer_total_bytes"), None)
    return (total.value, "the derived total below") if total is not None else (0, "")


def _a2a_backend(parts: EngineParts) -> str:
    """The ``--moe-a2a-backend`` the engine's command sets ("none" when absent): SGLang places shared experts by it."""
    argv = parts.commands[0].argv if parts.commands else ()
    for flag, value in itertools.pairwise(argv):
        if flag == "--moe-a2a-backend":
            return value
    return "none"


def context_fit(ctx: PlanContext) -> tuple[Fit, EngineMemorySettings, str | None]:
    """The memory verdict of one planned server, the same for select, plan, serve and compare: its weights as the
    engine places them, the symmetric buffers the engine's plan sizes for each candidate of settings, and the
    engine's share for those settings (:func:`moe_oracle.decide.layout.settle_fit`: the settings given, else ones
    the engine accepts that fit, with the reason)."""
    if ctx.decision.engine not in PLAN_ENGINES:  # moe-oracle's runtime alone: no engine plan sizes buffers
        return settle_fit(  # the settings given (--memory-fraction) hold here too
            ctx.description,
            ctx.deployment,
            ctx.decision.engine,
            conversions=chosen_conversions(ctx.decision),
            given=ctx.memory,
        )
    eng = engine_module(ctx.decision.engine)

    def parts_for(settings: EngineMemorySettings) -> EngineParts:
        return eng.build(
            dataclasses.replace(ctx, memory=settings, deployment=budget_deployment(ctx.deployment, settings))
        )

    given = dataclasses.replace(ctx.memory, a2a_backend=_a2a_backend(parts_for(ctx.memory)))
    return settle_fit(
        ctx.description,
        ctx.deployment,
        ctx.decision.engine,
        conversions=chosen_conversions(ctx.decision),
        given=given,
        buffer_for=lambda s: _symmetric_total(parts_for(s)),
    )


def fit(question: FitQuestion) -> tuple[Fit, EngineMemorySettings, str | None]:
    """:func:`context_fit` of ``question`` (one server on the deployment decided): the fit, the engine settings it
    settled on and why. When those settings imply another per-rank budget (:func:`settled_budget`), the caller
    decides again at it (:func:`settled_decision`)."""
    return context_fit(question.context())


def settled_decision(
    decide_at: Callable[[int | None], Decision], question: FitQuestion
) -> tuple[Decision, Fit, str | None]:
    """A decision and its fit as ``select``, ``plan`` and the matrix make them: fit ``question`` (whose decision is
    ``decide_at(None)``) at the engine settings it gives, and when the engine settings that fit imply another
    per-rank budget, decide again at it (``decide_at(budget)``) and fit at those settings. Returns the settings'
    reason."""
    decision = question.decision
    found, settings, why = fit(question)
    budget = settled_budget(decision.deployment, settings)
    if budget is not None:
        decision = decide_at(budget)
        found, _, _ = fit(dataclasses.replace(question, decision=decision, settings=settings))
    return decision, found, why
