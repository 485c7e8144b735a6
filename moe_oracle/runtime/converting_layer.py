"""A layer that converts checkpoint experts at load, for a decision that chose a conversion."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from moe_oracle.rules import Conversion
from moe_oracle.runtime.errors import LayerInputError
from moe_oracle.runtime.interface import CheckpointExperts, MegaMoELayer

if TYPE_CHECKING:
    import torch


class ConvertingLayer(MegaMoELayer):
    """Runs ``conversion`` on the experts given to :meth:`load`, then loads the inner layer.

    A conversion declared lossless is verified block by block: a block that would change refuses
    the load (one line naming it) unless ``allow_lossy``. ``report`` keeps the last conversion's report.
    """

    def __init__(self, inner: MegaMoELayer, conversion: Conversion, *, allow_lossy: bool = False) -> None:
        super().__init__(inner.config)
        self.inner = inner
        self.conversion = conversion
        self.allow_lossy = allow_lossy
        self.key = f"{inner.key}+convert({conversion.label})"
        self.report: Any = None

    def load(self, experts: CheckpointExperts) -> None:
        module, _, name = self.conversion.runtime.partition(":")
        converted, report = getattr(importlib.import_module(module), name)(experts)
        self.report = report
        if not report.lossless and not self.allow_lossy:
            where = f"; first block {report.lossy_blocks[0]}" if report.lossy_blocks else ""
            raise LayerInputError(
                f"{self.key}: converting {self.conversion.label} changed {report.changed_elements} values in "
                f"{len(report.lossy_blocks) or 'some'} block(s){where}",
                fix="serve the stored format (--no-convert), or accept it with --allow-lossy-conversion.",
            )
        self.inner.load(converted)

    def forward(
        self, hidden_states: torch.Tensor, topk_ids: torch.Tensor, topk_weights: torch.Tensor, **hints: Any
    ) -> torch.Tensor:
        return self.inner.forward(hidden_states, topk_ids, topk_weights, **hints)

    def __getattr__(self, name: str) -> Any:  # the inner layer's extras (buffer, kernel_call, quantized_input...)
        if name == "inner":
            raise AttributeError(name)
        return getattr(self.inner, name)
