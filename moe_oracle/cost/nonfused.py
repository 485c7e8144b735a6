"""The non-fused MoE path as a ranked candidate, where it was measured.

A fused mega-MoE kernel is not always faster: on one H200 at EP=1 the fused FP8 kernel beats a
CUDA graph of the same MoE built from DeepGEMM's grouped GEMMs only for T = 8 to 256 tokens, and
loses at T = 1 and T = 8192 (docs/performance.md). The paths below are ranked against
the fused candidates with their own measured cost; each applies only where it was measured (arch
family, weight format, EP size, and the engines whose non-fused path it represents).
"""

from __future__ import annotations

from moe_oracle.model.types import MoELayerGroup
from moe_oracle.registry import load_registry
from moe_oracle.rules import Engine
from moe_oracle.rules.nonfused import NonFusedPath
from moe_oracle.spec.deployment import Deployment

__all__ = ["NonFusedPath", "applicable_paths", "declared_paths", "path_for_key"]


def declared_paths() -> tuple[NonFusedPath, ...]:
    """Every non-fused path the registered backends declare (``moe_oracle.backends`` entry points)."""
    return load_registry().nonfused


def path_for_key(key: str) -> NonFusedPath | None:
    """The declared path with this key (``nonfused:<name>``), or None."""
    return next((p for p in declared_paths() if p.key == key.strip().lower()), None)


def applicable_paths(group: MoELayerGroup, deployment: Deployment, engine: Engine) -> tuple[NonFusedPath, ...]:
    return tuple(p for p in declared_paths() if p.applies(group, deployment, engine))
