"""One runtime interface for every backend variant: prepare expert weights, run a MoE layer.

Importing this package does not import torch; the modules that compute do.
"""

from moe_oracle.runtime.recipe import ActQuant, Recipe

__all__ = ["ActQuant", "Recipe"]
