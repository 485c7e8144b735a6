"""Every name ``--software`` accepts besides ``installed``: ``all``, each engine release's profiles, ``none``,
then one per declared library build.

The releases' profiles come from their folders through :data:`moe_oracle.releases.RELEASES`, in its order.
"""

from __future__ import annotations

from collections.abc import Callable

from moe_oracle.releases import RELEASES
from moe_oracle.software.catalog import known_builds
from moe_oracle.software.profiles import profile_all, profile_build, profile_none, with_declared_entries
from moe_oracle.software.types import SoftwareProfile

_FACTORIES: dict[str, Callable[[], SoftwareProfile]] = {
    "all": profile_all,
    **{name: factory for release in RELEASES.values() for name, factory in release.profiles.items()},
    "none": profile_none,
}

#: The engine-release profiles accepted by ``--software`` besides ``installed`` (see also :func:`profile_names`).
NAMED_PROFILES: tuple[str, ...] = tuple(_FACTORIES)


def profile_names() -> tuple[str, ...]:
    """Every name ``--software`` accepts besides ``installed``: the engine releases, then one per declared library
    build (:func:`~moe_oracle.software.catalog.known_builds`)."""
    return NAMED_PROFILES + tuple(n for n in known_builds() if n not in _FACTORIES)


def named_profile(name: str) -> SoftwareProfile | None:
    """The named profile, or None when the name is unknown.

    The profile's own libraries, plus the entries the registered backend packages declare for it
    (``LibrarySpec.profiles``; in ``all`` every declared library with all its entry points). A declared
    build's name gives that build alone.
    """
    factory = _FACTORIES.get(name)
    if factory is None:
        build = known_builds().get(name)
        return profile_build(build) if build is not None else None
    return with_declared_entries(name, factory())
