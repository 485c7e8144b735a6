"""Build a :class:`LaunchPlan` from deployment flags: decide, propose replicas, fit, hand off to the engine.

The decision is the one ``select`` makes for the same question (:mod:`moe_oracle.answers`); where the
requested expert-parallel group crosses an NVLink/XGMI domain, the replica step
(:mod:`moe_oracle.answers.replicas`) may adopt domain-sized replicas; the memory fit is
:mod:`moe_oracle.fit`'s; the engine's plan module writes the commands.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from moe_oracle.answers.door import decide_resolved
from moe_oracle.answers.replicas import global_choice, replica_choice, routed_experts, split_reason
from moe_oracle.decide.asked import DEFAULT_DECODE_TOKENS, AskedQuestion, QuestionOptions, ResolvedQuestion
from moe_oracle.decide.fit import Fit
from moe_oracle.decide.memory_share import EngineMemorySettings
from moe_oracle.decide.question import ConversionOptions
from moe_oracle.decide.record import decision_fingerprint, decision_to_json
from moe_oracle.decide.selection import Decision
from moe_oracle.decide.share_advice import share_advice
from moe_oracle.errors import (
    BadInputError,
    DeploymentDoesNotFitError,
    DeploymentError,
    EngineLayoutError,
    OracleError,
    OverrideRefusedError,
    render_fixes,
)
from moe_oracle.fit.engines import engine_module
from moe_oracle.fit.server import Command, EngineParts, Layout, PlanContext
from moe_oracle.fit.settle import FitQuestion, context_fit, served_name, settled_budget
from moe_oracle.fit.settle import fit as server_fit
from moe_oracle.inputs import (
    DeploymentFlags,
    deployment_warnings,
)
from moe_oracle.launch.fix_judge import judged_fixes, judging
from moe_oracle.launch.model import LaunchPlan, ReplicaPlan
from moe_oracle.model.manual import MANUAL_MODEL_NAME
from moe_oracle.model.spans import layer_span
from moe_oracle.model.types import ModelDescription
from moe_oracle.rules import Engine, ReasonCode


@dataclass(frozen=True)
class PlanRequest:
    """A plan's question in the words of the command line (as :class:`AskedQuestion`, which it becomes), and
    ``model``, MODEL as given: the checkpoint the engine loads. ``description``: the model already read (the
    manual flags; a plan for it is refused, it names no checkpoint), else it is read from ``model``."""

    model: str | None
    flags: DeploymentFlags
    engine: Engine
    software: str | None = None
    override: str | None = None
    allow_fallback: bool = False
    env: dict[str, str] = field(default_factory=dict)
    advisories: str | None = None
    conversion: ConversionOptions = field(default_factory=ConversionOptions)
    workload: str = "mixed"
    decode_tokens: int = DEFAULT_DECODE_TOKENS
    memory_fraction: float | None = None
    budget_given: bool = False
    max_num_seqs: int | None = None
    max_model_len: int | None = None
    layout_why: str | None = None
    #: Engine memory settings already chosen (a re-plan at the per-rank budget they imply) and why.
    settings: EngineMemorySettings | None = None
    settings_why: str | None = None
    description: ModelDescription | None = None
    #: Judge against the engine release's own software (a re-plan when the default's replacement build serves
    #: nothing this plan runs; see :meth:`ResolvedQuestion.replacement_unused`).
    release_software: bool = False
    #: ``--checkpoint``: the checkpoint the engine loads, when MODEL (or the manual flags) only describes it.
    checkpoint: str | None = None

    @classmethod
    def of(cls, model: str | None, asked: AskedQuestion, checkpoint: str | None = None) -> PlanRequest:
        """The plan of ``asked`` (the question ``select`` answers for the same flags), serving ``model``."""
        opts = asked.options
        return cls(
            model=model,
            flags=asked.flags,
            engine=asked.engine,
            software=asked.software,
            override=opts.override,
            allow_fallback=opts.allow_fallback,
            env=dict(opts.env),
            advisories=opts.advisories_file,
            conversion=opts.conversion,
            workload=opts.workload,
            decode_tokens=opts.decode_tokens,
            memory_fraction=opts.memory_fraction,
            budget_given=opts.budget_given,
            max_num_seqs=opts.max_num_seqs,
            max_model_len=opts.max_model_len,
            layout_why=asked.layout_why,
            description=asked.model,
            checkpoint=checkpoint,
        )

    def asked(self) -> AskedQuestion:
        """The question this plan answers, exactly as ``select`` would be asked it."""
        from moe_oracle.model.resolve import resolve_model

        if self.description is None and self.model is None:
            raise BadInputError("plan needs MODEL", fix="e.g. moe-oracle plan deepseek-ai/DeepSeek-V4-Flash ...")
        return AskedQuestion(
            model=self.description or resolve_model(str(self.model)),
            flags=self.flags,
            engine=self.engine,
            software=self.software,
            options=QuestionOptions(
                env=dict(self.env),
                override=self.override,
                allow_fallback=self.allow_fallback,
                advisories_file=self.advisories,
                conversion=self.conversion,
                workload=self.workload,
                decode_tokens=self.decode_tokens,
                memory_fraction=self.memory_fraction,
                budget_given=self.budget_given,
                max_num_seqs=self.max_num_seqs,
                max_model_len=self.max_model_len,
            ),
            layout_why=self.layout_why,
        )


#: The engine flag that caps the longest sequence served (moe-oracle's ``--max-model-len``).
CONTEXT_FLAG = {Engine.VLLM: "--max-model-len", Engine.SGLANG: "--context-length"}


def _shorter_context(fit: Fit) -> int | None:
    """The context the engine's command must cap where the KV cache left holds less than the context asked (the
    verdict "FITS with a shorter context"); None where it holds it, or the fit does not know."""
    if not fit.fits or fit.max_context is None or fit.context is None or fit.max_context >= fit.context:
        return None
    return fit.max_context


def _with_user_env(cmd: Command, user_env: dict[str, str]) -> Command:
    """``cmd`` with the environment the decision was made under (``--env KEY=VALUE`` and the relevant variables
    of this shell) passed to the engine too: a variable that changed the decision (and the sizes) must reach
    the process it describes. The engine's own settings for the same keys come from that decision and win."""
    if not user_env:
        return cmd
    return dataclasses.replace(cmd, env=tuple({**user_env, **cmd.env_dict}.items()))


def _model_arg(source: str | None, description: ModelDescription, checkpoint: str | None = None) -> str:
    """The model as the engine's command names it: ``checkpoint`` (``--checkpoint``, a config.json: its directory)
    when given, else MODEL (:func:`_served_name`); a manual description names no checkpoint unless its JSON file
    gives the model's id (exit 2 otherwise)."""
    if checkpoint is not None:
        if not checkpoint.strip() or "\x00" in checkpoint:
            raise BadInputError(f"--checkpoint {checkpoint!r} is empty", fix=_CHECKPOINT_FIX)
        return str(Path(checkpoint).parent) if Path(checkpoint).name == "config.json" else checkpoint
    if source is None or description.model == MANUAL_MODEL_NAME:
        raise BadInputError(
            'a manual model description (the manual flags, or a JSON file without a "model" id) names no '
            "checkpoint for the engine to load, so it has no serve command",
            fix=_CHECKPOINT_FIX,
        )
    return served_name(source, description)


_CHECKPOINT_FIX = (
    "name the checkpoint the engine loads with --checkpoint (a Hugging Face id or a local directory with "
    'config.json), give MODEL as the checkpoint, or put its id in the manual JSON\'s "model" field'
)


def _rejected(decision: Decision) -> list[dict[str, Any]]:
    """The main layer group's rejected candidates (:attr:`GroupDecision.rejected`, as select lists them)."""
    return [
        {
            "candidate": c.label,
            "codes": [r.code.value for r in c.failures],
            "reasons": [{"code": r.code.value, "message": r.message, "fix": r.remediation} for r in c.failures],
        }
        for c in decision.main.rejected
    ]


def _groups(decision: Decision) -> list[dict[str, Any]]:
    built = [
        {
            "name": g.group.name,
            "role": g.group.role,
            "layers": layer_span(g.group.layers),
            "chosen": None if g.chosen is None else g.chosen.spec.key,
            "chosen_label": None if g.chosen is None else g.chosen.label,
            "accuracy_class": None if g.chosen is None else g.chosen.accuracy_class,
            "validation": None if g.chosen is None else g.chosen.validation_text,
            "unreleased_build": None if g.chosen is None else g.chosen.unreleased_build,
            "fallback": g.fallback,
        }
        for g in decision.groups
    ]
    unbuilt = [
        {"name": g.name, "role": g.role, "layers": layer_span(g.layers), "chosen": None, "built": False}
        for g in decision.question.unbuilt
    ]
    return built + unbuilt


def _domain_reasons(decision: Decision) -> list[str]:
    """EP_EXCEEDS_DOMAIN lines, for candidates built for this GPU first (others only if none is)."""
    lines: list[str] = []
    other: list[str] = []
    for c in decision.main.candidates:
        for r in c.failures:
            if r.code is ReasonCode.EP_EXCEEDS_DOMAIN:
                line = f"{c.spec.key}: [{r.code.value}] {r.message}"
                same_arch = all(f.code is not ReasonCode.ARCH_UNSUPPORTED for f in c.failures)
                (lines if same_arch else other).append(line)
                break
    return lines or other


def _replica_fits(req: PlanRequest, resolved: ResolvedQuestion) -> Callable[[Decision], Any]:
    """The memory fit of one replica's server for :func:`replica_choice` (as ``select`` measures it)."""
    asked = resolved.asked
    model_arg = req.model or asked.model.model
    return lambda d: server_fit(FitQuestion(d, model_arg, asked.given_settings(), dict(asked.options.env)))[0]


def build_plan(req: PlanRequest) -> LaunchPlan:
    """The launch plan of ``req``: the decision ``select`` makes for the same question (one resolution, one
    :func:`decide`), the replica layout where EP crosses a domain, the engine's command and the memory fit.

    A refusal that types its fixes (memory, the engine's own layout check, EP beyond the experts) carries them
    judged (:func:`judge_refusal`)."""
    try:
        return _build_plan(req)
    except (DeploymentDoesNotFitError, DeploymentError, EngineLayoutError) as exc:
        raise judge_refusal(req, exc) from None


def judge_refusal(req: PlanRequest, exc: OracleError) -> OracleError:
    """``exc`` (a refusal of ``req``) with every alternative its typed fixes name re-planned (:mod:`.fix_judge`);
    ``select`` and :func:`moe_oracle.select` judge their refusals through this one function, so every front end
    prints one line."""
    judged = None if judging() else judged_fixes(req, exc, _selected if req.engine is Engine.NONE else build_plan)
    if judged is None or render_fixes(judged) == exc.fix:
        return exc
    out = type(exc)(exc.message, fixes=judged)
    selection = getattr(exc, "selection", None)
    if selection is not None:
        setattr(out, "selection", selection)  # noqa: B010 (select's refusal carries its selection)
    return out


def judge_select(model: str | None, asked: AskedQuestion, exc: OracleError) -> OracleError:
    """``select``'s refusal of ``asked`` (memory, the engine's layout check, EP beyond the experts) with its fixes
    judged as ``plan`` judges them: the one function the CLI's ``select`` and :func:`moe_oracle.select` call (a
    manual description names no checkpoint to re-plan: its refusal is left as it is)."""
    return exc if model is None else judge_refusal(PlanRequest.of(model, asked), exc)


def _selected(req: PlanRequest) -> Any:
    """``select``'s answer to ``req``, read as the judge reads a plan (``--engine none`` has no launch plan): raises
    as ``select`` does."""
    from types import SimpleNamespace

    from moe_oracle.answers.door import select_asked

    selection = select_asked(req.asked(), req.model)
    backend, variant, _ = global_choice(selection.decision)
    layout: Any = Layout.of(selection.decision.deployment)
    replicas = selection.to_dict().get("replicas")
    if replicas:  # what plan and serve run: replicas of a domain-sized layout, its path
        label, chosen = replicas["layout"], replicas["chosen"]
        backend, variant = chosen.split(":", 1) if ":" in chosen else (None, None)
        layout = SimpleNamespace(label=lambda: label)
        replicas = SimpleNamespace(count=replicas["count"], adopted=True)
    fit = None if replicas else selection.fit  # select measured the whole layout, not one replica
    return SimpleNamespace(backend=backend, variant=variant, fit=fit, layout=layout, replicas=replicas)


def _build_plan(req: PlanRequest) -> LaunchPlan:
    eng = engine_module(req.engine)
    resolved = req.asked().resolve()
    if req.release_software:
        resolved = resolved.at_release_software()
    description, deployment = resolved.asked.model, resolved.deployment
    model_arg = _model_arg(req.model, description, req.checkpoint)
    software, sw_origin = resolved.software, resolved.software_origin
    override = resolved.override
    eng.check_layout(deployment)

    crossing = deployment.parallel.ep > deployment.topology.effective_domain
    refused: OverrideRefusedError | None = None
    decision: Decision | None = None
    try:
        decision = decide_resolved(resolved)
    except OverrideRefusedError as exc:
        if not crossing:
            raise
        refused = exc

    replica_plan: ReplicaPlan | None = None
    active, active_dep, replicas = decision, deployment, 1
    choice = replica_choice(
        deployment,
        decision,
        lambda dep: decide_resolved(resolved, dep),
        _replica_fits(req, resolved),
        routed_experts(description),
    )
    if choice is not None:
        requested_layout = Layout.of(deployment)
        refused_reasons = _domain_reasons(decision) if decision is not None else [refused.message] if refused else []
        refused_fp = decision_fingerprint(decision) if decision else ""
        if choice.decision is None and refused is not None:
            raise refused
        if choice.deployment is None or choice.decision is not None:
            layout = Layout.of(choice.deployment) if choice.deployment is not None else requested_layout
            replica_plan = ReplicaPlan(
                count=choice.count,
                layout=layout,
                requested=requested_layout,
                router_hint=eng.router_hint(choice.count, layout) if choice.deployment is not None else "",
                refused_reasons=refused_reasons,
                refused_fingerprint=refused_fp,
                adopted=choice.adopted,
                why_not=[] if choice.adopted else [choice.why_not],
                why=split_reason(deployment, routed_experts(description)),
            )
        if choice.adopted:
            assert choice.decision is not None and choice.deployment is not None
            active, active_dep, replicas = choice.decision, choice.deployment, choice.count
        if refused is not None and replicas == 1:
            raise refused
    assert active is not None
    if not req.release_software and resolved.replacement_unused(active):
        return _build_plan(dataclasses.replace(req, release_software=True))
    backend, variant, why_not = global_choice(active)
    doc = decision_to_json(active, software_origin=resolved.software_origin)
    ctx = PlanContext(
        model_arg=model_arg,
        description=description,
        decision=active,
        deployment=active_dep,
        replicas=replicas,
        backend=backend,
        variant=variant,
        user_env=dict(req.env),
        memory=req.settings or resolved.asked.given_settings(),
    )
    fit, ctx.memory, settings_why = context_fit(ctx)
    budget = settled_budget(active_dep, ctx.memory)
    if budget is not None and req.settings is None:  # the settings change the per-rank budget: decide again at it
        flags = dataclasses.replace(req.flags, max_num_batched_tokens=budget)
        return _build_plan(dataclasses.replace(req, flags=flags, settings=ctx.memory, settings_why=settings_why))
    settings_why = settings_why or req.settings_why
    if not fit.fits:
        reason = fit.reasons[0]
        refusal = DeploymentDoesNotFitError(
            f"[{reason.code.value}] {description.model} on {Layout.of(active_dep).label()} x {active_dep.device.name}: "
            f"{reason.message}",
            fix=reason.remediation,
            fixes=fit.fixes,
        )
        raise refusal
    shorter = _shorter_context(fit)
    if shorter is not None:
        ctx.memory = dataclasses.replace(ctx.memory, max_model_len=shorter)
    parts: EngineParts = eng.build(ctx)
    warnings = deployment_warnings(deployment) + list(active.warnings)
    advice = share_advice(
        req.engine,
        active_dep,
        fit,
        given=req.memory_fraction is not None,
        hidden=description.main_group.hidden_size,
    )
    if advice is not None:
        settings_why = f"{settings_why}; {advice}" if settings_why else advice
    notes = list(parts.notes)
    if shorter is not None:
        notes.append(
            f"{CONTEXT_FLAG.get(req.engine, '--max-model-len')} {shorter}: the KV cache left per rank holds "
            f"{shorter:,} tokens of one sequence, below the {fit.context:,} asked; without the flag the engine "
            "would size for the longer context (vLLM refuses to start)"
        )
    notes += active.advisory_notes()
    return LaunchPlan(
        engine=req.engine.value,
        engine_version=parts.version,
        model=model_arg if description.model == MANUAL_MODEL_NAME else description.model,
        architecture=description.architecture,
        device=deployment.device.name,
        arch=deployment.device.arch.value,
        software=software.name,
        software_origin=sw_origin,
        requested=Layout.of(deployment),
        layout=Layout.of(active_dep),
        backend=backend,
        variant=variant,
        groups=_groups(active),
        rejected=_rejected(active),
        commands=[_with_user_env(cmd, req.env) for cmd in parts.commands],
        derived=parts.derived,
        replicas=replica_plan,
        notes=notes,
        warnings=warnings,
        placeholders=parts.placeholders,
        fingerprint=doc["fingerprint"],
        override=None if override is None else str(override),
        decision=doc,
        default_command_reason=why_not,
        fit=fit,
        layout_why=req.layout_why,
        settings_why=settings_why,
        decision_obj=active,
    )
