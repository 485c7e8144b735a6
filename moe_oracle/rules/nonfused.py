"""A non-fused MoE path's declaration: what it serves, where it applies, what implements it.

A target that implements a non-fused path (e.g. ``backends/cuda_sm90/nonfused``) declares it next to
its variants and returns it from its ``moe_oracle.backends`` entry point; the oracle ranks it against the
fused candidates where it was measured (:mod:`moe_oracle.cost.nonfused`).
"""

from __future__ import annotations

from dataclasses import dataclass

from moe_oracle.model.types import MoELayerGroup, WeightFormat
from moe_oracle.rules.scenario import Engine
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
