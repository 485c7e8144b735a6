"""The non-fused MoE path as a ranked candidate, where it was measured.

A fused mega-MoE kernel is not always faster: on one H200 at EP=1 the fused FP8 kernel beats a
CUDA graph of the same MoE built from DeepGEMM's grouped GEMMs only for T = 8 to 256 tokens, and
loses at T = 1 and T = 8192 (``shared/reference/h200.md`` §6). The paths below are ranked against
the fused candidates with their own measured cost; each applies only where it was measured (arch
family, weight format, EP size, and the engines whose non-fused path it represents).
"""

from __future__ import annotations

from dataclasses import dataclass

from moe_oracle.model.types import MoELayerGroup, WeightFormat
from moe_oracle.rules import Engine
from moe_oracle.spec.deployment import Deployment


@dataclass(frozen=True)
class NonFusedPath:
    """One non-fused implementation with a calibration (``cost/calibration.json`` key ``nonfused:<name>``).

    ``runtime`` (``module:Class``) and ``layout`` name moe-oracle's own implementation of the path
    (declared by the backend that owns it, e.g. ``backends/cuda_sm90/nonfused``), which
    ``build_layer("nonfused:<name>")`` builds.
    """

    name: str
    description: str
    arch_family: str
    formats: tuple[WeightFormat, ...]
    engines: tuple[Engine, ...]
    ep: int = 1
    runtime: str = ""
    layout: str = "psum"

    @property
    def key(self) -> str:
        return f"nonfused:{self.name}"

    def applies(self, group: MoELayerGroup, deployment: Deployment, engine: Engine) -> bool:
        return (
            deployment.device.arch.family == self.arch_family
            and group.weight_format in self.formats
            and deployment.parallel.ep == self.ep
            and engine in self.engines
        )


def declared_paths() -> tuple[NonFusedPath, ...]:
    """Every non-fused path the registered backends declare (``moe_oracle.backends`` entry points)."""
    from moe_oracle.registry import load_registry

    return load_registry().nonfused


def path_for_key(key: str) -> NonFusedPath | None:
    """The declared path with this key (``nonfused:<name>``), or None."""
    return next((p for p in declared_paths() if p.key == key.strip().lower()), None)


def applicable_paths(group: MoELayerGroup, deployment: Deployment, engine: Engine) -> tuple[NonFusedPath, ...]:
    return tuple(p for p in declared_paths() if p.applies(group, deployment, engine))
