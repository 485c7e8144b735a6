"""Cost model: expected kernel time of each eligible variant, for ranking."""

from moe_oracle.cost.active_experts import expected_active_experts
from moe_oracle.cost.model import CostEstimate, Workload, estimate_us

__all__ = ["CostEstimate", "Workload", "estimate_us", "expected_active_experts"]
