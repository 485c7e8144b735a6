"""Probe this machine's kernel libraries into the ``installed`` software profile.

Import and attribute checks only: no kernel is launched, no JIT compiled. Libraries with entry points
are imported (that is how those become visible), so probing may load torch; a library that declares
none (vllm, sglang, flashinfer) is found by its module spec and its distribution's metadata, without
importing it (unless something already has). The planning commands probe only when the ``installed``
profile is asked for (the default for ``--device local``). An import failure is recorded with its
error, never raised.
"""

from __future__ import annotations

import functools
import importlib
import importlib.metadata as md
import importlib.util
import inspect
import os
import sys
from collections.abc import Mapping
from pathlib import Path
from types import ModuleType
from typing import Any

from moe_oracle.software.catalog import known_libraries
from moe_oracle.software.types import LibraryBuild, LibrarySpec, SoftwareProfile

_MISSING = object()


def _resolve(module: ModuleType, path: str) -> Any:
    """The object at ``path`` under ``module`` (importing a submodule only when no attribute has the name),
    else ``_MISSING``."""
    obj = module
    base = module.__name__
    for i, part in enumerate(path.split(".")):
        if hasattr(obj, part):
            obj = getattr(obj, part)
            continue
        name = ".".join([base, *path.split(".")[: i + 1]])
        try:
            obj = importlib.import_module(name)
        except Exception:
            return _MISSING
    return obj


def _parameters(obj: object) -> tuple[str, ...] | None:
    """The parameter names of a Python function or class (read, never called); None for compiled objects."""
    if not (inspect.isfunction(obj) or inspect.isclass(obj)):
        return None
    try:
        return tuple(inspect.signature(obj).parameters)
    except (TypeError, ValueError):
        return None


@functools.lru_cache(maxsize=1)
def _all_packages() -> Mapping[str, list[str]]:
    """``importlib.metadata.packages_distributions()``, once per process (it reads every installed
    distribution's file list: seconds in an environment such as vLLM's)."""
    try:
        return md.packages_distributions()
    except Exception:
        return {}


def _key(name: str) -> str:
    return name.lower().replace("-", "_").replace(".", "_")


@functools.cache
def _dist_for(top: str) -> str | None:
    """The distribution that installs top-level module ``top``.

    First a distribution named ``top``, then those whose name contains it (``deep_gemm`` in
    ``sgl-deep-gemm``, ``flashinfer`` in ``flashinfer-python``), each confirmed by its ``top_level.txt``
    or ``RECORD``; only when none ships it, the map of every installed distribution (cached)."""
    candidates: list[tuple[bool, Path]] = []
    for entry in sys.path:
        try:
            names = [e.name for e in os.scandir(entry or ".") if e.name.endswith((".dist-info", ".egg-info"))]
        except OSError:
            continue
        for name in names:
            dist_name = _key(name.rsplit(".", 1)[0].split("-", 1)[0])
            if _key(top) in dist_name:
                candidates.append((dist_name != _key(top), Path(entry or ".") / name))
    for _, path in sorted(candidates):
        dist = md.PathDistribution(path)
        if _ships(dist, top):
            return dist.metadata["Name"] or path.name.split("-", 1)[0]
    dists = _all_packages().get(top) or []
    return sorted(dists)[0] if dists else None


def _ships(dist: md.Distribution, top: str) -> bool:
    """Does ``dist`` install top-level module ``top`` (``top_level.txt``, else the first path part in ``RECORD``)?"""
    if top in (dist.read_text("top_level.txt") or "").split():
        return True
    record = dist.read_text("RECORD") or dist.read_text("SOURCES.txt") or ""
    return any(line.startswith((f"{top}/", f"{top}.py,", f"{top}\\")) for line in record.splitlines())


def _version(module: object, dist: str | None) -> str | None:
    ver = getattr(module, "__version__", None)
    if isinstance(ver, str):
        return ver
    if dist:
        try:
            return md.version(dist)
        except md.PackageNotFoundError:
            return None
    return None


def _spec_exists(path: str) -> bool:
    top = path.split(".")[0]
    try:
        if importlib.util.find_spec(top) is None:
            return False
    except (ImportError, ValueError):
        return False
    return True


def probe_library(name: str, spec: LibrarySpec | None = None) -> LibraryBuild:
    """Find ``name`` through its providers in preference order (``spec``, else the known libraries'
    declaration of it); never raises."""
    if spec is None:
        spec = known_libraries().get(name) or LibrarySpec(name=name)
    errors = []
    for import_path in spec.import_paths:
        if not _spec_exists(import_path):
            continue
        if not spec.symbols and import_path not in sys.modules:
            return _unimported(name, import_path)
        try:
            module = importlib.import_module(import_path)
        except Exception as exc:
            errors.append(f"import {import_path}: {type(exc).__name__}: {' '.join(str(exc).split())[:300]}")
            continue
        top = import_path.split(".")[0]
        dist = _dist_for(top)
        if import_path != top:
            dist = f"{dist or top} (vendored {import_path})"
        found = {s: _resolve(module, spec.symbol_paths.get(s, s)) for s in spec.symbols}
        found = {s: obj for s, obj in found.items() if obj is not _MISSING}
        params = {s: p for s, obj in sorted(found.items()) if (p := _parameters(obj)) is not None}
        return LibraryBuild(
            name=name,
            dist=dist,
            version=_version(module, _dist_for(top)),
            import_path=import_path,
            symbols=frozenset(found),
            params=params,
            error="; ".join(errors) or None,
        )
    return LibraryBuild(name=name, present=False, error="; ".join(errors) or "not installed")


def _unimported(name: str, import_path: str) -> LibraryBuild:
    """A library that declares no entry point, found without importing it (flashinfer's import alone takes
    seconds): present where its module is, version from its distribution's metadata."""
    top = import_path.split(".")[0]
    dist = _dist_for(top)
    version = None
    if dist:
        try:
            version = md.version(dist)
        except md.PackageNotFoundError:
            version = None
    return LibraryBuild(name=name, dist=dist, version=version, import_path=import_path)


def probe_installed() -> SoftwareProfile:
    """The ``installed`` profile of this machine: the core catalogue's libraries and those the registered
    backend packages declare."""
    libs = {name: probe_library(name, spec) for name, spec in known_libraries().items()}
    return SoftwareProfile(
        name="installed",
        description="Probed on this machine (import and attribute checks, no kernel launched).",
        libraries=libs,
    )
