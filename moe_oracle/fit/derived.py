"""A derived plan quantity (:class:`Derived`), the MoE shape it is sized for, and integer helpers.

Vendor-neutral: the formulas that produce these values live with the backends that own the
kernels (their declarations' ``sizing``) and with the engines; this module only carries and
prints the results.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

GiB = 1 << 30
MiB = 1 << 20


def ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def align(a: int, b: int) -> int:
    """``math::align``: round ``a`` up to a multiple of ``b``."""
    return ceil_div(a, b) * b


def fmt_bytes(n: int) -> str:
    """``1.53 GiB (1,646,264,320 bytes)``."""
    if n >= GiB:
        human = f"{n / GiB:.2f} GiB"
    elif n >= MiB:
        human = f"{n / MiB:.1f} MiB"
    else:
        human = f"{n / 1024:.1f} KiB"
    return f"{human} ({n:,} bytes)"


@dataclass(frozen=True)
class Derived:
    """One derived quantity: value, how it was computed, and from what."""

    key: str
    label: str
    value: int
    unit: str
    formula: str
    inputs: dict[str, Any]
    source: str
    assumption: str | None = None
    terms: tuple[tuple[str, int], ...] = ()
    env: str | None = None

    @property
    def display(self) -> str:
        if self.unit == "bytes":
            return fmt_bytes(self.value)
        return f"{self.value:,} {self.unit}"

    def to_json(self) -> dict[str, Any]:
        doc: dict[str, Any] = {
            "key": self.key,
            "label": self.label,
            "value": self.value,
            "unit": self.unit,
            "display": self.display,
            "formula": self.formula,
            "inputs": dict(self.inputs),
            "source": self.source,
        }
        if self.assumption:
            doc["assumption"] = self.assumption
        if self.terms:
            doc["terms"] = {name: value for name, value in self.terms}
        if self.env:
            doc["env"] = self.env
        return doc


@dataclass(frozen=True)
class Shape:
    """The MoE shape one symmetric buffer serves (layers with equal shapes share one)."""

    experts: int
    topk: int
    hidden: int
    inter: int
    shared_experts: int = 0
    groups: tuple[str, ...] = field(default=())

    def label(self) -> str:
        names = ", ".join(self.groups) if self.groups else "?"
        return f"E{self.experts} top{self.topk} H{self.hidden} I{self.inter} (layer groups {names})"
