"""Engine gates: what an engine version adds on top of the kernels' own requirements.

An engine wires only some backend variants, only for some models, and with its own
parallelism rules. :class:`EngineSupport` declares that once per (engine, backend); variants it
does not list get ``ENGINE_UNSUPPORTED`` with the engine's explanation.
"""

from __future__ import annotations

from dataclasses import dataclass

from moe_oracle.rules import Check, Reason, ReasonCode, Scenario, VariantSpec


@dataclass(frozen=True)
class EngineSupport:
    """One engine version's wiring of one backend."""

    engine: str
    version: str
    backend: str
    variants: tuple[str, ...]
    unsupported: str
    remediation: str
    checks: tuple[Check, ...]
    sources: tuple[str, ...] = ()

    def evaluate(self, spec: VariantSpec, scenario: Scenario) -> list[Reason]:
        if spec.variant not in self.variants:
            return [
                Reason(
                    code=ReasonCode.ENGINE_UNSUPPORTED,
                    message=f"{self.engine} {self.version} has no code path for {spec.key}: {self.unsupported}",
                    remediation=self.remediation,
                    rule=f"{self.engine} {self.version} wires {self.backend} only as " + ", ".join(self.variants),
                    sources=self.sources,
                )
            ]
        return [r for r in (check.evaluate(scenario) for check in self.checks) if r is not None]


@dataclass(frozen=True)
class EngineProfile:
    """All of one engine version's gates, and what it runs when no mega backend fits."""

    engine: str
    version: str
    supports: tuple[EngineSupport, ...]
    moe_backend_flag: str

    def gate(self, backend: str) -> EngineSupport | None:
        for s in self.supports:
            if s.backend == backend:
                return s
        return None

    def evaluate(self, spec: VariantSpec, scenario: Scenario) -> list[Reason]:
        support = self.gate(spec.backend)
        if support is None:
            return [
                Reason(
                    code=ReasonCode.ENGINE_UNSUPPORTED,
                    message=f"{self.engine} {self.version} does not know the backend {spec.backend}",
                    remediation=f"Use --engine none to judge the kernel alone, or another {self.moe_backend_flag}.",
                    rule=f"{self.engine} {self.version} accepts {spec.backend}",
                )
            ]
        return support.evaluate(spec, scenario)
