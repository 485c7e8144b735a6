"""What ``moe-oracle tune`` measures: every eligible path of every MoE layer group at every token count (no torch).

A path is a fused variant the decision finds eligible for the group as stored or after one of its declared load-time
conversions, or a declared non-fused path that applies to the format it runs on. Eligibility is judged per token
count: the decision is taken for one GPU (EP 1) with the per-rank token budget set to that count, so a declared limit
that depends on the tokens (PR #323's SM90 FP8 combine stage) leaves out exactly the counts it refuses, with its
reason. Tune measures at EP 1 on one GPU; the cost model carries the points to other EP sizes (its fit's terms are
per rank). The plan also says how the paths will be timed (:class:`~moe_oracle.cost.local.TimingBasis`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from moe_oracle.cost.local import TimingBasis
from moe_oracle.cost.nonfused import applicable_paths
from moe_oracle.decide.candidates import Candidate
from moe_oracle.decide.selection import decide
from moe_oracle.inputs import DeploymentFlags, build_deployment
from moe_oracle.model.types import ModelDescription, MoELayerGroup
from moe_oracle.rules import Conversion, Engine, ReasonCode
from moe_oracle.software.types import SoftwareProfile

#: ``--tokens``' default: decode, small and large batches, a prefill chunk
DEFAULT_TOKENS = (1, 8, 64, 512, 4096)
MAX_TOKENS = 65536
#: ``--timing steady``: seconds each path replays alone before it is timed (after 0.5 s the H200's clock is still in
#: the power controller's transient, after 2 s and 5 s it agrees: docs/performance.md §14.2), and the timed replays
STEADY_WARM_S = 2.0
STEADY_REPS = 20
#: interleaved: rounds x replays per round (every path in each round)
ROUNDS, REPS = 7, 5


@dataclass(frozen=True)
class PathPlan:
    """One path of one group: its key, the group its layer is built for (after ``conversion``), the token counts
    it is measured at and, per refused count, the declared reason."""

    key: str
    fused: bool
    group: MoELayerGroup
    conversion: Conversion | None
    tokens: tuple[int, ...]
    refused: dict[int, str] = field(default_factory=dict)

    @property
    def label(self) -> str:
        return self.key + (f" after {self.conversion.label}" if self.conversion else "")


@dataclass(frozen=True)
class GroupPlan:
    group: MoELayerGroup
    paths: tuple[PathPlan, ...]


@dataclass(frozen=True)
class TunePlan:
    model: str
    device: str
    device_origin: str
    software: SoftwareProfile
    tokens: tuple[int, ...]
    groups: tuple[GroupPlan, ...]
    timing: TimingBasis = TimingBasis.INTERLEAVED

    @property
    def measurements(self) -> int:
        return sum(len(p.tokens) for g in self.groups for p in g.paths)

    def timing_text(self) -> str:
        """How the paths are timed, in words (the calibration file's ``stamp.timing``)."""
        if self.timing is TimingBasis.STEADY:
            return (
                f"CUDA graphs, L2 flushed, each path alone after {STEADY_WARM_S:g} s of its own replays: "
                f"{STEADY_REPS} replays, median"
            )
        return f"CUDA graphs, L2 flushed, paths interleaved: {ROUNDS} rounds x {REPS} replays, median"

    def to_json(self) -> dict[str, object]:
        return {
            "model": self.model,
            "device": self.device,
            "device_origin": self.device_origin,
            "software": self.software.name,
            "tokens": list(self.tokens),
            "timing": self.timing.value,
            "timing_text": self.timing_text(),
            "groups": [
                {
                    "group": g.group.name,
                    "shape": _shape(g.group),
                    "paths": [
                        {
                            "path": p.key,
                            "fused": p.fused,
                            "conversion": p.conversion.label if p.conversion else None,
                            "tokens": list(p.tokens),
                            "refused": {str(t): r for t, r in p.refused.items()},
                        }
                        for p in g.paths
                    ],
                }
                for g in self.groups
            ],
        }

    def text(self) -> str:
        lines = [
            f"tune plan: {self.model} on {self.device} ({self.device_origin}), software {self.software.name}, "
            f"EP 1, T = {', '.join(map(str, self.tokens))}: {self.measurements} measurements",
            f"  timed {self.timing.value}: {self.timing_text()}"
            + (
                f" (warm-up alone: {self.measurements * STEADY_WARM_S:g} s)"
                if self.timing is TimingBasis.STEADY
                else ""
            ),
        ]
        for g in self.groups:
            lines.append(f"  group {g.group.name}: {_shape_text(g.group)}")
            for p in g.paths:
                lines.append(f"    {p.label}: T = {', '.join(map(str, p.tokens)) or 'none'}")
                for t, why in p.refused.items():
                    lines.append(
                        f"      T = {t} refused: ...{why[-220:]}" if len(why) > 240 else f"      T = {t} refused: {why}"
                    )
        return "\n".join(lines)


def _shape(g: MoELayerGroup) -> dict[str, object]:
    return {
        "hidden_size": g.hidden_size,
        "moe_intermediate_size": g.moe_intermediate_size,
        "num_experts": g.num_experts,
        "top_k": g.top_k,
        "weight_format": g.weight_format.value,
    }


def _shape_text(g: MoELayerGroup) -> str:
    return f"H{g.hidden_size} I{g.moe_intermediate_size} E{g.num_experts} top{g.top_k} {g.weight_quant.label()}"


def parse_tokens(text: str) -> tuple[int, ...]:
    """``1,8,64`` -> (1, 8, 64): distinct, ascending, each in 1..MAX_TOKENS (ValueError with the rule otherwise)."""
    out = set()
    for part in text.split(","):
        part = part.strip()
        if not part.isascii() or not part.isdigit():
            raise ValueError(f"{part!r} is not a token count (ASCII decimal)")
        t = int(part)
        if not 1 <= t <= MAX_TOKENS:
            raise ValueError(f"{t} is outside 1..{MAX_TOKENS}")
        out.add(t)
    return tuple(sorted(out))


def make_plan(
    model: ModelDescription,
    device: str,
    software: SoftwareProfile,
    tokens: tuple[int, ...],
    timing: TimingBasis = TimingBasis.INTERLEAVED,
) -> TunePlan:
    """The measurement plan (module docstring). Raises the deployment's own BadInputError for a device that is
    not there (``local`` without a GPU)."""
    # one layer of each distinct expert shape: tune measures a layer call, so the model's memory (every layer's
    # experts on one GPU) is not this question's
    distinct: dict[tuple[object, ...], MoELayerGroup] = {}
    for g in model.layer_groups:
        key = (g.hidden_size, g.moe_intermediate_size, g.num_experts, g.top_k, g.weight_quant.label())
        distinct.setdefault(key, g.model_copy(update={"layers": g.layers[:1]}))
    model = model.model_copy(update={"layer_groups": tuple(distinct.values())})
    per_t = {}
    origin = ""
    device_name = device
    for t in tokens:
        dep, origin = build_deployment(DeploymentFlags(device=device, dp=1, ep=1, max_num_batched_tokens=t))
        device_name = dep.device.name
        per_t[t] = (dep, decide(model, dep, software, engine=Engine.NONE))
    groups = []
    for gi, group in enumerate(model.layer_groups):
        paths: dict[tuple[str, str], PathPlan] = {}

        def add(
            key: str,
            fused: bool,
            g: MoELayerGroup,
            conv: Conversion | None,
            t: int,
            why: str | None,
            paths: dict[tuple[str, str], PathPlan] = paths,
        ) -> None:
            k = (key, conv.label if conv else "")
            p = paths.get(k) or PathPlan(key, fused, g, conv, ())
            if why is None:
                p = PathPlan(p.key, p.fused, p.group, p.conversion, (*p.tokens, t), p.refused)
            else:
                p.refused[t] = why
            paths[k] = p

        for t, (dep, decision) in per_t.items():
            gd = decision.groups[gi]
            for cand in (*gd.candidates, *gd.conversions):
                if cand.spec.runtime is None and not cand.spec.layout:
                    continue  # engine-native: moe-oracle cannot build its layer
                built = (
                    group
                    if cand.conversion is None
                    else group.model_copy(update={"weight_quant": cand.conversion.target})
                )
                why = None if cand.eligible else "; ".join(r.message for r in cand.failures)[:1000]
                if not cand.eligible and not _refused_by_limit(cand):
                    continue  # never eligible here (format, arch): not a limit to report
                add(cand.spec.key, True, built, cand.conversion, t, why)
            formats = [group] + [
                group.model_copy(update={"weight_quant": c.conversion.target}) for c in gd.conversions if c.conversion
            ]
            for g in formats:
                for path in applicable_paths(g, dep, Engine.NONE):
                    conv = (
                        None
                        if g is group
                        else next(
                            c.conversion
                            for c in gd.conversions
                            if c.conversion and c.conversion.target == g.weight_quant
                        )
                    )
                    add(path.key, False, g, conv, t, None)
        kept = tuple(p for p in paths.values() if p.tokens or p.refused)
        groups.append(GroupPlan(group, kept))
    return TunePlan(model.model, device_name, origin, software, tokens, tuple(groups), timing)


def _refused_by_limit(cand: Candidate) -> bool:
    """A candidate refused only by shape or build limits (its format and device fit): worth reporting per T."""
    limits = {ReasonCode.SHAPE_UNSUPPORTED, ReasonCode.EXPERT_WIDTH_EXCEEDS, ReasonCode.EP_SIZE_UNSUPPORTED}
    return bool(cand.failures) and all(r.code in limits for r in cand.failures)
