"""Build a :class:`LaunchPlan` from deployment flags: decide, propose replicas, hand off to the engine.

The decision is :func:`moe_oracle.decide.selection.decide` with the target engine's semantics. When
the requested expert-parallel group crosses an NVLink/XGMI domain, the same model is decided
again on one domain-sized replica (e.g. DP8+EP8 instead of DP16+EP16); the replica layout is
adopted when it runs a fused backend that the requested layout cannot (two DP8+EP8 replicas behind a
router, as the only published SM90 mega-MoE serving figures ran it: a vLLM pull request description that
depends on vllm-project/DeepGEMM#44, neither publicly located on 2026-12-01), and shown as the considered
alternative otherwise.
"""

from __future__ import annotations

import dataclasses
import importlib
import itertools
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from moe_oracle.decide.asked import DEFAULT_DECODE_TOKENS, AskedQuestion, QuestionOptions, ResolvedQuestion
from moe_oracle.decide.fit import Fit, chosen_conversions
from moe_oracle.decide.layout import budget_deployment, settle_fit
from moe_oracle.decide.memory_share import EngineMemorySettings
from moe_oracle.decide.question import ConversionOptions
from moe_oracle.decide.selection import Decision
from moe_oracle.errors import BadInputError, DeploymentDoesNotFitError, OverrideRefusedError
from moe_oracle.inputs import (
    ENGINE_RELEASE_PROFILE,
    DeploymentFlags,
    deployment_warnings,
)
from moe_oracle.jsonfile import path_problem
from moe_oracle.launch.derived import Derived, Shape
from moe_oracle.launch.model import Command, LaunchPlan, Layout, ReplicaPlan
from moe_oracle.model.manual import MANUAL_MODEL_NAME
from moe_oracle.model.types import ModelDescription, layer_span
from moe_oracle.rules import Engine, ReasonCode
from moe_oracle.spec.deployment import Deployment, Parallelism, Topology

#: The engine release each plan targets by default (a named software profile).
RELEASE_PROFILE = {Engine(name): profile for name, profile in ENGINE_RELEASE_PROFILE.items()}
PLAN_ENGINES = (Engine.VLLM, Engine.SGLANG)


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
    layout_why: str | None = None
    #: Engine memory settings already chosen (a re-plan at the per-rank budget they imply) and why.
    settings: EngineMemorySettings | None = None
    settings_why: str | None = None
    description: ModelDescription | None = None

    @classmethod
    def of(cls, model: str | None, asked: AskedQuestion) -> PlanRequest:
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
            layout_why=asked.layout_why,
            description=asked.model,
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
            ),
            layout_why=self.layout_why,
        )


@dataclass
class PlanContext:
    """What an engine needs to write its commands for one server (one replica)."""

    model_arg: str
    description: ModelDescription
    decision: Decision
    deployment: Deployment
    replicas: int
    backend: str | None
    variant: str | None
    user_env: dict[str, str]
    #: The engine flags the memory fit settled on (given, or chosen because the defaults do not fit).
    memory: EngineMemorySettings = field(default_factory=EngineMemorySettings)

    @property
    def memory_fraction(self) -> float | None:
        """The memory share to pass on the engine's command line (None: the engine picks its own)."""
        return self.memory.fraction


@dataclass
class EngineParts:
    commands: list[Command]
    derived: list[Derived]
    notes: list[str]
    placeholders: dict[str, str]
    version: str


def distinct_shapes(decision: Decision) -> list[Shape]:
    """One entry per distinct MoE shape among the layer groups (equal shapes share one buffer)."""
    found: dict[tuple[int, int, int, int, int], list[str]] = {}
    for g in decision.groups:
        grp = g.group
        key = (grp.num_experts, grp.top_k, grp.hidden_size, grp.moe_intermediate_size, grp.num_shared_experts)
        found.setdefault(key, []).append(grp.name)
    return [Shape(e, k, h, i, s, tuple(names)) for (e, k, h, i, s), names in found.items()]


def per_rank_total(derived: list[Derived], hbm_gib: float) -> Derived | None:
    """Sum of the symmetric buffers one rank allocates, against its HBM."""
    parts = [d for d in derived if d.key in ("deepgemm_symm_buffer_bytes", "mori_shmem_heap_bytes")]
    if not parts:
        return None
    total = sum(d.value for d in parts)
    return Derived(
        key="symm_buffer_total_bytes",
        label="Symmetric memory per rank (all buffers / heaps above)",
        value=total,
        unit="bytes",
        formula=" + ".join(str(d.value) for d in parts) + f" = {total} ({total / (hbm_gib * (1 << 30)):.1%} of HBM)",
        inputs={"buffers": len(parts), "hbm_gib": hbm_gib},
        source="one buffer per distinct (E, top-k, H, I) shape: the engines cache buffers by shape; the HBM "
        "share is what the KV cache and weights no longer get",
    )


def engine_module(engine: Engine) -> Any:
    if engine not in PLAN_ENGINES:
        raise BadInputError(f"--engine {engine.value} has no launch plan", fix="use --engine vllm or --engine sglang.")
    return importlib.import_module(f"moe_oracle.engines.{engine.value}.plan")


def check_engine_layout(engine: Engine, deployment: Deployment) -> None:
    """The engine's own layout rules (vLLM: EP is every TP x DP rank or none), for every command alike: a layout
    the engine cannot launch is exit 2 for ``select --engine vllm`` as for ``plan``. No rules for ``none``."""
    if engine in PLAN_ENGINES:
        engine_module(engine).check_layout(deployment)


def _with_user_env(cmd: Command, user_env: dict[str, str]) -> Command:
    """``cmd`` with the environment the decision was made under (``--env KEY=VALUE`` and the relevant variables
    of this shell) passed to the engine too: a variable that changed the decision (and the sizes) must reach
    the process it describes. The engine's own settings for the same keys come from that decision and win."""
    if not user_env:
        return cmd
    return dataclasses.replace(cmd, env=tuple({**user_env, **cmd.env_dict}.items()))


def _model_arg(source: str | None, description: ModelDescription) -> str:
    """The model as the engine's command names it (:func:`_served_name`); a manual description names no checkpoint
    unless its JSON file gives the model's id (exit 2 otherwise)."""
    if source is None or description.model == MANUAL_MODEL_NAME:
        raise BadInputError(
            'a manual model description (the manual flags, or a JSON file without a "model" id) names no '
            "checkpoint for the engine to load, so it has no serve command",
            fix="give MODEL as the checkpoint (a Hugging Face id or a local directory with config.json), or put "
            'its id in the manual JSON\'s "model" field; select and the matrix decide for a manual description',
        )
    return _served_name(source, description)


def _served_name(source: str, description: ModelDescription) -> str:
    """MODEL as given (a config.json: its directory; a manual JSON file: the model id it gives)."""
    path = Path(source)
    if path.suffix.lower() == ".json" and path_problem(path) is None and path.is_file():
        return str(path.parent) if path.name == "config.json" else description.model
    return source


def replica_deployment(dep: Deployment) -> tuple[Deployment, int] | str:
    """One domain-sized replica of ``dep`` and how many of them cover its ranks, or why not."""
    par, topo = dep.parallel, dep.topology
    domain = topo.effective_domain
    group = par.tp * par.dp
    if par.ep != group:
        return f"ep={par.ep} is not tp*dp={group} (replicas are planned for pure expert parallelism)"
    if par.pp != 1:
        return "pipeline parallelism is on (each replica would need its own pipeline)"
    if domain < topo.gpus_per_node:
        return f"the {domain}-GPU domain is smaller than a {topo.gpus_per_node}-GPU node"
    if domain % par.tp or group % domain:
        return f"tp={par.tp} and tp*dp={group} do not split into {domain}-GPU domains"
    dp_r = domain // par.tp
    count = group // domain
    nodes_r = -(-domain // topo.gpus_per_node)
    replica = Deployment(
        device=dep.device,
        topology=Topology(gpus_per_node=topo.gpus_per_node, nodes=nodes_r, domain_size=topo.domain_size),
        parallel=Parallelism(
            tp=par.tp,
            dp=dp_r,
            ep=par.tp * dp_r,
            pp=1,
            max_num_batched_tokens=par.max_num_batched_tokens,
            all2all_backend=par.all2all_backend,
            eplb=par.eplb,
        ),
        env=dict(dep.env),
        speculative=dep.speculative,
    )
    return replica, count


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


def replica_choice(resolved: ResolvedQuestion, decision: Decision | None) -> ReplicaChoice | None:
    """The replica step of ``resolved`` (None when its EP stays inside one domain): ``plan`` serves the adopted
    replicas, and ``select`` names them next to its answer for the layout as given."""
    deployment = resolved.deployment
    if deployment.parallel.ep <= deployment.topology.effective_domain:
        return None
    rep = replica_deployment(deployment)
    if isinstance(rep, str):
        return ReplicaChoice(None, 0, None, False, f"no domain-sized replica layout: {rep}")
    rep_dep, count = rep
    try:
        rep_decision = resolved.decide(rep_dep)
    except OverrideRefusedError:
        return ReplicaChoice(rep_dep, count, None, False, "the override cannot run on a replica either")
    rep_backend, _, rep_why = global_choice(rep_decision)
    current = global_choice(decision)[0] if decision is not None else None
    adopted = rep_backend is not None and current is None
    why_not = "" if adopted else rep_why or "the requested layout already runs a fused backend"
    return ReplicaChoice(rep_dep, count, rep_decision, adopted, why_not)


def _first_reasons(candidates: Any) -> str:
    """The most relevant rejection: the candidates not rejected for architecture alone."""
    same_arch = [c for c in candidates if c.failures and c.failures[0].code is not ReasonCode.ARCH_UNSUPPORTED]
    pool = same_arch or list(candidates)
    parts = []
    for c in pool[:3]:
        if c.failures:
            parts.append(f"{c.spec.key} [{c.failures[0].code.value}] {c.failures[0].message}")
    return "; ".join(parts) or "no candidate"


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
                same_arch = c.failures[0].code is not ReasonCode.ARCH_UNSUPPORTED
                (lines if same_arch else other).append(line)
                break
    return lines or other


def build_plan(req: PlanRequest) -> LaunchPlan:
    """The launch plan of ``req``: the decision ``select`` makes for the same question (one resolution, one
    :func:`decide`), the replica layout where EP crosses a domain, the engine's command and the memory fit."""
    eng = engine_module(req.engine)
    resolved = req.asked().resolve()
    description, deployment = resolved.asked.model, resolved.deployment
    model_arg = _model_arg(req.model, description)
    software, sw_origin = resolved.software, resolved.software_origin
    override = resolved.override
    eng.check_layout(deployment)

    crossing = deployment.parallel.ep > deployment.topology.effective_domain
    refused: OverrideRefusedError | None = None
    decision: Decision | None = None
    try:
        decision = resolved.decide()
    except OverrideRefusedError as exc:
        if not crossing:
            raise
        refused = exc

    replica_plan: ReplicaPlan | None = None
    active, active_dep, replicas = decision, deployment, 1
    choice = replica_choice(resolved, decision)
    if choice is not None:
        requested_layout = Layout.of(deployment)
        refused_reasons = _domain_reasons(decision) if decision is not None else [refused.message] if refused else []
        refused_fp = resolved.fingerprint(decision) if decision else ""
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
            )
        if choice.adopted:
            assert choice.decision is not None and choice.deployment is not None
            active, active_dep, replicas = choice.decision, choice.deployment, choice.count
        if refused is not None and replicas == 1:
            raise refused
    assert active is not None
    backend, variant, why_not = global_choice(active)
    doc = resolved.record(active)
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
        return build_plan(dataclasses.replace(req, flags=flags, settings=ctx.memory, settings_why=settings_why))
    settings_why = settings_why or req.settings_why
    if not fit.fits:
        reason = fit.reasons[0]
        raise DeploymentDoesNotFitError(
            f"[{reason.code.value}] {description.model} on {Layout.of(active_dep).label()} x {active_dep.device.name}: "
            f"{reason.message}",
            fix=reason.remediation,
        )
    parts: EngineParts = eng.build(ctx)
    warnings = deployment_warnings(deployment) + list(active.warnings)
    notes = list(parts.notes)
    notes += active.advisory_notes()
    return LaunchPlan(
        engine=req.engine.value,
        engine_version=parts.version,
        model=description.model,
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
        return settle_fit(
            ctx.description, ctx.deployment, ctx.decision.engine, conversions=chosen_conversions(ctx.decision)
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


def decision_fit(
    model_arg: str, decision: Decision, settings: EngineMemorySettings, env: dict[str, str]
) -> tuple[Fit, EngineMemorySettings, str | None]:
    """:func:`context_fit` of a decision as ``select`` makes it (one server on the deployment decided); when the
    settings it returns imply another per-rank budget (:func:`settled_budget`), the caller decides again at it."""
    backend, variant, _ = global_choice(decision)
    ctx = PlanContext(
        model_arg=_served_name(model_arg, decision.model),
        description=decision.model,
        decision=decision,
        deployment=decision.deployment,
        replicas=1,
        backend=backend,
        variant=variant,
        user_env=dict(env),
        memory=settings,
    )
    return context_fit(ctx)


def settled_decision(
    decide_at: Callable[[int | None], Decision], model_arg: str, given: EngineMemorySettings, env: dict[str, str]
) -> tuple[Decision, Fit, str | None]:
    """A decision and its fit as ``select`` and the matrix make them, the way :func:`build_plan` does: decide
    (``decide_at(None)``), fit (:func:`decision_fit`) at the engine settings ``given``, and when the engine settings
    that fit imply another per-rank budget, decide again at it (``decide_at(budget)``) and fit at those settings.
    Returns the settings' reason."""
    decision = decide_at(None)
    fit, settings, why = decision_fit(model_arg, decision, given, env)
    budget = settled_budget(decision.deployment, settings)
    if budget is not None:
        decision = decide_at(budget)
        fit, _, _ = decision_fit(model_arg, decision, settings, env)
    return decision, fit, why
