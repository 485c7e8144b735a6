"""The one door: every front end's question is answered here.

Two shapes of question reach it. The CLI and the keyword API ask an
:class:`~moe_oracle.decide.asked.AskedQuestion` (the command line's words): :func:`select_asked` resolves it,
decides, settles the memory fit and builds ``select --json``'s document. An engine plug-in, which reads its
model, deployment and software from the engine's own configuration, asks a typed
:class:`~moe_oracle.decide.question.Question`: :func:`answer` and :func:`judge`. Both decide through
:func:`~moe_oracle.decide.selection.decide_automatically` / :func:`~moe_oracle.decide.selection.decide_with_override`
with the bundled advisories in force (a question built without them records which it lacks), and both
fingerprint with :func:`~moe_oracle.decide.record.decision_fingerprint`, the one definition.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from moe_oracle.answers.results import GroupVerdict, Rejected, Selection, Verdict
from moe_oracle.decide.asked import AskedQuestion, ResolvedQuestion
from moe_oracle.decide.question import Question
from moe_oracle.decide.record import decision_fingerprint, decision_to_json
from moe_oracle.decide.selection import Decision, Override, decide_automatically, decide_with_override
from moe_oracle.errors import DeploymentDoesNotFitError, OverrideRefusedError
from moe_oracle.registry import Registry
from moe_oracle.rules import VariantSpec
from moe_oracle.rules.variant_key import VariantKey
from moe_oracle.spec.deployment import Deployment

if TYPE_CHECKING:
    from moe_oracle.decide.fit import Fit
    from moe_oracle.rules import Engine
    from moe_oracle.spec.deployment import Deployment


def decide(
    question: Question,
    *,
    override: Override | None = None,
    allow_fallback: bool = False,
    registry: Registry | None = None,
) -> Decision:
    """The decision for ``question``: automatic, or with ``override`` chosen wherever it can run
    (:class:`OverrideRefusedError` otherwise, unless ``allow_fallback``). Every front end's decision is made here."""
    if override is None:
        return replace(decide_automatically(question, registry), allow_fallback=allow_fallback)
    return decide_with_override(question, override, registry, allow_fallback=allow_fallback)


def decide_resolved(
    resolved: ResolvedQuestion, deployment: Deployment | None = None, *, registry: Registry | None = None
) -> Decision:
    """The decision for a command line's resolved question (on ``deployment`` instead: a replica's)."""
    return decide(
        resolved.question(deployment),
        override=resolved.override,
        allow_fallback=resolved.asked.options.allow_fallback,
        registry=registry,
    )


def replay(inputs: dict[str, Any]) -> Decision:
    """The decision for a record's inputs (:func:`moe_oracle.decide.record.replay_inputs`): its advisories are the
    set it was made under (the record says which bundled ones it lacks)."""
    question = Question.of(
        inputs["model"],
        inputs["deployment"],
        inputs["software"],
        engine=inputs["engine"],
        workload=inputs["workload"],
        conversion=inputs["conversion"],
        advisories=inputs["advisories"],
    )
    return decide(question, override=inputs["override"], allow_fallback=inputs["allow_fallback"])


def answer(
    question: Question,
    *,
    override: Override | str | None = None,
    allow_fallback: bool = False,
    registry: Registry | None = None,
) -> Selection:
    """The decision for a typed question (no memory fit: an engine sizes its own memory), as a :class:`Selection`
    whose document is ``select --json``'s for the same inputs. An override that cannot run raises
    :class:`OverrideRefusedError` (unless ``allow_fallback``), as ``select --moe-backend`` exits 3."""
    wanted = Override.parse(override) if isinstance(override, str) else override
    return selection_of(decide(question, override=wanted, allow_fallback=allow_fallback, registry=registry))


def selection_of(decision: Decision, *, software_origin: str = "", fit: Fit | None = None) -> Selection:
    """The :class:`Selection` of a decision already made (its record, and the fit when given)."""
    doc = decision_to_json(decision, software_origin=software_origin)
    if fit is not None:
        doc["fit"] = fit.to_json()
    return Selection(decision, fit, doc)


def judge(question: Question, backend: Override | str, *, registry: Registry | None = None) -> Verdict:
    """Can ``backend`` run every layer group of ``question``? Every reason when not (no exception: a verdict);
    an unknown backend or variant name is :class:`~moe_oracle.errors.BadInputError`."""
    wanted = Override.parse(backend) if isinstance(backend, str) else backend
    automatic = answer(question, registry=registry)
    try:
        chosen: Selection | None = answer(question, override=wanted, registry=registry)
        refusal: str | None = None
        trail: tuple[str, ...] = ()
    except OverrideRefusedError as exc:
        chosen, refusal, trail = None, exc.one_line(), exc.trail
    return verdict_of(wanted, automatic, chosen, refusal, trail)


def verdict_of(
    wanted: Override, automatic: Selection, chosen: Selection | None, refusal: str | None, trail: tuple[str, ...]
) -> Verdict:
    def matches(spec: VariantSpec) -> bool:
        return VariantKey(wanted.backend, wanted.variant).matches(spec)

    groups = []
    picked = {g.group.name: g.chosen for g in chosen.decision.groups} if chosen is not None else {}
    for gd in automatic.decision.groups:
        mine = [c for c in (*gd.candidates, *gd.conversions) if matches(c.spec)]
        winner = picked.get(gd.group.name)
        groups.append(
            GroupVerdict(
                name=gd.group.name,
                layers=tuple(gd.group.layers),
                chosen=None if winner is None else winner.spec.key,
                rejected=tuple(Rejected(c.label, c.failures) for c in mine if not c.eligible),
            )
        )
    return Verdict(str(wanted), tuple(groups), chosen, automatic, refusal, trail)


def select_asked(
    asked: AskedQuestion,
    source: str | None = None,
    *,
    resolved: ResolvedQuestion | None = None,
    on_refusal: Callable[[OverrideRefusedError], None] | None = None,
) -> Selection:
    """``moe-oracle select``'s answer to ``asked`` (``source``: MODEL as given): the decision at the engine settings
    the memory fit settles on, the fit, the layout and settings the oracle chose, and the replica layout plan and
    serve run where EP crosses a domain. A deployment that does not fit raises :class:`DeploymentDoesNotFitError`
    with the selection attached (``.selection``); ``on_refusal`` sees a refused override before it propagates.
    ``resolved``: ``asked`` already resolved and its layout checked (:func:`check_engine_layout`)."""
    if resolved is None:
        resolved = asked.resolve()
        check_engine_layout(asked.engine, resolved.deployment)
    decision, fit, settings_why = settle(resolved, source, on_refusal=on_refusal)
    selection = selection_of(decision, software_origin=resolved.software_origin, fit=fit)
    doc = selection._document
    if asked.layout_why:
        doc["layout_chosen"] = asked.layout_why
    if settings_why:
        doc["settings_chosen"] = settings_why
    replicas, active = _replicas(resolved, decision)
    released = resolved.at_release_software() if resolved.replacement_unused(active) else resolved
    if released is not resolved:  # as plan does: the replacement build the default took serves nothing it runs
        return select_asked(asked, source, resolved=released, on_refusal=on_refusal)
    if replicas:
        doc["replicas"] = replicas
    if not fit.fits:
        raise does_not_fit(selection)
    return selection


def settle(
    resolved: ResolvedQuestion,
    source: str | None = None,
    *,
    registry: Registry | None = None,
    on_refusal: Callable[[OverrideRefusedError], None] | None = None,
) -> tuple[Decision, Fit, str | None]:
    """The decision of ``resolved`` and its memory fit (:mod:`moe_oracle.fit`): decided at the flags' per-rank
    budget, fitted at the engine settings given, and decided again at the budget the settings that fit imply.
    ``select`` and every matrix cell answer this way; ``plan`` fits the server it launches the same way."""
    from moe_oracle.fit.settle import FitQuestion, settled_decision

    def decide_at(budget: int | None) -> Decision:
        try:
            return decide_resolved(resolved.at_budget(budget), registry=registry)
        except OverrideRefusedError as exc:
            if on_refusal is not None:
                on_refusal(exc)
            raise

    asked = resolved.asked
    question = FitQuestion(decide_at(None), source or asked.model.model, asked.given_settings(), asked.options.env)
    return settled_decision(decide_at, question)


def check_engine_layout(engine: Engine, deployment: Deployment) -> None:
    """The engine's own layout rules (exit 2 for a layout the engine cannot launch), for every command alike."""
    from moe_oracle.fit.engines import check_engine_layout as check

    check(engine, deployment)


def does_not_fit(selection: Selection) -> DeploymentDoesNotFitError:
    """The refusal ``plan`` gives for the same deployment (same message, fix and exit code), carrying the selection."""
    from moe_oracle.fit.server import Layout

    decision, fit = selection.decision, selection.fit
    assert fit is not None
    reason = fit.reasons[0]
    exc = DeploymentDoesNotFitError(
        f"[{reason.code.value}] {decision.model.model} on {Layout.of(decision.deployment).label()} x "
        f"{decision.deployment.device.name}: {reason.message}",
        fix=reason.remediation,
        fixes=fit.fixes,
    )
    exc.selection = selection  # type: ignore[attr-defined]
    return exc


def _replicas(resolved: ResolvedQuestion, decision: Decision) -> tuple[dict[str, Any] | None, Decision]:
    """Where EP crosses a domain and one domain-sized replica runs a fused backend this layout cannot: what
    ``plan`` and ``serve`` run instead (the same replica step, :func:`moe_oracle.answers.replicas.replica_choice`),
    with that decision's fingerprint, so both commands name both answers; and the decision they serve (the
    replica's, else ``decision``)."""
    from moe_oracle.answers.replicas import replica_choice, routed_experts
    from moe_oracle.fit.server import Layout
    from moe_oracle.fit.settle import FitQuestion, fit

    asked = resolved.asked
    choice = replica_choice(
        resolved.deployment,
        decision,
        lambda dep: decide_resolved(resolved, dep),
        lambda d: fit(FitQuestion(d, asked.model.model, asked.given_settings(), dict(asked.options.env)))[0],
        routed_experts(asked.model),
    )
    if choice is None or not choice.adopted or choice.decision is None or choice.deployment is None:
        return None, decision
    layout = Layout.of(choice.deployment)
    fingerprint = decision_fingerprint(choice.decision)
    main = choice.decision.main.chosen
    chosen = main.label if main is not None else "no fused backend"
    flags = f"--nodes {layout.nodes} --dp {layout.dp} --ep {layout.ep}" + (
        f" --tp {layout.tp}" if layout.tp > 1 else ""
    )
    return {
        "count": choice.count,
        "layout": layout.label(),
        "chosen": chosen,
        "fingerprint": fingerprint,
        "note": f"plan and serve run {choice.count} replicas of {layout.label()} (each inside one NVLink/XGMI domain), "
        f"where {chosen} runs; that is select's decision with {flags} (fingerprint {fingerprint})",
    }, choice.decision
