"""Model descriptions: typed MoE layer groups and the adapters that read HF configs."""

from moe_oracle.model.types import (
    Activation,
    ActivationKind,
    ModelDescription,
    MoELayerGroup,
    PartKind,
    QuantSpec,
    Routing,
    ScaleFormat,
    Scoring,
    WeightFormat,
)

__all__ = [
    "Activation",
    "ActivationKind",
    "MoELayerGroup",
    "ModelDescription",
    "PartKind",
    "QuantSpec",
    "Routing",
    "ScaleFormat",
    "Scoring",
    "WeightFormat",
]
