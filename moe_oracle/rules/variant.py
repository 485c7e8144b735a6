"""A backend variant's declaration: identity, formats, kernel, requirements, runtime hook."""

from __future__ import annotations

from dataclasses import dataclass

from moe_oracle.rules.check import Check, Reason
from moe_oracle.rules.conversion import Conversion
from moe_oracle.rules.scenario import Scenario
from moe_oracle.runtime.recipe import Recipe


@dataclass(frozen=True)
class VariantSpec:
    """Everything the oracle knows about one backend variant, without importing it.

    ``backend`` is the engines' ``--moe-backend`` value (``deep_gemm_mega_moe``,
    ``aiter_mega_moe``); ``variant`` names arch and format (``sm90_fp8xfp8``); ``target`` the
    hardware folder (``cuda_sm90``). ``runtime`` is an ``module:attribute`` path to the data-path
    implementation, imported only when a layer is built. ``priority`` breaks cost ties
    (lower first). ``recipe`` says where the kernel quantizes (the emulation twin follows it).
    ``conversions`` lists checkpoint formats the variant can also serve after converting the
    experts at load.
    """

    backend: str
    variant: str
    target: str
    summary: str
    weights: str
    activations: str
    kernel: str
    checks: tuple[Check, ...]
    recipe: Recipe
    sources: tuple[str, ...] = ()
    runtime: str | None = None
    priority: int = 100
    conversions: tuple[Conversion, ...] = ()

    @property
    def key(self) -> str:
        return f"{self.backend}:{self.variant}"

    def evaluate(self, scenario: Scenario) -> list[Reason]:
        """Every failed or undecidable check, in declaration order."""
        reasons = []
        for check in self.checks:
            reason = check.evaluate(scenario)
            if reason is not None:
                reasons.append(reason)
        return reasons
