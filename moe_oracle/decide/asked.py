"""The question as a command asks it, resolved the same way for every deciding command.

``select``, ``plan``, ``serve``, ``compare`` and every cell of ``matrix`` build one :class:`AskedQuestion`
from the same flags (names and texts: a software profile name, a workload text, an advisory file) and
resolve it here, once, into the typed :class:`~moe_oracle.decide.question.Question` the decision is made from
(:meth:`ResolvedQuestion.question`; the door, :mod:`moe_oracle.answers`, decides it). So the same
question gets the same software default, workload, conversions, advisories, decision and fingerprint,
whichever command asked it.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from moe_oracle.cost.model import Workload
from moe_oracle.decide.advisories import Advisory, AdvisorySet, load_advisories
from moe_oracle.decide.engine_flags import DEFAULT_DECODE_TOKENS
from moe_oracle.decide.memory_share import EngineMemorySettings
from moe_oracle.decide.question import ConversionOptions, Question
from moe_oracle.decide.replicas import replica_deployment
from moe_oracle.decide.selection import Decision, Override, decide_automatically, decide_with_override
from moe_oracle.decide.software_need import choose_default
from moe_oracle.errors import EngineLayoutError
from moe_oracle.inputs import DeploymentFlags, build_deployment, parse_workload, resolve_engine_software
from moe_oracle.model.types import ModelDescription
from moe_oracle.releases.defaults import SoftwareOption, default_software
from moe_oracle.releases.layout_checks import layout_problems
from moe_oracle.releases.profiles import named_profile
from moe_oracle.rules import Engine
from moe_oracle.software.types import SoftwareProfile
from moe_oracle.spec.deployment import Deployment


@dataclass(frozen=True)
class QuestionOptions:
    """What a question asks besides the model, the device and layout, the engine and the software: the same
    for every cell of a matrix. ``workload`` is the ``--workload`` text; ``advisories_file`` the
    ``--advisories`` file; ``memory_fraction`` the engine's memory share the fit assumes (None: the engine's
    default); ``budget_given``: ``--max-num-batched-tokens`` was typed, so the memory fit judges it as given
    (otherwise a smaller per-rank budget may be chosen when the default does not fit)."""

    env: dict[str, str] = field(default_factory=dict)
    override: str | None = None
    allow_fallback: bool = False
    advisories_file: str | None = None
    conversion: ConversionOptions = field(default_factory=ConversionOptions)
    workload: str = "mixed"
    decode_tokens: int = DEFAULT_DECODE_TOKENS
    memory_fraction: float | None = None
    budget_given: bool = False
    #: ``--max-num-seqs`` as given (sequences per DP rank; None: the engine's default), carried to the engine
    max_num_seqs: int | None = None
    #: ``--max-model-len`` as given (tokens of one sequence; None: the model's context), carried to the engine
    max_model_len: int | None = None


@dataclass(frozen=True)
class AskedQuestion:
    """One question in the words of the command line (every default is the flags' default).

    ``software`` is a profile name or None (the default: ``installed`` for ``--device local``, the engine's
    release profile for ``--engine vllm``/``sglang``, ``all`` otherwise); ``layout_why`` the sentence saying
    the layout was proposed by the oracle (None when the flags gave it).
    """

    model: ModelDescription
    flags: DeploymentFlags
    engine: Engine = Engine.NONE
    software: str | None = None
    options: QuestionOptions = field(default_factory=QuestionOptions)
    layout_why: str | None = None

    def given_settings(self) -> EngineMemorySettings:
        """The engine memory settings the user gave (``--memory-fraction``, a typed ``--max-num-batched-tokens``):
        the memory fit judges them as given and searches only the others."""
        opts = self.options
        budget = self.flags.max_num_batched_tokens if opts.budget_given else None
        return EngineMemorySettings(
            fraction=opts.memory_fraction,
            max_num_batched_tokens=budget,
            max_num_seqs=opts.max_num_seqs,
            max_model_len=opts.max_model_len,
        )

    def _served_as_replicas(self, deployment: Deployment) -> bool:
        """A layout moe-oracle proposed (no layout flag) that the plan serves as replicas inside one domain whose
        EP divides the routed experts: the engine's rules are judged on the replicas, not on this layout."""
        import math

        from moe_oracle.decide.layout import splits_into_replicas

        experts = math.gcd(*(g.num_experts for g in self.model.layer_groups))
        return self.layout_why is not None and splits_into_replicas(deployment, experts)

    def resolve(self, advisories: tuple[Advisory, ...] | None = None) -> ResolvedQuestion:
        """The typed inputs (exit 2 on a bad value, with the flag that carries it). ``advisories``: already
        loaded ones (the matrix loads the file once for every cell); default: the bundled ones and the file's."""
        opts = self.options
        deployment, _ = build_deployment(self.flags, opts.env)
        problems = [] if self._served_as_replicas(deployment) else layout_problems(self.engine, self.model, deployment)
        if problems:
            first = problems[0]
            raise EngineLayoutError(f"{first.message}; {first.source}", fix=first.fix, fixes=first.fixes)
        check_ep_experts(self.model, deployment, proposed=self.layout_why is not None)
        from moe_oracle.decide.engine_flags import check_all2all, check_context, check_step_batch

        check_all2all(self.engine, self.flags.all2all_backend)
        check_context(self.model, opts.max_model_len)
        check_step_batch(self.engine, deployment, opts.max_num_seqs, opts.decode_tokens, budget_given=opts.budget_given)
        software, origin = resolve_engine_software(self.software, self.flags.device, self.engine.value)
        resolved = ResolvedQuestion(
            asked=self,
            deployment=deployment,
            software=software,
            software_origin=origin,
            advisories=load_advisories(opts.advisories_file) if advisories is None else AdvisorySet(advisories),
            override=Override.parse(opts.override) if opts.override else None,
            workload=parse_workload(opts.workload, deployment.parallel.tokens_per_rank, opts.decode_tokens),
        )
        options = default_software(self.engine, deployment.device.arch.value)
        if self.software is not None or not origin.startswith("default for --engine") or len(options) < 2:
            return resolved
        chosen, why = choose_default(
            options,
            lambda profile: replace(resolved, software=profile).served_decision(),
            self.engine.value,
            f"{deployment.device.name} ({deployment.device.arch.value})",
        )
        return replace(resolved, software=chosen, software_origin=why)


def check_ep_experts(model: ModelDescription, deployment: Deployment, *, proposed: bool = False) -> None:
    """An expert-parallel group larger than a layer group's routed experts is refused (exit 2): ranks past the
    expert count would hold no expert, and every kernel divides the experts over the EP ranks. A layout moe-oracle
    proposed (``proposed``: no layout flag given) over more GPUs than experts is not refused where the plan serves
    it as replicas inside one domain whose EP divides the experts (GB200 NVL72 racks: nine DP8+EP8 per rack)."""
    import math

    from moe_oracle.decide.layout import splits_into_replicas
    from moe_oracle.errors import DeploymentError, Fix, FixKind

    par, gpn = deployment.parallel, deployment.topology.gpus_per_node
    ep = par.ep
    if proposed and splits_into_replicas(deployment, math.gcd(*(g.num_experts for g in model.layer_groups))):
        return  # the plan serves replicas inside one domain whose EP divides the experts; select names them
    for group in model.layer_groups:
        experts = group.num_experts
        if ep > experts:
            divisor = max(d for d in range(1, experts + 1) if experts % d == 0 and d <= ep)
            dp = max(1, divisor // par.tp)
            nodes = -(-(dp * par.tp * par.pp) // gpn)
            flags = (
                ("--dp", str(dp)),
                ("--ep", str(divisor)),
                *((("--tp", str(par.tp)),) if par.tp > 1 else ()),
                ("--nodes", str(nodes)),
            )
            typed = Fix(FixKind.LAYOUT, flags=flags)
            raise DeploymentError(
                f"--ep {ep} is more than the {experts} routed experts of {model.model}'s layer group {group.name!r}: "
                f"{ep - experts} of the {ep} expert-parallel ranks would hold no expert",
                fix=f"use at most {divisor} expert-parallel ranks, e.g. {typed.flag_words()} (more GPUs: serve "
                "replicas of it)",
                fixes=(typed,),
            )


@dataclass(frozen=True)
class ResolvedQuestion:
    """An :class:`AskedQuestion` with its inputs resolved: the typed :class:`Question` (:meth:`question`), the
    override and how the software was chosen."""

    asked: AskedQuestion
    deployment: Deployment
    software: SoftwareProfile
    software_origin: str
    advisories: tuple[Advisory, ...]
    override: Override | None
    workload: Workload

    def at_budget(self, budget: int | None) -> ResolvedQuestion:
        """This question at another per-rank token budget (``--max-num-batched-tokens``): the budget the engine
        settings that fit imply (:func:`moe_oracle.launch.build.settled_decision`); None: this question."""
        if budget is None or budget == self.asked.flags.max_num_batched_tokens:
            return self
        flags = replace(self.asked.flags, max_num_batched_tokens=budget)
        return replace(self.asked, flags=flags).resolve(self.advisories)

    def question(self, deployment: Deployment | None = None) -> Question:
        """The typed question this resolves to (on ``deployment`` instead, for a plan's replica layout): what the
        decision is made from (:func:`moe_oracle.answers.door.decide`), with this question's advisories."""
        asked = self.asked
        return Question.of(
            asked.model,
            deployment or self.deployment,
            self.software,
            engine=asked.engine,
            workload=self.workload,
            conversion=asked.options.conversion,
            advisories=self.advisories,
        )

    def _default_options(self) -> tuple[SoftwareOption, ...]:
        """The default-software options this question chose among (empty: the software was given or has no
        alternatives)."""
        if self.asked.software is not None or not self.software_origin.startswith("default for --engine"):
            return ()
        return default_software(self.asked.engine, self.deployment.device.arch.value)

    def replacement_unused(self, decision: Decision) -> bool:
        """The default took a replacement DeepGEMM build (:func:`~moe_oracle.decide.software_need.choose_default`)
        through which ``decision``, the one a plan serves, runs nothing (the replicas it was taken for do not fit,
        say): then the release's own build is what to install."""
        options = self._default_options()
        taken = next((o for o in options if o.profile == self.software.name), None)
        if taken is None or taken.replaces is None:
            return False
        return not any(g.chosen and taken.replaces in {b.name for b in g.chosen.builds} for g in decision.groups)

    def at_release_software(self) -> ResolvedQuestion:
        """This question under the release's own software (the first default option), saying why."""
        options = self._default_options()
        profile = named_profile(options[0].profile) if options else None
        if profile is None or profile.name == self.software.name:
            return self
        dev = self.deployment.device
        why = (
            f"default for --engine {self.asked.engine.value} on {dev.name} ({dev.arch.value}): the release's own "
            f"DeepGEMM ({self.software.name} would serve only layouts this plan does not run)"
        )
        return replace(self, software=profile, software_origin=why)

    def served_decision(self) -> Decision:
        """The decision a plan serves: this question's, or, where its EP group crosses a domain and it runs no fused
        backend, one domain-sized replica's (as the plan adopts it)."""
        decision = self._decide()
        dep = self.deployment
        if dep.parallel.ep <= dep.topology.effective_domain or any(g.chosen for g in decision.groups):
            return decision
        rep = replica_deployment(dep)
        return decision if isinstance(rep, str) else self._decide(rep[0])

    def _decide(self, deployment: Deployment | None = None) -> Decision:
        """The decision as the door makes it (:func:`moe_oracle.answers.door.decide`), for the software choice."""
        question = self.question(deployment)
        if self.override is None:
            return decide_automatically(question)
        return decide_with_override(question, self.override, allow_fallback=self.asked.options.allow_fallback)
