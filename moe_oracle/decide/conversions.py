"""Load-time conversion candidates: a variant serving a checkpoint format after converting it.

For each variant that declares a :class:`~moe_oracle.rules.Conversion` from the group's format,
the variant is judged on the converted group with the same rules as any candidate, plus:

- numerics: a conversion that is not lossless by construction is refused with
  ``CONVERSION_LOSSY`` unless lossy conversion was allowed;
- memory: the model's routed experts per rank, converted, must stay within
  ``EXPERT_MEMORY_FRACTION`` of the device memory (the rest is for the other weights, activations
  and the KV cache), else ``MEMORY_EXCEEDED``;
- engine: moe-oracle's own runtime converts at load (``--engine none``); an engine converts only where
  its profile declares its own :class:`~moe_oracle.rules.engine.EngineConversion` for the same
  formats (SGLang's ``SGLANG_DSV4_FP4_DEQUANT``), judged by the same numerics and memory rules plus
  the engine's own conditions; otherwise it loads checkpoints as stored.
"""

from __future__ import annotations

from collections.abc import Iterable

from moe_oracle.cost.model import workload_cost
from moe_oracle.decide.candidates import Candidate, evaluate_candidate
from moe_oracle.decide.question import Question
from moe_oracle.model.types import MoELayerGroup
from moe_oracle.releases import engine_profile
from moe_oracle.rules import Conversion, Engine, Reason, ReasonCode, Scenario, VariantSpec
from moe_oracle.rules.build import serving_builds
from moe_oracle.rules.engine import EngineConversion

#: Share of a GPU's memory the routed experts may take after a conversion.
EXPERT_MEMORY_FRACTION = 0.6
GIB = 1 << 30


def expert_bytes_per_rank(groups: Iterable[MoELayerGroup], ep: int, conversion: Conversion | None = None) -> int:
    """Routed-expert bytes one rank holds for ``groups`` (the layer groups the launch builds,
    :attr:`Question.groups`), with ``conversion`` applied to every group of its source format (all such
    groups convert alike)."""
    total = 0
    for g in groups:
        if conversion is not None and g.weight_format is conversion.source:
            g = g.model_copy(update={"weight_quant": conversion.target})
        total += len(g.layers) * (g.num_experts // ep) * g.expert_weight_bytes()
    return total


def _engine_conversion(engine: Engine, conv: Conversion) -> EngineConversion | None:
    profile = engine_profile(engine)
    return profile.conversion(conv) if profile is not None else None


def _conversion_reasons(conv: Conversion, scenario: Scenario, question: Question) -> list[Reason]:
    """``scenario``: the question's scenario for the converted group."""
    reasons = []
    deployment, engine = scenario.deployment, scenario.engine
    own = _engine_conversion(engine, conv)
    if own is not None:
        reasons += own.evaluate(scenario)
    elif engine is not Engine.NONE:
        reasons.append(
            Reason(
                ReasonCode.ENGINE_UNSUPPORTED,
                f"{engine.value} loads routed experts as stored; converting {conv.label} at load is moe-oracle's "
                "runtime",
                "Serve a converted checkpoint, or use --engine none with moe-oracle's runtime.",
                rule="load-time conversion with --engine none",
            )
        )
    if not conv.lossless and not question.conversion.allow_lossy:
        reasons.append(
            Reason(
                ReasonCode.CONVERSION_LOSSY,
                f"converting {conv.label} changes the model's numerics ({conv.condition})",
                "Pass --allow-lossy-conversion to accept it, after checking accuracy (moe-oracle accuracy).",
                rule="lossless conversion, or --allow-lossy-conversion",
                sources=conv.sources,
            )
        )
    ep = deployment.parallel.ep
    need = expert_bytes_per_rank(question.groups, ep, conv)
    budget = EXPERT_MEMORY_FRACTION * deployment.device.memory_gib * GIB
    if need > budget:
        now = expert_bytes_per_rank(question.groups, ep)
        reasons.append(
            Reason(
                ReasonCode.MEMORY_EXCEEDED,
                f"after converting {conv.label} the routed experts take {need / GIB:.1f} GiB per rank at ep={ep} "
                f"(stored: {now / GIB:.1f} GiB), above {EXPERT_MEMORY_FRACTION:.0%} of {deployment.device.name}'s "
                f"{deployment.device.memory_gib:g} GiB",
                "Raise the EP size (experts per rank scale with 1/ep), or serve the stored format.",
                rule=f"converted experts per rank <= {EXPERT_MEMORY_FRACTION:.0%} of device memory",
            )
        )
    return reasons


def conversion_candidates(question: Question, group: MoELayerGroup, specs: tuple[VariantSpec, ...]) -> list[Candidate]:
    """Every variant of ``specs`` that could serve ``group`` after converting its experts, judged and costed."""
    if not question.conversion.enabled:
        return []
    out = []
    for spec in specs:
        for conv in spec.conversions:
            if conv.source is not group.weight_format:
                continue
            own = _engine_conversion(question.engine, conv)
            conv = own.stand_in(conv) if own is not None else conv
            converted = group.model_copy(update={"weight_quant": conv.target})
            scenario = question.scenario(converted)
            reasons = evaluate_candidate(spec, scenario, question.advisories, question.engine_version)
            reasons += _conversion_reasons(conv, scenario, question)
            cand = Candidate(spec, tuple(reasons), conversion=conv)
            if cand.eligible:
                cost = workload_cost(spec, converted, question.deployment, question.workload)
                cand = Candidate(spec, cand.reasons, cost, conv, serving_builds(spec, scenario))
            out.append(cand)
    return out
