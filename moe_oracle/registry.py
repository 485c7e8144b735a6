"""Backend discovery through the ``moe_oracle.backends`` entry-point group.

Each entry point names a callable returning a tuple of
:class:`~moe_oracle.rules.VariantSpec` (and, for a target that implements one, the
:class:`~moe_oracle.cost.nonfused.NonFusedPath` declarations of its non-fused path). moe-oracle's own
targets register this way, and so can
a third-party package (``[project.entry-points."moe_oracle.backends"] mine = "pkg:variants"``).
Loading imports only the declarations (no torch, no kernel library).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from importlib.metadata import entry_points

from moe_oracle.errors import OracleError
from moe_oracle.rules import VariantSpec
from moe_oracle.rules.nonfused import NonFusedPath

GROUP = "moe_oracle.backends"


@dataclass(frozen=True)
class Registry:
    """Loaded variants in a stable order, plus entry points that failed to load."""

    variants: tuple[VariantSpec, ...]
    broken: tuple[tuple[str, str], ...] = ()
    nonfused: tuple[NonFusedPath, ...] = ()

    def find(self, backend: str, variant: str | None = None) -> tuple[VariantSpec, ...]:
        return tuple(v for v in self.variants if v.backend == backend and (variant is None or v.variant == variant))

    @property
    def backends(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(v.backend for v in self.variants))


class RegistryError(OracleError):
    """No backend is registered: the distribution is not installed."""


@functools.lru_cache(maxsize=1)
def load_registry() -> Registry:
    """All registered variants, sorted by (backend, target, priority, variant)."""
    found: list[VariantSpec] = []
    paths: list[NonFusedPath] = []
    broken: list[tuple[str, str]] = []
    for ep in sorted(entry_points(group=GROUP), key=lambda e: e.name):
        try:
            produced = tuple(ep.load()())
            if not all(isinstance(v, (VariantSpec, NonFusedPath)) for v in produced):
                raise TypeError("entry point must return VariantSpec (or NonFusedPath) objects")
        except Exception as exc:  # a broken plug-in must not take the oracle down
            broken.append((f"{ep.name} = {ep.value}", f"{type(exc).__name__}: {exc}"))
            continue
        found.extend(v for v in produced if isinstance(v, VariantSpec))
        paths.extend(p for p in produced if isinstance(p, NonFusedPath))
    if not found:
        raise RegistryError(
            f"no backend is registered in the '{GROUP}' entry-point group",
            fix="install the distribution (pip install moe-oracle, or pip install -e . in a checkout).",
        )
    keys: dict[str, VariantSpec] = {}
    for v in found:
        keys.setdefault(v.key, v)
    ordered = sorted(keys.values(), key=lambda v: (v.backend, v.target, v.priority, v.variant))
    return Registry(tuple(ordered), tuple(broken), tuple(paths))
