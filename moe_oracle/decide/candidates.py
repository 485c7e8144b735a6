"""A backend variant judged for one scenario: its reasons, expected cost and any load-time conversion."""

from __future__ import annotations

from dataclasses import dataclass

from moe_oracle.cost.model import CostEstimate
from moe_oracle.decide.advisories import Advisory, advisories_for
from moe_oracle.engine_gates import engine_profile
from moe_oracle.rules import Conversion, Reason, Scenario, Status, VariantSpec


@dataclass(frozen=True)
class Candidate:
    spec: VariantSpec
    reasons: tuple[Reason, ...]
    cost: CostEstimate | None = None
    conversion: Conversion | None = None

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

    def to_json(self) -> dict[str, object]:
        return {
            "backend": self.spec.backend,
            "variant": self.spec.variant,
            "eligible": self.eligible,
            "accuracy_class": self.accuracy_class,
            "validation": self.spec.validation.value,
            "reasons": [r.to_json() for r in self.reasons],
            "expected_us": None if self.cost is None else round(self.cost.us, 1),
            "cost_basis": None if self.cost is None else self.cost.basis,
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
