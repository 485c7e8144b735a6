"""Engine gates: what an engine version adds on top of the kernels' own requirements.

An engine wires only some backend variants, only for some models, and with its own
parallelism rules. :class:`EngineSupport` declares that once per (engine, backend, route); variants
it does not list get ``ENGINE_UNSUPPORTED`` with the engine's explanation. A route is how the engine
reaches the kernel: ``engine`` (the engine's own code path) or ``moe-oracle`` (moe-oracle's runtime
inside the engine, through the engine's extension points); a backend may have both, and the first
route whose rules all pass serves the variant.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from enum import Enum

from moe_oracle.model.types import WeightFormat
from moe_oracle.rules.check import Check, Reason, Status
from moe_oracle.rules.conversion import Conversion
from moe_oracle.rules.reasons import ReasonCode
from moe_oracle.rules.scenario import Scenario
from moe_oracle.rules.variant import VariantSpec


class Route(str, Enum):
    """Which code serves a backend inside an engine."""

    ENGINE = "engine"  # the engine's own integration of the kernel (vLLM --moe-backend, SGLang --moe-a2a-backend)
    MOE_ORACLE = "moe-oracle"  # moe-oracle's runtime, through the engine's plug-in


ENGINE_ROUTE = Route.ENGINE
MOE_ORACLE_ROUTE = Route.MOE_ORACLE
ANY = "*"


@dataclass(frozen=True)
class EngineSupport:
    """One engine version's wiring of one backend (``*``: every backend) on one route.

    ``variants``: the variants this route serves (``*``: every variant with a runtime class). ``flag``: the value of
    the engine's backend flag that selects this route when it is not the backend's name (vLLM 0.33's
    ``--moe-backend flashinfer_moe_ep_mega_deep_gemm`` reaches DeepGEMM's SM100 mega kernel through FlashInfer).
    """

    engine: str
    version: str
    backend: str
    variants: tuple[str, ...]
    unsupported: str
    remediation: str
    checks: tuple[Check, ...]
    sources: tuple[str, ...] = ()
    route: Route = ENGINE_ROUTE
    flag: str | None = None

    @property
    def flag_value(self) -> str:
        """The engine's backend flag value for this route."""
        return self.flag or self.backend

    def covers(self, spec: VariantSpec) -> bool:
        return self.backend in (ANY, spec.backend)

    def serves(self, spec: VariantSpec) -> bool:
        if ANY in self.variants:
            return bool(spec.runtime)
        return spec.variant in self.variants

    def rule_text(self) -> str:
        """The rule as a sentence: which variants of which backend the engine wires (``*`` spelled out)."""
        backend = "every backend" if self.backend == ANY else self.backend
        if ANY in self.variants:
            which = "every variant that has a moe-oracle runtime class"
        else:
            which = "only the variant" + ("s " if len(self.variants) > 1 else " ") + ", ".join(self.variants)
        return f"{self.engine} {self.version} wires {which} of {backend}"

    def evaluate(self, spec: VariantSpec, scenario: Scenario) -> list[Reason]:
        if not self.serves(spec):
            return [
                Reason(
                    code=ReasonCode.ENGINE_UNSUPPORTED,
                    message=f"{self.engine} {self.version} has no code path for {spec.key}: {self.unsupported}",
                    remediation=self.remediation,
                    rule=self.rule_text(),
                    sources=self.sources,
                )
            ]
        return [r for r in (check.evaluate(scenario) for check in self.checks) if r is not None]


@dataclass(frozen=True)
class EngineConversion:
    """A load-time expert conversion the engine performs itself, switched on by environment variables
    (``env``) or launch flags (``argv``).

    It stands in for a variant's declared :class:`~moe_oracle.rules.Conversion` with the same
    ``source`` format and ``target`` format: the oracle applies the same numerics and memory checks,
    plus ``checks`` (where the engine applies the conversion at all). ``checked_at_load`` says
    whether the engine verifies the variant's exactness condition block by block (moe-oracle's own
    loader does); ``unverified`` names what only a GPU run can show.
    """

    source: WeightFormat
    target: WeightFormat
    env: tuple[tuple[str, str], ...]
    summary: str
    condition: str
    checks: tuple[Check, ...] = ()
    checked_at_load: bool = False
    unverified: str | None = None
    sources: tuple[str, ...] = ()
    argv: tuple[str, ...] = ()

    @property
    def switch(self) -> str:
        """How the engine is told to convert: its environment and flags, as one line."""
        return " ".join([*(f"{k}={v}" for k, v in self.env), *self.argv])

    def serves(self, conv: Conversion) -> bool:
        return conv.source is self.source and conv.target.format is self.target

    def stand_in(self, conv: Conversion) -> Conversion:
        """``conv`` as this engine performs it: its condition, its switch, its sources."""
        return replace(conv, condition=self.condition, runtime=f"engine: {self.switch}", sources=self.sources)

    def evaluate(self, scenario: Scenario) -> list[Reason]:
        reasons = [r for r in (check.evaluate(scenario) for check in self.checks) if r is not None]
        if self.unverified:
            reasons.append(
                Reason(
                    ReasonCode.CONVERSION_LOSSY,
                    self.unverified,
                    "Check the checkpoint's blocks before relying on exact numerics (moe-oracle's converter "
                    "reports every inexact block), or serve a converted checkpoint.",
                    status=Status.UNKNOWN,
                    rule="every converted block exact",
                    sources=self.sources,
                )
            )
        return reasons


@dataclass(frozen=True)
class EngineProfile:
    """All of one engine version's gates, and what it runs when no mega backend fits."""

    engine: str
    version: str
    supports: tuple[EngineSupport, ...]
    moe_backend_flag: str
    conversions: tuple[EngineConversion, ...] = ()

    def conversion(self, conv: Conversion) -> EngineConversion | None:
        """The engine's own conversion standing in for ``conv``, if it has one."""
        return next((e for e in self.conversions if e.serves(conv)), None)

    def gate(self, backend: str) -> EngineSupport | None:
        """The engine's own route for ``backend`` (None when the engine has none)."""
        for s in self.supports:
            if s.backend == backend and s.route == ENGINE_ROUTE:
                return s
        return None

    def routes(self, spec: VariantSpec) -> tuple[EngineSupport, ...]:
        return tuple(s for s in self.supports if s.covers(spec))

    def route(self, spec: VariantSpec, scenario: Scenario) -> EngineSupport | None:
        """The first route whose rules all pass for ``spec`` (the engine's own before moe-oracle's), or None."""
        for support in self.routes(spec):
            if not any(r.status is Status.FAIL for r in support.evaluate(spec, scenario)):
                return support
        return None

    def evaluate(self, spec: VariantSpec, scenario: Scenario) -> list[Reason]:
        """The reasons of the route that serves ``spec``; when none does, those of the route closest to it
        (fewest failures; the engine's own route on a tie)."""
        routes = self.routes(spec)
        if not routes:
            return [
                Reason(
                    code=ReasonCode.ENGINE_UNSUPPORTED,
                    message=f"{self.engine} {self.version} does not know the backend {spec.backend}",
                    remediation=f"Use --engine none to judge the kernel alone, or another {self.moe_backend_flag}.",
                    rule=f"{self.engine} {self.version} accepts {spec.backend}",
                )
            ]
        best: list[Reason] | None = None
        for support in routes:
            reasons = support.evaluate(spec, scenario)
            failures = sum(r.status is Status.FAIL for r in reasons)
            if failures == 0:
                return reasons
            if best is None or failures < sum(r.status is Status.FAIL for r in best):
                best = reasons
        return best or []
