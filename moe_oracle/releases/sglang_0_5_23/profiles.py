"""The software profiles SGLang 0.5.23 ships (``--software sglang-0.5.23, sglang-0.5.23+moe-oracle``), as data.

Each is a declared description, not a probe; where the release's contents were inferred rather than read from
its wheel, the library's ``note`` says so.
"""

from __future__ import annotations

from moe_oracle.releases.sglang_0_5_23.version import VERSION
from moe_oracle.software.catalog import MORI_SYMBOLS, known_builds
from moe_oracle.software.profiles import AITER_V2, SM90_FP8_DG, SM100_DG, TORCH, build_entry, with_plugin
from moe_oracle.software.types import LibraryBuild, SoftwareProfile


def plain() -> SoftwareProfile:
    return SoftwareProfile(
        name=f"sglang-{VERSION}",
        description="SGLang 0.5.23: sgl-deep-gemm 0.2.3.post2 (SM90 FP8 and SM100 FP8xFP4 mega-MoE), "
        "torch 2.14.1; on ROCm aiter MegaMoEV2 via SGLANG_AMD_USE_FLYDSL_MEGA_MOE.",
        libraries={
            "torch": LibraryBuild(name="torch", version="2.14.1", symbols=TORCH),
            "sglang": LibraryBuild(name="sglang", dist="sglang", version="0.5.23"),
            "deep_gemm": LibraryBuild(
                name="deep_gemm",
                dist="sgl-deep-gemm",
                version="0.2.3.post2",
                symbols=SM100_DG | SM90_FP8_DG | {"nvfp4_mega_moe", "SymmBuffer"},
                builds=frozenset({"sgl-deep-gemm-0.2.3.post2"}),
                note="https://github.com/deepseek-ai/DeepGEMM, https://github.com/sgl-project/sglang/tree/v0.5.23: "
                "no fp8_fp4_mega_moe_sm90 in any sgl-deep-gemm release; the 0.2.3.post2 "
                "wheel's deep_gemm/mega/__init__.py has SymmBuffer(mma_type=...) and nvfp4_mega_moe",
            ),
            "aiter": LibraryBuild(name="aiter", dist="amd-aiter", version="0.1.20", symbols=AITER_V2),
            "mori": LibraryBuild(name="mori", dist="amd-mori", version="1.2.4", symbols=frozenset(MORI_SYMBOLS)),
            "flydsl": LibraryBuild(name="flydsl", dist="flydsl", version="0.3.1"),
            "flashinfer": LibraryBuild(name="flashinfer", dist="flashinfer-python", version="0.7.2"),
        },
    )


def with_moe_oracle() -> SoftwareProfile:
    """SGLang 0.5.23 with moe-oracle's plug-in and nothing else: its pinned sgl-deep-gemm 0.2.3.post2."""
    return with_plugin(
        plain(),
        f"sglang-{VERSION}+moe-oracle",
        "SGLang 0.5.23 + moe-oracle's plug-in (its runtime inside SGLang, entry point sglang.srt.plugins); DeepGEMM "
        "is SGLang's pinned sgl-deep-gemm 0.2.3.post2.",
        "SGLang",
    )


def with_pr323() -> SoftwareProfile:
    """SGLang 0.5.23 with moe-oracle's plug-in and a DeepGEMM build that has the SM90 FP8xFP4 mega kernel.

    SGLang imports DeepGEMM as the module ``deep_gemm``. The PR #323 build installs that module with
    ``sgl_deep_gemm/__init__.py`` as its front end (PR #323's ``build_sgl_deep_gemm.sh``; moe-oracle's H200 build
    stages the same file), in place of sgl-deep-gemm 0.2.3.post2, so the profile's entry points are that front
    end's (the ``deepgemm-pr323`` build); docs/engines.md lists which of SGLang's own DeepGEMM calls it exports.
    """
    pr323 = known_builds()["deepgemm-pr323"]
    return with_plugin(
        plain(),
        f"sglang-{VERSION}+moe-oracle+pr323",
        "SGLang 0.5.23 + moe-oracle's plug-in + a DeepGEMM build with the SM90 FP8xFP4 mega kernel (PR #323, "
        "sgl_deep_gemm front end; unreleased) in place of sgl-deep-gemm 0.2.3.post2.",
        "SGLang",
        build_entry(
            pr323,
            "DeepGEMM PR #323 build (sgl_deep_gemm front end) in place of sgl-deep-gemm 0.2.3.post2",
            "https://github.com/deepseek-ai/DeepGEMM/pull/323 (8ddf7f96) sgl_deep_gemm/__init__.py: exports "
            "fp8_fp4_mega_moe (SM90: _C.fp8_fp4_mega_moe_sm90), fp8_mega_moe, mega_moe_pre_dispatch_sm90, "
            "get_symm_buffer_for_sm90_mega_moe, transform_weights_for_mega_moe_sm90(_fp4) and SGLang's dense, "
            "grouped and attention GEMMs; not nvfp4_mega_moe nor get_block_m_for_mega_moe (docs/engines.md, SGLang "
            "section). No sgl-deep-gemm release has _C.fp8_fp4_mega_moe_sm90",
        ),
    )
