"""Named software profiles: what an engine release ships, as data (no imports).

Each profile is a declared description, not a probe. Sources are given per library; where a
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

_SM100_DG = frozenset(
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
_SM90_FP8_DG = frozenset(
    {
        "fp8_mega_moe",
        "mega_moe_pre_dispatch_sm90",
        "get_symm_buffer_for_sm90_mega_moe",
        "transform_weights_for_mega_moe_sm90",
    }
)
_SM90_FP4_DG = frozenset({"_C.fp8_fp4_mega_moe_sm90", "transform_weights_for_mega_moe_sm90_fp4"})
_AITER_V2 = frozenset({"MegaMoEV2", "shuffle_weight_a16w4", "shuffle_scale_a16w4"})
_TORCH = frozenset(TORCH_SYMBOLS)


def _profile_all() -> SoftwareProfile:
    return SoftwareProfile(
        name="all",
        description="Every known kernel build present (judges kernels and hardware alone).",
        libraries={
            "torch": LibraryBuild(name="torch", version="2.11", symbols=_TORCH),
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


def _profile_vllm_033() -> SoftwareProfile:
    return SoftwareProfile(
        name="vllm-0.33.0",
        description="vLLM 0.33.0 wheel: vendored DeepGEMM 2.8.1 (SM100 mega kernels only), torch 2.14.0; "
        "on ROCm the image's aiter with MegaMoEV2 and MoRI.",
        libraries={
            "torch": LibraryBuild(name="torch", version="2.14.0", symbols=_TORCH),
            "vllm": LibraryBuild(name="vllm", dist="vllm", version="0.33.0"),
            "deep_gemm": LibraryBuild(
                name="deep_gemm",
                dist="vllm (vendored vllm.third_party.deep_gemm)",
                version="2.8.1",
                import_path="vllm.third_party.deep_gemm",
                symbols=_SM100_DG | {"nvfp4_mega_moe", "NVFP4SymmBuffer", "fp4_fp4_mega_moe"},
                builds=frozenset({"vllm-deepgemm-2.8.1"}),
                note="https://github.com/vllm-project/vllm/tree/v0.33.0/vllm/third_party/deep_gemm: include/impls "
                "has sm100_*mega_moe*.cuh only; no SM90 mega kernel",
            ),
            "aiter": LibraryBuild(
                name="aiter",
                dist="amd-aiter",
                version="0.1.20",
                symbols=_AITER_V2,
                note="ROCm images only; not pinned by the wheel (inferred from vLLM's aiter_mega_moe path)",
            ),
            "mori": LibraryBuild(name="mori", dist="amd-mori", version="1.2.4", symbols=frozenset(MORI_SYMBOLS)),
            "flydsl": LibraryBuild(name="flydsl", dist="flydsl", version="0.3.1"),
        },
    )


def _with_plugin(
    base: SoftwareProfile, name: str, description: str, deep_gemm: LibraryBuild, engine: str
) -> SoftwareProfile:
    """``base`` with moe-oracle's plug-in for ``engine`` and the DeepGEMM build its runtime uses."""
    libraries = dict(base.libraries)
    libraries["deep_gemm"] = deep_gemm
    libraries["moe_oracle"] = LibraryBuild(name="moe_oracle", dist=f"moe-oracle ({engine} plug-in)", version=None)
    return SoftwareProfile(name=name, description=description, libraries=libraries)


def _profile_vllm_033_moe_oracle() -> SoftwareProfile:
    """vLLM 0.33.0 with moe-oracle's plug-in and a DeepGEMM build that has the SM90 mega kernels.

    vLLM imports a site-packages ``deep_gemm`` before its vendored copy
    (https://github.com/vllm-project/vllm/blob/v0.33.0/vllm/utils/deep_gemm.py), so
    installing the SM90 build next to vLLM gives moe-oracle's runtime the SM90 kernels; on SM100
    the vendored 2.8.1 kernels stay what vLLM's native path and the runtime use.
    """
    base = _profile_vllm_033()
    vendored = base.libraries["deep_gemm"]
    deep_gemm = LibraryBuild(
        name="deep_gemm",
        dist="DeepGEMM PR #323 build in site-packages (SM90), vLLM's vendored 2.8.1 (SM100)",
        version=None,
        symbols=vendored.symbols
        | _SM90_FP8_DG
        | {"_C.fp8_fp4_mega_moe_sm90", "transform_weights_for_mega_moe_sm90_fp4"},
        builds=frozenset({"deepgemm-pr323", "vllm-deepgemm-2.8.1"}),
        note="https://github.com/deepseek-ai/DeepGEMM/pull/323: _C.fp8_fp4_mega_moe_sm90 only in PR #323 builds (PR "
        "#411 names its kernel "
        "fp8_mxfp4_mega_moe); https://github.com/vllm-project/vllm/blob/v0.33.0/vllm/utils/deep_gemm.py "
        "site-packages first",
    )
    return _with_plugin(
        base,
        "vllm-0.33.0+moe-oracle",
        "vLLM 0.33.0 + moe-oracle's plug-in (its runtime inside vLLM) + a DeepGEMM build with the "
        "SM90 mega kernels (PR #323) in site-packages.",
        deep_gemm,
        "vLLM",
    )


def _profile_sglang_0523() -> SoftwareProfile:
    return SoftwareProfile(
        name="sglang-0.5.23",
        description="SGLang 0.5.23: sgl-deep-gemm 0.2.3.post2 (SM90 FP8 and SM100 FP8xFP4 mega-MoE), "
        "torch 2.14.1; on ROCm aiter MegaMoEV2 via SGLANG_AMD_USE_FLYDSL_MEGA_MOE.",
        libraries={
            "torch": LibraryBuild(name="torch", version="2.14.1", symbols=_TORCH),
            "sglang": LibraryBuild(name="sglang", dist="sglang", version="0.5.23"),
            "deep_gemm": LibraryBuild(
                name="deep_gemm",
                dist="sgl-deep-gemm",
                version="0.2.3.post2",
                symbols=_SM100_DG | _SM90_FP8_DG | {"nvfp4_mega_moe", "SymmBuffer"},
                builds=frozenset({"sgl-deep-gemm-0.2.3.post2"}),
                note="https://github.com/deepseek-ai/DeepGEMM, https://github.com/sgl-project/sglang/tree/v0.5.23: "
                "no fp8_fp4_mega_moe_sm90 in any sgl-deep-gemm release; the 0.2.3.post2 "
                "wheel's deep_gemm/mega/__init__.py has SymmBuffer(mma_type=...) and nvfp4_mega_moe",
            ),
            "aiter": LibraryBuild(name="aiter", dist="amd-aiter", version="0.1.20", symbols=_AITER_V2),
            "mori": LibraryBuild(name="mori", dist="amd-mori", version="1.2.4", symbols=frozenset(MORI_SYMBOLS)),
            "flydsl": LibraryBuild(name="flydsl", dist="flydsl", version="0.3.1"),
            "flashinfer": LibraryBuild(name="flashinfer", dist="flashinfer-python", version="0.7.2"),
        },
    )


def _profile_sglang_0523_moe_oracle() -> SoftwareProfile:
    """SGLang 0.5.23 with moe-oracle's plug-in and a DeepGEMM build that has the SM90 FP8xFP4 mega kernel.

    SGLang imports DeepGEMM as the module ``deep_gemm``. The PR #323 build installs that module with
    ``sgl_deep_gemm/__init__.py`` as its front end (PR #323's ``build_sgl_deep_gemm.sh``; moe-oracle's H200 build
    stages the same file), in place of sgl-deep-gemm 0.2.3.post2, so the profile's entry points are that front
    end's (the ``deepgemm-pr323`` build); docs/engines.md lists which of SGLang's own DeepGEMM calls it exports.
    """
    base = _profile_sglang_0523()
    pr323 = known_builds()["deepgemm-pr323"]
    deep_gemm = LibraryBuild(
        name="deep_gemm",
        dist="DeepGEMM PR #323 build (sgl_deep_gemm front end) in place of sgl-deep-gemm 0.2.3.post2",
        version=None,
        symbols=pr323.symbols,
        builds=frozenset({pr323.name, "sgl-deep-gemm-0.2.3.post2"}),
        note="https://github.com/deepseek-ai/DeepGEMM/pull/323 (8ddf7f96) sgl_deep_gemm/__init__.py: exports "
        "fp8_fp4_mega_moe (SM90: _C.fp8_fp4_mega_moe_sm90), fp8_mega_moe, mega_moe_pre_dispatch_sm90, "
        "get_symm_buffer_for_sm90_mega_moe, transform_weights_for_mega_moe_sm90(_fp4) and SGLang's dense, grouped "
        "and attention GEMMs; not nvfp4_mega_moe nor get_block_m_for_mega_moe (docs/engines.md, SGLang section). "
        "No sgl-deep-gemm release has _C.fp8_fp4_mega_moe_sm90",
    )
    return _with_plugin(
        base,
        "sglang-0.5.23+moe-oracle",
        "SGLang 0.5.23 + moe-oracle's plug-in (its runtime inside SGLang, entry point sglang.srt.plugins) + a "
        "DeepGEMM build with the SM90 FP8xFP4 mega kernel (PR #323, sgl_deep_gemm front end).",
        deep_gemm,
        "SGLang",
    )


def _profile_none() -> SoftwareProfile:
    return SoftwareProfile(name="none", description="No kernel library present.")


_FACTORIES = {
    "all": _profile_all,
    "vllm-0.33.0": _profile_vllm_033,
    "vllm-0.33.0+moe-oracle": _profile_vllm_033_moe_oracle,
    "sglang-0.5.23": _profile_sglang_0523,
    "sglang-0.5.23+moe-oracle": _profile_sglang_0523_moe_oracle,
    "none": _profile_none,
}

#: The engine-release profiles accepted by ``--software`` besides ``installed`` (see also :func:`profile_names`).
NAMED_PROFILES: tuple[str, ...] = tuple(_FACTORIES)


def _profile_build(build: BuildSpec) -> SoftwareProfile:
    """One library build alone (with a torch that has symmetric memory): what ``select`` says with only it installed."""
    return SoftwareProfile(
        name=build.name,
        description=f"{build.label}, alone (moe-oracle list builds shows its sources and limits).",
        libraries={
            "torch": LibraryBuild(name="torch", version=None, symbols=_TORCH),
            build.library: LibraryBuild(
                name=build.library,
                dist=build.title,
                symbols=build.symbols,
                builds=frozenset({build.name}),
                note=build.note or None,
            ),
        },
    )


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
        return _profile_build(build) if build is not None else None
    profile = factory()
    libraries = dict(profile.libraries)
    core = core_libraries()
    for lib in known_libraries().values():
        if core.get(lib.name) == lib:
            continue  # the core's own declaration: the profile above already describes it
        entry = lib.profile_entry(name)
        if entry is not None:
            libraries[lib.name] = merge_builds(libraries[lib.name], entry) if lib.name in libraries else entry
    return profile.model_copy(update={"libraries": libraries}) if libraries != profile.libraries else profile
