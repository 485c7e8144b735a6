"""The input one capability check sees: a layer group on a deployment, with software and engine."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from moe_oracle.model.types import MoELayerGroup
from moe_oracle.software.types import SoftwareProfile
from moe_oracle.spec.deployment import Deployment


class Engine(str, Enum):
    """Which engine's own gates apply on top of the kernels' (``none`` judges kernels alone)."""

    NONE = "none"
    VLLM = "vllm"
    SGLANG = "sglang"


@dataclass(frozen=True)
class Scenario:
    """One decision's inputs. ``architecture`` is the model's HF architecture name."""

    group: MoELayerGroup
    deployment: Deployment
    software: SoftwareProfile
    engine: Engine = Engine.NONE
    architecture: str = ""
    model_type: str = ""

    @property
    def ep(self) -> int:
        return self.deployment.parallel.ep

    @property
    def experts_per_rank(self) -> float:
        return self.group.num_experts / self.ep

    @property
    def world_size(self) -> int:
        return self.deployment.topology.world_size

    @property
    def tokens_per_rank(self) -> int:
        return self.deployment.parallel.tokens_per_rank


@dataclass(frozen=True)
class LayerScenario:
    """The part of a scenario one layer being built knows: its group and its EP size.

    Only checks declared with ``Scope.LAYER`` are evaluated against it (they read ``group``,
    ``ep``, ``experts_per_rank``, ``tokens_per_rank`` and ``world_size``, here the EP group's size).
    """

    group: MoELayerGroup
    ep: int = 1
    tokens_per_rank: int = 1

    @property
    def experts_per_rank(self) -> float:
        return self.group.num_experts / self.ep

    @property
    def world_size(self) -> int:
        return self.ep
