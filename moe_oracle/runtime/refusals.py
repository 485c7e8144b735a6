"""The layer-level declarations a layer config fails: what both the real build and the twin refuse on."""

from __future__ import annotations

from typing import TYPE_CHECKING

from moe_oracle.runtime.interface import LayerConfig

if TYPE_CHECKING:
    from moe_oracle.rules import Reason, VariantSpec


def refusals(spec: VariantSpec, config: LayerConfig) -> list[Reason]:
    """The variant's own layer-level declarations (``Scope.LAYER`` checks) that ``config`` fails.

    The same :class:`~moe_oracle.rules.Check` objects ``decide()`` evaluates, against what a layer
    knows: its group, the EP size and the per-rank token capacity.
    """
    from moe_oracle.rules import LayerScenario, Scope

    sc = LayerScenario(config.group, ep=config.ep_size, tokens_per_rank=config.max_tokens_per_rank)
    found = (check.evaluate_layer(sc) for check in spec.checks if check.scope is Scope.LAYER)
    return [r for r in found if r is not None]
