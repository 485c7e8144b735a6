"""Backend discovery through the ``moe_oracle.backends`` entry-point group.

Each entry point names a callable returning a :class:`BackendPackage` (its variants, the non-fused
paths its target implements, and the kernel libraries they call) or, the older form, a tuple of
:class:`~moe_oracle.rules.VariantSpec` (and :class:`~moe_oracle.cost.nonfused.NonFusedPath`) objects.
moe-oracle's own targets register this way, and so does a third-party package
(``[project.entry-points."moe_oracle.backends"] mine = "pkg:package"``, see
``docs/adding-a-backend.md``). Loading imports only the declarations (no torch, no kernel library).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib.metadata import EntryPoint, entry_points

from moe_oracle.errors import OracleError
from moe_oracle.rules import VariantSpec
from moe_oracle.rules.nonfused import NonFusedPath
from moe_oracle.software.types import LibrarySpec

GROUP = "moe_oracle.backends"
CORE_DISTRIBUTION = "moe-oracle"


@dataclass(frozen=True)
class BackendPackage:
    """What one entry point contributes: its variants, its non-fused paths and the libraries their checks name.

    ``libraries`` are the kernel libraries the core's catalogue does not know (or extra entry points of
    one it knows): the ``installed`` probe imports their providers and resolves their symbols, the
    ``all`` profile lists them, and ``LibrarySpec.profiles`` adds them to other named profiles.
    """

    variants: tuple[VariantSpec, ...]
    libraries: tuple[LibrarySpec, ...] = ()
    nonfused: tuple[NonFusedPath, ...] = ()


@dataclass(frozen=True)
class Origin:
    """Where a variant came from: the entry point and the distribution that installed it."""

    entry_point: str
    distribution: str

    @property
    def builtin(self) -> bool:
        """Installed by moe-oracle itself (its own ``backends/``)."""
        return self.distribution.lower().replace("_", "-") == CORE_DISTRIBUTION

    def reinstall(self) -> str:
        """The fix text that reinstalls this variant's own package."""
        if self.builtin:
            return "reinstall moe-oracle (pip install -e .)"
        return f"reinstall {self.distribution} (pip install {self.distribution})"


@dataclass(frozen=True)
class Registry:
    """Loaded variants in a stable order, the libraries known to the probe, and entry points that failed."""

    variants: tuple[VariantSpec, ...]
    broken: tuple[tuple[str, str], ...] = ()
    nonfused: tuple[NonFusedPath, ...] = ()
    libraries: Mapping[str, LibrarySpec] = field(default_factory=dict)
    origins: Mapping[str, Origin] = field(default_factory=dict)

    def find(self, backend: str, variant: str | None = None) -> tuple[VariantSpec, ...]:
        return tuple(v for v in self.variants if v.backend == backend and (variant is None or v.variant == variant))

    @property
    def backends(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(v.backend for v in self.variants))

    def origin(self, spec: VariantSpec) -> Origin:
        """The entry point and distribution of ``spec`` (for a spec built outside the registry: its module's)."""
        found = self.origins.get(spec.key)
        if found is not None:
            return found
        module = (spec.runtime or spec.layout or spec.backend).split(":", 1)[0]
        return Origin(entry_point="(not registered)", distribution=f"the package providing {module.split('.')[0]}")


class RegistryError(OracleError):
    """The registered backends cannot be loaded as one registry (none installed, or two claim one key)."""


class NoBackendError(RegistryError):
    """No backend is registered: the distribution is not installed."""


def _load(ep: EntryPoint) -> BackendPackage:
    from moe_oracle.releases.profiles import NAMED_PROFILES

    produced = ep.load()()
    if not isinstance(produced, BackendPackage):
        items = tuple(produced)
        if not all(isinstance(v, (VariantSpec, NonFusedPath)) for v in items):
            raise TypeError("entry point must return a BackendPackage, or VariantSpec (and NonFusedPath) objects")
        produced = BackendPackage(
            tuple(v for v in items if isinstance(v, VariantSpec)),
            nonfused=tuple(p for p in items if isinstance(p, NonFusedPath)),
        )
    if not all(isinstance(v, VariantSpec) for v in produced.variants):
        raise TypeError("BackendPackage.variants must hold VariantSpec objects")
    if not all(isinstance(p, NonFusedPath) for p in produced.nonfused):
        raise TypeError("BackendPackage.nonfused must hold NonFusedPath objects")
    for lib in produced.libraries:
        if not isinstance(lib, LibrarySpec):
            raise TypeError(f"BackendPackage.libraries must hold LibrarySpec objects, got {type(lib).__name__}")
        unknown = sorted(set(lib.profiles) - set(NAMED_PROFILES))
        if unknown:
            raise ValueError(
                f"library {lib.name!r} has an entry for unknown software profile {unknown[0]!r} "
                f"(known: {', '.join(NAMED_PROFILES)})"
            )
    return BackendPackage(tuple(produced.variants), tuple(produced.libraries), tuple(produced.nonfused))


@functools.lru_cache(maxsize=1)
def load_registry() -> Registry:
    """All registered variants, sorted by (backend, target, priority, variant).

    Raises :class:`RegistryError` naming both distributions when two entry points declare the same
    variant key (and ``software.catalog.LibraryConflictError`` when they place a library's entry point
    at two attribute paths).
    """
    from moe_oracle.software.catalog import distribution_of, known_libraries

    broken: list[tuple[str, str]] = []
    paths: list[NonFusedPath] = []
    origins: dict[str, Origin] = {}
    keys: dict[str, VariantSpec] = {}
    for ep in sorted(entry_points(group=GROUP), key=lambda e: e.name):
        label = f"{ep.name} = {ep.value}"
        try:
            package = _load(ep)
        except Exception as exc:  # a broken plug-in must not take the oracle down
            broken.append((label, f"{type(exc).__name__}: {exc}"))
            continue
        here = Origin(label, distribution_of(ep))
        paths.extend(package.nonfused)
        for v in package.variants:
            if v.key in keys:
                first = origins[v.key]
                raise RegistryError(
                    f"variant key {v.key} is declared twice: by {first.distribution} ({first.entry_point}) "
                    f"and by {here.distribution} ({here.entry_point})",
                    fix=f"uninstall one of {first.distribution} and {here.distribution}, or rename one variant.",
                )
            keys[v.key] = v
            origins[v.key] = here
    if not keys:
        raise NoBackendError(
            f"no backend is registered in the '{GROUP}' entry-point group",
            fix="install the distribution (pip install moe-oracle, or pip install -e . in a checkout).",
        )
    ordered = sorted(keys.values(), key=lambda v: (v.backend, v.target, v.priority, v.variant))
    return Registry(tuple(ordered), tuple(broken), tuple(paths), known_libraries(), origins)
