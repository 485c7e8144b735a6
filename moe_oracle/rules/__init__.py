"""The capability rules engine: reason codes, checks, variant declarations."""

from moe_oracle.rules.check import Check, Finding, Reason, Scope, Status
from moe_oracle.rules.conversion import Conversion
from moe_oracle.rules.reasons import ReasonCode
from moe_oracle.rules.scenario import Engine, LayerScenario, Scenario
from moe_oracle.rules.variant import VariantSpec

__all__ = [
    "Check",
    "Conversion",
    "Engine",
    "Finding",
    "LayerScenario",
    "Reason",
    "ReasonCode",
    "Scenario",
    "Scope",
    "Status",
    "VariantSpec",
]
