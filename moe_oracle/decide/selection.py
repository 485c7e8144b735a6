"""Selection: every candidate gets a verdict; eligible ones are ranked by expected cost.

:func:`decide` is the one decision function behind automatic selection, explicit overrides,
the capability matrix and the engine plug-ins. It builds the :class:`~moe_oracle.decide.question.Question`
(model description, deployment, software profile, engine, workload, conversion options,
advisories) and answers it with :func:`decide_automatically` or, given an override,
:func:`decide_with_override`. Both are pure functions of the question, the override and the
registered variants, so every process of a server reaches the same decision and a decision
record can be replayed.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from moe_oracle.cost.local import active_for
from moe_oracle.cost.model import CostEstimate, Workload, workload_cost
from moe_oracle.cost.near_tie import NearTie, near_tie_advice
from moe_oracle.cost.nonfused import applicable_paths
from moe_oracle.decide.accuracy_class import accuracy_class, needs_low_precision_opt_in
from moe_oracle.decide.advisories import Advisory, nearby, nearby_note
from moe_oracle.decide.candidates import Candidate, evaluate_candidate
from moe_oracle.decide.conversions import conversion_candidates, expert_bytes_per_rank
from moe_oracle.decide.per_batch import (
    Batches,
    batch_ties,
    fused_tie,
    per_batch,
    regimes_note,
    tie_tokens,
    workload_tie,
)
from moe_oracle.decide.question import ConversionOptions, Question
from moe_oracle.decide.refused_fixes import mark_refused
from moe_oracle.errors import BadInputError, OverrideRefusedError, excerpt
from moe_oracle.model.spans import layer_span
from moe_oracle.model.types import ModelDescription, MoELayerGroup
from moe_oracle.registry import Registry, load_registry
from moe_oracle.releases.fallback import fallback_path
from moe_oracle.rules import Engine, VariantSpec
from moe_oracle.rules.build import serving_builds
from moe_oracle.rules.variant_key import VariantKey
from moe_oracle.software.types import SoftwareProfile
from moe_oracle.spec.deployment import Deployment


@dataclass(frozen=True)
class Override:
    """An explicit ``--moe-backend NAME[:VARIANT]``."""

    backend: str
    variant: str | None = None

    @classmethod
    def parse(cls, text: str) -> Override:
        """``--moe-backend NAME[:VARIANT]`` (:class:`~moe_oracle.rules.variant_key.VariantKey`); a malformed value,
        ``*:VARIANT`` or an ``emulation:`` key is a :class:`BadInputError`."""
        key = VariantKey.parse(text)
        if key.emulated:
            raise BadInputError(
                f"--moe-backend {excerpt(text)}: a numerics twin is not a serving backend",
                fix="run the twin with moe-oracle accuracy, or name a backend (e.g. deep_gemm_mega_moe)",
            )
        if key.backend is None:
            raise BadInputError(
                f"--moe-backend {excerpt(text)} names no backend: expected NAME or NAME:VARIANT",
                fix="name the backend, e.g. deep_gemm_mega_moe or deep_gemm_mega_moe:sm100_fp8xfp4",
            )
        return cls(key.backend, key.variant)

    def __str__(self) -> str:
        return f"{self.backend}:{self.variant}" if self.variant else self.backend


@dataclass(frozen=True)
class NonFusedEstimate:
    """The best measured non-fused path for a group, with its expected cost on the workload."""

    key: str
    description: str
    cost: CostEstimate

    def to_json(self) -> dict[str, object]:
        return {
            "path": self.key,
            "description": self.description,
            "expected_us": round(self.cost.us, 1),
            "cost_basis": self.cost.basis,
            "held_out_error": None if self.cost.held_out is None else self.cost.held_out.to_json(),
        }


@dataclass(frozen=True)
class GroupDecision:
    group: MoELayerGroup
    candidates: tuple[Candidate, ...]
    chosen: Candidate | None
    fallback: str | None
    notes: tuple[str, ...] = ()
    nonfused: NonFusedEstimate | None = None
    conversions: tuple[Candidate, ...] = ()
    #: paths the model ranks within its transfer error on this unmeasured shape (:mod:`moe_oracle.cost.near_tie`)
    near_ties: tuple[NearTie, ...] = ()

    @property
    def others(self) -> tuple[Candidate, ...]:
        """Every candidate but the chosen one, as stored and after a conversion; the chosen variant is not listed
        again as stored when it is served after a conversion (its stored form's failure is what the conversion
        answers), so the chosen never appears among the rejected."""
        spec = self.chosen.spec if self.chosen is not None else None
        return tuple(c for c in (*self.candidates, *self.conversions) if c is not self.chosen and c.spec is not spec)

    @property
    def rejected(self) -> tuple[Candidate, ...]:
        """The candidates that cannot run (:attr:`others` that are not eligible): what every output lists."""
        return tuple(c for c in self.others if not c.eligible)

    def to_json(self) -> dict[str, object]:
        return {
            "name": self.group.name,
            "layers": list(self.group.layers),
            "weight_format": self.group.weight_format.value,
            "chosen": None if self.chosen is None else _chosen_json(self.chosen),
            "accuracy_class": None if self.chosen is None else self.chosen.accuracy_class,
            "unreleased_build": None if self.chosen is None else self.chosen.unreleased_build,
            "fallback": self.fallback,
            "nonfused": None if self.nonfused is None else self.nonfused.to_json(),
            "notes": list(self.notes),
            "near_ties": [t.to_json() for t in self.near_ties],
            "candidates": [c.to_json() for c in self.candidates],
            "conversion_candidates": [c.to_json() for c in self.conversions],
            "rejected": [c.label for c in self.rejected],
        }


def _chosen_json(c: Candidate) -> dict[str, object]:
    out: dict[str, object] = {"backend": c.spec.backend, "variant": c.spec.variant}
    if c.conversion is not None:
        out["conversion"] = c.conversion.to_json()
    return out


@dataclass(frozen=True)
class Decision:
    """The answer to a :class:`~moe_oracle.decide.question.Question`: one :class:`GroupDecision` per layer group,
    the override it honoured (if any) and the warnings of a refused override that fell back."""

    question: Question
    override: Override | None
    allow_fallback: bool
    groups: tuple[GroupDecision, ...]
    warnings: tuple[str, ...] = field(default=())

    @property
    def main(self) -> GroupDecision:
        return self.groups[0]

    @property
    def model(self) -> ModelDescription:
        return self.question.model

    @property
    def deployment(self) -> Deployment:
        return self.question.deployment

    @property
    def software(self) -> SoftwareProfile:
        return self.question.software

    @property
    def engine(self) -> Engine:
        return self.question.engine

    @property
    def workload(self) -> Workload:
        return self.question.workload

    @property
    def conversion(self) -> ConversionOptions:
        return self.question.conversion

    def nearby_advisories(self) -> tuple[tuple[Advisory, VariantSpec], ...]:
        """Each known-bad advisory about a chosen variant that does not reject it here (another library or engine
        version, EP size or model), with that variant: every output that recommends a variant shows them, so an
        operator who changes the software knows. (An advisory that applies rejects its candidate: KNOWN_BAD.)"""
        arch, engine = self.deployment.device.arch.value, self.engine.value
        found = {
            (adv.id, g.chosen.spec.key): (adv, g.chosen.spec)
            for g in self.groups
            if g.chosen is not None
            for adv in nearby(self.question.advisories, g.chosen.spec, arch, engine)
        }
        return tuple(found.values())

    def advisory_notes(self) -> tuple[str, ...]:
        """One line for each of :meth:`nearby_advisories`."""
        return tuple(nearby_note(adv, spec) for adv, spec in self.nearby_advisories())


def _rank(cands: list[Candidate]) -> list[Candidate]:
    eligible = sorted(
        (c for c in cands if c.eligible),
        key=lambda c: (
            round(c.cost.us, 3) if c.cost else float("inf"),
            c.conversion is not None,  # at equal cost, serve the checkpoint as stored
            c.spec.priority,
            c.key,
        ),
    )
    rejected = [c for c in cands if not c.eligible]
    return eligible + rejected


def decide(
    model: ModelDescription,
    deployment: Deployment,
    software: SoftwareProfile,
    *,
    engine: Engine = Engine.NONE,
    override: Override | None = None,
    allow_fallback: bool = False,
    advisories: tuple[Advisory, ...] | None = None,
    workload: Workload | None = None,
    registry: Registry | None = None,
    conversion: ConversionOptions | None = None,
) -> Decision:
    """Decide the backend of every layer group.

    Without ``override`` this is :func:`decide_automatically`: the cheapest eligible candidate per
    group, or none (the engine's non-fused path, named in ``fallback``). With ``override`` it is
    :func:`decide_with_override`: the named backend (variant) must be eligible for every group,
    otherwise :class:`OverrideRefusedError` lists every reason, unless ``allow_fallback``, in which
    case the group keeps the automatic choice with a warning naming what runs instead.
    ``conversion`` governs load-time conversions (enabled, lossless only, by default); a converting
    candidate is chosen only when it is expected to be faster than every candidate serving the
    checkpoint as stored. ``workload`` defaults to :meth:`Workload.default` for the deployment;
    ``advisories`` to the bundled ones (a tuple given is the whole set in force: a replayed record's).
    Front ends do not call this: they go through :mod:`moe_oracle.api`.
    """
    reg = registry or load_registry()
    question = Question.of(
        model, deployment, software, engine=engine, workload=workload, conversion=conversion, advisories=advisories
    )
    if override is None:
        # allow_fallback is recorded as given, so a record replays with the same inputs
        return replace(decide_automatically(question, reg), allow_fallback=allow_fallback)
    return decide_with_override(question, override, reg, allow_fallback=allow_fallback)


def decide_automatically(question: Question, registry: Registry | None = None) -> Decision:
    """The cheapest eligible candidate of every layer group (as stored or after a load-time conversion),
    kept only where it is not slower than a measured non-fused path; none where nothing fits."""
    specs = (registry or load_registry()).variants
    # a calibration measured on this machine (moe-oracle tune) for this device and these builds costs the paths
    with active_for(question.deployment.device.name, question.software):
        groups = tuple(_choose(question, group, specs) for group in question.groups)
    return Decision(question, None, False, groups)


def decide_with_override(
    question: Question, override: Override, registry: Registry | None = None, *, allow_fallback: bool = False
) -> Decision:
    """The automatic decision with ``override`` chosen in every group where it is eligible (it wins over
    cost and is listed first). A group it cannot run refuses the whole decision
    (:class:`OverrideRefusedError`, with every reason of every group), or, with ``allow_fallback``,
    keeps its automatic choice and adds a warning."""
    reg = registry or load_registry()
    _check_override_name(override, reg)
    groups: list[GroupDecision] = []
    warnings: list[str] = []
    refusals: list[tuple[str, str]] = []
    trail: list[str] = []
    for g in decide_automatically(question, reg).groups:
        wanted = [
            c
            for c in g.candidates + g.conversions
            if c.spec.backend == override.backend and override.variant in (None, c.spec.variant)
        ]
        ok = next((c for c in wanted if c.eligible), None)
        if ok is not None:
            ranked = (ok, *(c for c in g.candidates if c is not ok))
            groups.append(replace(g, candidates=ranked, chosen=ok, fallback=None))
            continue
        groups.append(g)
        where = f"layer group '{g.group.name}' (layers {layer_span(g.group.layers)})"
        if allow_fallback:
            instead = g.chosen.key if g.chosen else f"no fused backend ({g.fallback})"
            warnings.append(
                f"--moe-backend {override} cannot run {where} ({refusal_summary(wanted)}); falling back to {instead}"
            )
        else:
            refusals.append((where, refusal_summary(wanted)))
            trail.extend(
                f"{where}: {c.key}: [{r.code.value}] {r.message} (fix: {r.remediation})"
                for c in wanted
                for r in c.failures
            )
    if refusals:
        raise OverrideRefusedError(
            f"--moe-backend {override} cannot run on this deployment: " + _per_group(refusals),
            fix="choose another backend, fix the deployment as each reason says (select ... --all-reasons lists "
            "every reason and its fix), or pass --allow-fallback.",
            trail=tuple(trail),
        )
    return Decision(question, override, allow_fallback, tuple(groups), tuple(warnings))


def refusal_summary(candidates: list[Candidate]) -> str:
    """The candidates an override names, grouped by the codes that refuse them, each variant once:
    ``sm100_fp8xfp4, sm100_bf16 [ARCH_UNSUPPORTED]; sm90_fp8xfp8 [QUANT_UNSUPPORTED]``."""
    by_codes: dict[tuple[str, ...], list[str]] = {}
    for cand in candidates:
        codes = tuple(dict.fromkeys(r.code.value for r in cand.failures))
        name = cand.key.removeprefix(cand.spec.backend + ":")
        names = by_codes.setdefault(codes, [])
        if name not in names:
            names.append(name)
    return "; ".join(f"{', '.join(names)} [{'+'.join(codes)}]" for codes, names in by_codes.items())


def _per_group(refusals: list[tuple[str, str]]) -> str:
    """One short clause per layer group; groups refused for the same reasons share one clause."""
    shared: dict[str, list[str]] = {}
    for where, summary in refusals:
        shared.setdefault(summary, []).append(where)
    return " | ".join(f"{' and '.join(wheres)}: {summary}" for summary, wheres in shared.items())


def _judge(question: Question, group: MoELayerGroup, specs: tuple[VariantSpec, ...]) -> list[Candidate]:
    """Every variant judged for ``group`` as stored, costed where eligible."""
    scenario = question.scenario(group)
    cands = []
    for spec in specs:
        reasons = tuple(evaluate_candidate(spec, scenario, question.advisories, question.engine_version))
        cand = Candidate(spec, reasons)
        if cand.eligible:
            cost = workload_cost(spec, group, question.deployment, question.workload)
            cand = Candidate(spec, reasons, cost, builds=serving_builds(spec, scenario))
        cands.append(cand)
    return cands


def _choose(question: Question, group: MoELayerGroup, specs: tuple[VariantSpec, ...]) -> GroupDecision:
    """One group's automatic choice: rank the candidates as stored and converted, then weigh the winner
    against the best measured non-fused path; the notes say why."""
    ranked, converted = mark_refused(
        _rank(_judge(question, group, specs)), _rank(conversion_candidates(question, group, specs))
    )
    fallback = fallback_path(question.engine, group, question.deployment.device, question.deployment)
    deployment, engine = question.deployment, question.engine
    eligible = [c for c in ranked + converted if c.eligible]
    opted_in = question.conversion.allow_low_precision_activations
    # a conversion (itself opted into when lossy) is judged on the format it produces: FP8 experts requantized to
    # NVFP4 under --allow-lossy-conversion serve like an NVFP4 checkpoint
    allowed = _rank([c for c in eligible if opted_in or not needs_low_precision_opt_in(c.spec, _served(group, c))])
    auto = next(iter(allowed), None)
    notes: list[str] = []
    held = next(iter(_rank(eligible)), None)
    if held is not None and held is not auto:
        notes.append(_held_back_note(held, auto, group))
    if auto is not None and auto.conversion is not None:
        stored = next((c for c in ranked if c.eligible), None)
        notes.append(_conversion_note(auto, stored, question.groups, deployment))
    ties = fused_tie(allowed)
    batches: Batches = []
    nonfused = _best_nonfused(group, deployment, engine, question.workload)
    if nonfused is not None:
        batches = per_batch(auto, group, deployment, engine) if auto is not None else []
        ties += workload_tie(auto, nonfused.key, nonfused.cost) + batch_ties(batches)
        auto, note = _weigh_nonfused(auto, nonfused, question.workload)
        notes.append(note)
        regimes = regimes_note(batches)
        if regimes:
            notes.append(regimes)
        if auto is None:
            fallback = nonfused.description
    if ties:
        notes.append(near_tie_advice(ties, deployment.device.name, tie_tokens(ties, batches, question.workload)))
    if auto is not None and auto.unverified:
        notes.append(
            f"{auto.spec.key} has rules not verifiable from declarations: "
            + "; ".join(r.message for r in auto.unverified)
        )
    return GroupDecision(
        group, tuple(ranked), auto, None if auto else fallback, tuple(notes), nonfused, tuple(converted), ties
    )


def _served(group: MoELayerGroup, cand: Candidate) -> MoELayerGroup:
    """``group`` as ``cand`` serves it: with its conversion's target format when it converts."""
    if cand.conversion is None:
        return group
    return group.model_copy(update={"weight_quant": cand.conversion.target})


def _held_back_note(held: Candidate, auto: Candidate | None, group: MoELayerGroup) -> str:
    gain = ""
    if auto is not None and auto.cost is not None and held.cost is not None and held.cost.us > 0:
        gain = f" (expected {auto.cost.us / held.cost.us:.2f}x faster than {auto.key})"
    return (
        f"{held.key}{gain} is not chosen automatically: accuracy class {accuracy_class(held.spec, held.conversion)} "
        f"(it quantizes activations to 4 bits; this {group.weight_format.value} checkpoint's are not); "
        "pass --allow-low-precision-activations to allow it, or --moe-backend to choose it"
    )


def _best_nonfused(
    group: MoELayerGroup, deployment: Deployment, engine: Engine, workload: Workload
) -> NonFusedEstimate | None:
    """The cheapest measured non-fused path that applies here, or None where none was measured."""
    best = None
    for path in applicable_paths(group, deployment, engine):
        cost = workload_cost(path.key, group, deployment, workload)
        if not cost.measured:
            continue
        if best is None or cost.us < best.cost.us:
            best = NonFusedEstimate(path.key, path.description, cost)
    return best


def _conversion_note(
    chosen: Candidate, stored: Candidate | None, groups: tuple[MoELayerGroup, ...], deployment: Deployment
) -> str:
    conv = chosen.conversion
    assert conv is not None
    ep = deployment.parallel.ep
    after = expert_bytes_per_rank(groups, ep, conv) / (1 << 30)
    before = expert_bytes_per_rank(groups, ep) / (1 << 30)
    gain = ""
    if stored is not None and stored.cost is not None and chosen.cost is not None:
        gain = f"; expected {stored.cost.us / chosen.cost.us:.2f}x faster than {stored.spec.key} as stored"
    return (
        f"{chosen.key}: converts the routed experts {conv.label} at load "
        f"({'lossless: ' if conv.lossless else 'LOSSY: '}{conv.condition}); experts per rank {before:.1f} -> "
        f"{after:.1f} GiB{gain}"
    )


def _weigh_nonfused(
    auto: Candidate | None, nonfused: NonFusedEstimate, workload: Workload
) -> tuple[Candidate | None, str]:
    """Keep the fused choice only when it is not slower than the measured non-fused path."""
    if auto is None or auto.cost is None:
        return auto, f"measured non-fused path {nonfused.key}: ~{nonfused.cost.us:,.0f} us per call ({workload.label})"
    ratio = auto.cost.us / nonfused.cost.us
    if ratio > 1.0:
        return None, (
            f"{auto.spec.key} is eligible but {ratio:.2f}x slower than {nonfused.key} for this workload "
            f"({workload.label}: ~{auto.cost.us:,.0f} vs ~{nonfused.cost.us:,.0f} us per call)"
        )
    return auto, (
        f"{auto.spec.key} beats the best measured non-fused path {nonfused.key} by {1 / ratio:.2f}x for this "
        f"workload ({workload.label}: ~{auto.cost.us:,.0f} vs ~{nonfused.cost.us:,.0f} us per call)"
    )


def _check_override_name(override: Override, reg: Registry) -> None:
    if override.backend not in reg.backends:
        raise BadInputError(
            f"--moe-backend {override.backend!r} is not a known mega-MoE backend",
            fix=f"use one of: {', '.join(reg.backends)} (optionally NAME:VARIANT).",
        )
    if override.variant is not None and not reg.find(override.backend, override.variant):
        variants = ", ".join(v.variant for v in reg.find(override.backend))
        raise BadInputError(
            f"--moe-backend {override}: {override.backend} has no variant {override.variant!r}",
            fix=f"use one of: {variants}.",
        )
