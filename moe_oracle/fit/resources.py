"""The derived-resource formulas a launch plan prints, found through the backends' declarations.

The formulas (symmetric-buffer bytes, token caps, heap sizes) belong to the backends that own
the kernels: each :class:`~moe_oracle.rules.VariantSpec` may declare ``sizing``, a mapping from a
formula name to the function that computes it. This module looks a formula up by name among the
registered declarations and calls it, so the core names no backend module; a third-party backend
contributes formulas the same way. Every formula returns :class:`Derived` values.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from moe_oracle.errors import OracleError
from moe_oracle.fit.derived import Derived, Shape

__all__ = [
    "Derived",
    "Shape",
    "aiter_capacities",
    "choose_mori_heap",
    "derive_aiter_mtpr",
    "derive_deepgemm",
    "derive_mori_heap",
    "formula",
]


class SizingMissingError(OracleError):
    """No registered backend declares the formula a plan needs."""


def formula(name: str) -> Callable[..., Any]:
    """The first registered declaration's ``sizing[name]`` (registry order)."""
    from moe_oracle.registry import load_registry

    for spec in load_registry().variants:
        if spec.sizing and name in spec.sizing:
            return spec.sizing[name]
    raise SizingMissingError(
        f"no registered backend declares the sizing formula {name!r}",
        fix="install the backend that provides it (pip install -e . in a moe-oracle checkout).",
    )


def derive_deepgemm(**kwargs: Any) -> list[Derived]:
    """DeepGEMM token cap, pool/ring and symmetric-buffer bytes (keywords of the declared formula)."""
    return formula("derive_deepgemm")(**kwargs)


def derive_aiter_mtpr(tokens_per_rank: int, tokens_origin: str, *, engine: str) -> Derived:
    return formula("derive_aiter_mtpr")(tokens_per_rank, tokens_origin, engine=engine)


def aiter_capacities(mtpr: int, experts_per_rank: int, *, engine: str) -> list[int]:
    return formula("aiter_capacities")(mtpr, experts_per_rank, engine=engine)


def derive_mori_heap(*, runtimes: list[tuple[Shape, list[int]]], ep: int) -> Derived:
    return formula("derive_mori_heap")(runtimes=runtimes, ep=ep)


def choose_mori_heap(computed: int, user_value: str | None) -> tuple[str, str | None]:
    return formula("choose_mori_heap")(computed, user_value)
