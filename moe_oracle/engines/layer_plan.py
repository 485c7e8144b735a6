"""What one layer group runs through moe-oracle inside an engine: the plan a plug-in ships to every worker.

Engine-neutral and torch-free: vLLM's plug-in ships it in ``additional_config`` (:mod:`.vllm.shipped`),
SGLang's in an environment variable its scheduler processes inherit (:mod:`.sglang.shipped`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from moe_oracle.model.types import MoELayerGroup


@dataclass(frozen=True)
class LayerPlan:
    """What one layer group runs through moe-oracle, as the config hook ships it to every worker.

    ``variant``: ``backend:variant``; ``emulate``: build the numerics twin instead of the kernel
    (checking a deployment on a machine without its GPU); ``convert_from``: the checkpoint format of
    a load-time conversion to the variant's format; ``max_tokens_per_rank``: the per-rank token
    budget vLLM schedules (it sizes the one symmetric buffer of this shape).
    """

    group: MoELayerGroup
    variant: str
    max_tokens_per_rank: int
    emulate: bool = False
    convert_from: str | None = None
    allow_lossy: bool = False

    def to_json(self) -> dict[str, Any]:
        return {
            "group": self.group.model_dump(mode="json"),
            "variant": self.variant,
            "max_tokens_per_rank": self.max_tokens_per_rank,
            "emulate": self.emulate,
            "convert_from": self.convert_from,
            "allow_lossy": self.allow_lossy,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> LayerPlan:
        return cls(
            group=MoELayerGroup.model_validate(data["group"]),
            variant=str(data["variant"]),
            max_tokens_per_rank=int(data["max_tokens_per_rank"]),
            emulate=bool(data.get("emulate", False)),
            convert_from=data.get("convert_from"),
            allow_lossy=bool(data.get("allow_lossy", False)),
        )
