"""One capability requirement, declared once: code, rule, remediation, sources, test.

Selection, override validation, the capability matrix and the generated docs all read the
same :class:`Check` objects, so a rule changes in one place.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, cast

from moe_oracle.rules.reasons import ReasonCode
from moe_oracle.rules.scenario import LayerScenario, Scenario


class Status(str, Enum):
    PASS = "pass"
    FAIL = "fail"
    UNKNOWN = "unknown"  # cannot be decided from declarations (e.g. depends on runtime tokens)


@dataclass(frozen=True)
class Finding:
    """What a check's test returns when the rule is not plainly met.

    ``code`` overrides the check's own reason code, for a check that evaluates nested ones (a build's
    limits) and reports the code of the limit that failed.
    """

    message: str
    status: Status = Status.FAIL
    remediation: str | None = None
    code: ReasonCode | None = None


@dataclass(frozen=True)
class Reason:
    """A check that failed (or could not be decided) for one scenario, with actual values."""

    code: ReasonCode
    message: str
    remediation: str
    status: Status = Status.FAIL
    rule: str = ""
    sources: tuple[str, ...] = ()

    def to_json(self) -> dict[str, object]:
        return {
            "code": self.code.value,
            "status": self.status.value,
            "message": self.message,
            "remediation": self.remediation,
            "rule": self.rule,
            "sources": list(self.sources),
        }


Test = Callable[[Scenario], "Finding | None"]


class Scope(str, Enum):
    """What a check reads, so a layer being built can evaluate the checks that concern it alone.

    ``LAYER``: the layer group and the EP size only (shape, format, activation, experts per rank);
    the runtime evaluates these against a :class:`~moe_oracle.runtime.interface.LayerConfig` before
    it builds a real kernel layer. ``DEPLOYMENT``: everything else (device, topology, software,
    engine, environment).
    """

    LAYER = "layer"
    DEPLOYMENT = "deployment"


@dataclass(frozen=True)
class Check:
    """A declared requirement. ``test`` returns None when the scenario meets ``rule``.

    ``data`` carries the requirement's parameters as plain values (the entry points of a library,
    the architectures, the environment variables that must be off) so the runtime that calls the
    kernel reads them from the declaration instead of restating them.
    """

    code: ReasonCode
    rule: str
    remediation: str
    test: Test = field(compare=False)
    sources: tuple[str, ...] = ()
    scope: Scope = Scope.DEPLOYMENT
    data: Mapping[str, Any] = field(default_factory=dict, compare=False)

    def evaluate(self, scenario: Scenario) -> Reason | None:
        finding = self.test(scenario)
        if finding is None:
            return None
        return Reason(
            code=finding.code or self.code,
            message=finding.message,
            remediation=finding.remediation or self.remediation,
            status=finding.status,
            rule=self.rule,
            sources=self.sources,
        )

    def evaluate_layer(self, layer: LayerScenario) -> Reason | None:
        """:meth:`evaluate` of a ``Scope.LAYER`` check against what a layer being built knows."""
        if self.scope is not Scope.LAYER:
            raise ValueError(f"{self.code.value}: a {self.scope.value}-scoped check needs the whole scenario")
        # the LAYER scope declares that the test reads only what LayerScenario has (group, ep,
        # tokens_per_rank, experts_per_rank, world_size)
        return self.evaluate(cast(Scenario, layer))
