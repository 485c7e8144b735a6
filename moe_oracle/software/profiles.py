"""Software profiles that name no engine release (``all``, ``none``, one library build alone), the library
builds the releases' profiles share, and how a declared profile takes in the backend packages' entries.

The engine releases' own profiles are in their folders (``moe_oracle/releases/<release>/profiles.py``); every
name ``--software`` accepts is listed by :mod:`moe_oracle.releases.profiles`. Each profile is a declared
description, not a probe. Sources are given per library; where a
release's contents were inferred rather than read from its wheel, the ``note`` says so.
"""

from __future__ import annotations

from moe_oracle.rules.build import BuildSpec
from moe_oracle.software.catalog import (
    AITER_SYMBOLS,
    DEEP_GEMM_SYMBOLS,
    MORI_SYMBOLS,
    TORCH_SYMBOLS,
    core_libraries,
    known_builds,
    known_libraries,
    merge_builds,
)
from moe_oracle.software.types import LibraryBuild, SoftwareProfile

SM100_DG = frozenset(
    {
        "fp8_fp4_mega_moe",
        "bf16_mega_moe",
        "get_symm_buffer_for_mega_moe",
        "transform_weights_for_mega_moe",
        "get_block_m_for_mega_moe",
        "per_token_cast_to_fp8",
        "per_token_cast_to_fp4",
    }
)
SM90_FP8_DG = frozenset(
    {
        "fp8_mega_moe",
        "mega_moe_pre_dispatch_sm90",
        "get_symm_buffer_for_sm90_mega_moe",
        "transform_weights_for_mega_moe_sm90",
    }
)
SM90_FP4_DG = frozenset({"_C.fp8_fp4_mega_moe_sm90", "transform_weights_for_mega_moe_sm90_fp4"})
AITER_V2 = frozenset({"MegaMoEV2", "shuffle_weight_a16w4", "shuffle_scale_a16w4"})
TORCH = frozenset(TORCH_SYMBOLS)


def profile_all() -> SoftwareProfile:
    return SoftwareProfile(
        name="all",
        description="Every known kernel build present (judges kernels and hardware alone).",
        libraries={
            "torch": LibraryBuild(name="torch", version="2.11", symbols=TORCH),
            "deep_gemm": LibraryBuild(
                name="deep_gemm",
                dist="every known DeepGEMM build (PR #323, nv_dev, sgl-deep-gemm, vLLM fork...)",
                version=None,
                symbols=frozenset(DEEP_GEMM_SYMBOLS),
                builds=frozenset(n for n, b in known_builds().items() if b.library == "deep_gemm"),
            ),
            "aiter": LibraryBuild(
                name="aiter",
                dist="amd-aiter (newest main)",
                version=None,
                symbols=frozenset(AITER_SYMBOLS),
            ),
            "mori": LibraryBuild(name="mori", dist="amd-mori", version="1.2.4", symbols=frozenset(MORI_SYMBOLS)),
            "flydsl": LibraryBuild(name="flydsl", dist="flydsl", version="0.3.1"),
        },
    )


def with_plugin(
    base: SoftwareProfile, name: str, description: str, engine: str, deep_gemm: LibraryBuild | None = None
) -> SoftwareProfile:
    """``base`` with moe-oracle's plug-in for ``engine``; with ``deep_gemm``, that build replaces the release's.

    An engine imports one ``deep_gemm`` module (vLLM: a site-packages one before its vendored copy; SGLang: the
    module its sgl-deep-gemm installs), so a profile lists exactly one build of it: the one the engine loads.
    """
    libraries = dict(base.libraries)
    if deep_gemm is not None:
        libraries["deep_gemm"] = deep_gemm
    libraries["moe_oracle"] = LibraryBuild(name="moe_oracle", dist=f"moe-oracle ({engine} plug-in)", version=None)
    return SoftwareProfile(name=name, description=description, libraries=libraries)


def build_entry(build: BuildSpec, dist: str, note: str, *, version: str | None = None) -> LibraryBuild:
    """The library entry of a profile in which ``build`` is the one build of its library the engine loads."""
    return LibraryBuild(
        name=build.library,
        dist=dist,
        version=version,
        symbols=build.symbols,
        builds=frozenset({build.name}),
        note=note,
    )


def profile_none() -> SoftwareProfile:
    return SoftwareProfile(name="none", description="No kernel library present.")


def profile_build(build: BuildSpec) -> SoftwareProfile:
    """One library build alone (with a torch that has symmetric memory): what ``select`` says with only it installed."""
    return SoftwareProfile(
        name=build.name,
        description=f"{build.label}, alone (moe-oracle list builds shows its sources and limits).",
        libraries={
            "torch": LibraryBuild(name="torch", version=None, symbols=TORCH),
            build.library: LibraryBuild(
                name=build.library,
                dist=build.title,
                symbols=build.symbols,
                builds=frozenset({build.name}),
                note=build.note or None,
            ),
        },
    )


def with_declared_entries(name: str, profile: SoftwareProfile) -> SoftwareProfile:
    """``profile`` (named ``name``) with the entries the registered backend packages declare for it
    (``LibrarySpec.profiles``; in ``all`` every declared library with all its entry points)."""
    libraries = dict(profile.libraries)
    core = core_libraries()
    for lib in known_libraries().values():
        if core.get(lib.name) == lib:
            continue  # the core's own declaration: the profile above already describes it
        entry = lib.profile_entry(name)
        if entry is not None:
            libraries[lib.name] = merge_builds(libraries[lib.name], entry) if lib.name in libraries else entry
    return profile.model_copy(update={"libraries": libraries}) if libraries != profile.libraries else profile
