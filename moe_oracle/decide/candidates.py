"""A backend variant judged for one scenario: its reasons, expected cost and any load-time conversion."""

from __future__ import annotations

from dataclasses import dataclass, field

from moe_oracle.cost.model import CostEstimate
from moe_oracle.decide.advisories import Advisory, advisories_for
from moe_oracle.releases import engine_profile
from moe_oracle.rules import Conversion, Reason, Scenario, Status, VariantSpec
from moe_oracle.rules.build import BuildSpec, Provenance
from moe_oracle.rules.variant import Validation


@dataclass(frozen=True)
class Candidate:
    spec: VariantSpec
    reasons: tuple[Reason, ...]
    cost: CostEstimate | None = None
    conversion: Conversion | None = None
    #: the profile's kernel builds that serve this candidate (:func:`~moe_oracle.rules.build.serving_builds`;
    #: set on eligible candidates; empty when no declared build decides)
    builds: tuple[BuildSpec, ...] = field(default=(), compare=False)

    @property
    def key(self) -> str:
        """``backend:variant``, with ``+convert(<from>-><to>)`` for a load-time conversion."""
        return self.spec.key + (f"+convert({self.conversion.label})" if self.conversion else "")

    @property
    def label(self) -> str:
        """For people: ``backend:variant``, or ``backend:variant after <from>-><to>`` for a load-time conversion."""
        return self.spec.key + (f" after {self.conversion.label}" if self.conversion else "")

    @property
    def accuracy_class(self) -> str:
        """``standard``, ``a4``, ``lossy`` or ``a4+lossy`` (see :mod:`moe_oracle.decide.accuracy_class`)."""
        from moe_oracle.decide.accuracy_class import accuracy_class

        return accuracy_class(self.spec, self.conversion)

    @property
    def eligible(self) -> bool:
        return not any(r.status is Status.FAIL for r in self.reasons)

    @property
    def unverified(self) -> tuple[Reason, ...]:
        return tuple(r for r in self.reasons if r.status is Status.UNKNOWN)

    @property
    def failures(self) -> tuple[Reason, ...]:
        return tuple(r for r in self.reasons if r.status is Status.FAIL)

    @property
    def validation(self) -> Validation:
        """The variant's validation, or source-only when none of the builds serving it is one it was validated with."""
        return Validation.SOURCE_ONLY if self._other_build else self.spec.validation

    @property
    def validation_text(self) -> str:
        """:attr:`VariantSpec.validation_text`, unless the builds serving this candidate are not those it was
        validated with: then read from source only, naming both."""
        if not self._other_build:
            return self.spec.validation_text
        return (
            f"{Validation.SOURCE_ONLY.text} with {' or '.join(b.title for b in self.builds)}, the build(s) serving "
            f"this shape; its '{self.spec.validation.short}' validation used {', '.join(self.spec.validated_builds)}, "
            "which does not serve it"
        )

    @property
    def _other_build(self) -> bool:
        validated = self.spec.validated_builds
        return bool(validated and self.builds) and not any(b.name in validated for b in self.builds)

    @property
    def unreleased_build(self) -> str | None:
        """``needs an unreleased build: ...`` when every build serving this candidate is unreleased (each with its
        provenance and where to obtain it); None when a release serves it or no declared build decides."""
        if not self.builds or any(b.released for b in self.builds):
            return None
        order = list(Provenance)  # a branch before an open pull request
        builds = sorted(self.builds, key=lambda b: order.index(b.provenance))
        ways = "; or ".join(f"{b.title} ({b.provenance.caveat}), obtain: {b.url or b.ref}" for b in builds)
        return f"needs an unreleased build: {ways}"

    def to_json(self) -> dict[str, object]:
        return {
            "backend": self.spec.backend,
            "variant": self.spec.variant,
            "eligible": self.eligible,
            "accuracy_class": self.accuracy_class,
            "validation": self.validation.value,
            "validated": self.validation_text,
            "builds": [b.to_json() for b in self.builds],
            "unreleased_build": self.unreleased_build,
            "reasons": [r.to_json() for r in self.reasons],
            "expected_us": None if self.cost is None else round(self.cost.us, 1),
            "cost_basis": None if self.cost is None else self.cost.basis,
            "held_out_error": None if self.cost is None or self.cost.held_out is None else self.cost.held_out.to_json(),
            **({"conversion": self.conversion.to_json()} if self.conversion else {}),
        }


def evaluate_candidate(
    spec: VariantSpec,
    scenario: Scenario,
    advisories: tuple[Advisory, ...] = (),
    engine_version: str | None = None,
) -> list[Reason]:
    """All reasons (failures and undecidable rules) ``spec`` cannot run ``scenario``."""
    reasons = spec.evaluate(scenario)
    profile = engine_profile(scenario.engine)
    if profile is not None:
        reasons.extend(profile.evaluate(spec, scenario))
    for adv in advisories_for(advisories, spec.backend):
        if adv.matches(spec, scenario, engine_version):
            reasons.append(adv.reason())
    return reasons
