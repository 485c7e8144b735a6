"""The question a decision answers, as one frozen value.

One model on one deployment, with one software profile and one engine, weighed on one workload,
under the load-time conversion options and the known-bad advisories. :func:`moe_oracle.decide.selection.decide`
builds it once from its arguments; every step of the decision (judging candidates, conversion
candidates, the non-fused weighing) reads it instead of a list of parameters.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from moe_oracle.cost.model import Workload
from moe_oracle.decide.advisories import Advisory, AdvisorySet, bundled_advisories
from moe_oracle.model.types import ModelDescription, MoELayerGroup
from moe_oracle.releases import engine_profile
from moe_oracle.releases.speculative import built_groups, unbuilt_groups
from moe_oracle.rules import Engine, Scenario
from moe_oracle.software.types import SoftwareProfile
from moe_oracle.spec.deployment import Deployment


@dataclass(frozen=True)
class ConversionOptions:
    """``enabled=False`` is ``--no-convert``; ``allow_lossy`` is ``--allow-lossy-conversion``;
    ``allow_low_precision_activations`` is ``--allow-low-precision-activations`` (see
    :mod:`moe_oracle.decide.accuracy_class`)."""

    enabled: bool = True
    allow_lossy: bool = False
    allow_low_precision_activations: bool = False


@dataclass(frozen=True)
class Question:
    """Everything a decision depends on, besides the registered variants and an override.

    ``workload`` is the tokens per rank the ranking weighs; ``conversion`` governs load-time
    conversions; ``advisories`` are the known-bad entries that reject a candidate.
    """

    model: ModelDescription
    deployment: Deployment
    software: SoftwareProfile
    engine: Engine
    workload: Workload
    conversion: ConversionOptions = field(default=ConversionOptions())
    advisories: tuple[Advisory, ...] = ()

    @classmethod
    def of(
        cls,
        model: ModelDescription,
        deployment: Deployment,
        software: SoftwareProfile,
        *,
        engine: Engine = Engine.NONE,
        workload: Workload | None = None,
        conversion: ConversionOptions | None = None,
        advisories: tuple[Advisory, ...] | None = None,
    ) -> Question:
        """The question with the defaults filled in: the default workload for the deployment's per-rank
        token budget (:meth:`Workload.default`), conversions enabled, lossless only, and the bundled advisories
        (``advisories`` None; a tuple given is the whole set in force, see :attr:`missing_bundled`)."""
        return cls(
            model,
            deployment,
            software,
            engine,
            workload or Workload.default(deployment.parallel.tokens_per_rank),
            conversion or ConversionOptions(),
            AdvisorySet(bundled_advisories()) if advisories is None else advisories,
        )

    def scenario(self, group: MoELayerGroup) -> Scenario:
        """What the declared checks judge for one layer group of the model."""
        model = self.model
        return Scenario(group, self.deployment, self.software, self.engine, model.architecture, model.model_type)

    @property
    def missing_bundled(self) -> tuple[str, ...]:
        """The ids of the bundled advisories this question does not apply (empty for every front end's question;
        a replayed record written before an advisory was bundled, or a caller that dropped them, lists them)."""
        ids = {adv.id for adv in self.advisories}
        return tuple(adv.id for adv in bundled_advisories() if adv.id not in ids)

    @property
    def engine_version(self) -> str | None:
        """The version of the engine whose gates apply (None for ``--engine none``)."""
        profile = engine_profile(self.engine)
        return profile.version if profile else None

    @property
    def groups(self) -> tuple[MoELayerGroup, ...]:
        """The layer groups the launch builds: an engine builds MTP and draft layers only with speculative
        decoding (:mod:`moe_oracle.releases.speculative`)."""
        return built_groups(self.model, self.engine, self.deployment)

    @property
    def unbuilt(self) -> tuple[MoELayerGroup, ...]:
        """The layer groups the launch does not build (they neither decide nor size anything)."""
        return unbuilt_groups(self.model, self.engine, self.deployment)
