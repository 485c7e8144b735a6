"""The capability rules engine: reason codes, checks, variant declarations."""

from moe_oracle.rules.check import Check, Finding, Reason, Status
from moe_oracle.rules.conversion import Conversion
from moe_oracle.rules.reasons import ReasonCode
from moe_oracle.rules.scenario import Engine, Scenario
from moe_oracle.rules.variant import VariantSpec

__all__ = ["Check", "Conversion", "Engine", "Finding", "Reason", "ReasonCode", "Scenario", "Status", "VariantSpec"]
