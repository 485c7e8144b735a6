"""The software profiles vLLM 0.33.0 ships (``--software vllm-0.33.0, vllm-0.33.0+moe-oracle``), as data.

Each is a declared description, not a probe; where the release's contents were inferred rather than read from
its wheel, the library's ``note`` says so.
"""

from __future__ import annotations

from moe_oracle.releases.vllm_0_33.version import SOURCE_TREE, VERSION
from moe_oracle.software.catalog import MORI_SYMBOLS, known_builds
from moe_oracle.software.profiles import AITER_V2, SM100_DG, TORCH, build_entry, with_plugin
from moe_oracle.software.types import LibraryBuild, SoftwareProfile


def plain() -> SoftwareProfile:
    return SoftwareProfile(
        name=f"vllm-{VERSION}",
        description="vLLM 0.33.0 wheel: vendored DeepGEMM 2.8.1 (SM100 mega kernels only), torch 2.14.0; "
        "on ROCm the image's aiter with MegaMoEV2 and MoRI.",
        libraries={
            "torch": LibraryBuild(name="torch", version="2.14.0", symbols=TORCH),
            "vllm": LibraryBuild(name="vllm", dist="vllm", version="0.33.0"),
            "deep_gemm": LibraryBuild(
                name="deep_gemm",
                dist="vllm (vendored vllm.third_party.deep_gemm)",
                version="2.8.1",
                import_path="vllm.third_party.deep_gemm",
                symbols=SM100_DG | {"nvfp4_mega_moe", "NVFP4SymmBuffer", "fp4_fp4_mega_moe"},
                builds=frozenset({"vllm-deepgemm-2.8.1"}),
                note=f"{SOURCE_TREE}/third_party/deep_gemm: include/impls "
                "has sm100_*mega_moe*.cuh only; no SM90 mega kernel",
            ),
            "aiter": LibraryBuild(
                name="aiter",
                dist="amd-aiter",
                version="0.1.20",
                symbols=AITER_V2,
                note="ROCm images only; not pinned by the wheel (inferred from vLLM's aiter_mega_moe path)",
            ),
            "mori": LibraryBuild(name="mori", dist="amd-mori", version="1.2.4", symbols=frozenset(MORI_SYMBOLS)),
            "flydsl": LibraryBuild(name="flydsl", dist="flydsl", version="0.3.1"),
        },
    )


#: vLLM imports a site-packages ``deep_gemm`` before its vendored copy.
_SITE_FIRST = (
    "https://github.com/vllm-project/vllm/blob/v0.33.0/vllm/utils/deep_gemm.py: a site-packages deep_gemm is "
    "imported before vllm.third_party.deep_gemm, so it replaces the vendored 2.8.1 for every DeepGEMM call vLLM makes"
)


def with_moe_oracle() -> SoftwareProfile:
    """vLLM 0.33.0 with moe-oracle's plug-in and nothing else: the vendored DeepGEMM 2.8.1 (SM100 kernels only)."""
    return with_plugin(
        plain(),
        f"vllm-{VERSION}+moe-oracle",
        "vLLM 0.33.0 + moe-oracle's plug-in (its runtime inside vLLM); DeepGEMM is vLLM's vendored 2.8.1 (SM100 "
        "mega kernels only).",
        "vLLM",
    )


def with_sgl_deep_gemm() -> SoftwareProfile:
    """vLLM 0.33.0 with moe-oracle's plug-in and the released sgl-deep-gemm 0.2.3.post2 in site-packages (SM90 FP8)."""
    sgl = known_builds()["sgl-deep-gemm-0.2.3.post2"]
    return with_plugin(
        plain(),
        f"vllm-{VERSION}+moe-oracle+sgl-deep-gemm",
        "vLLM 0.33.0 + moe-oracle's plug-in + sgl-deep-gemm 0.2.3.post2 (a PyPI release: SM90 FP8 x FP8 mega-MoE) "
        "in site-packages, which vLLM loads instead of its vendored DeepGEMM 2.8.1.",
        "vLLM",
        build_entry(
            sgl,
            "sgl-deep-gemm 0.2.3.post2 in site-packages (in place of vLLM's vendored 2.8.1)",
            f"{sgl.url}; {_SITE_FIRST}; checked on a CPU machine: the 0.2.3.post2 wheel imports under vLLM 0.33.0's "
            "torch 2.14.0 (fp8_mega_moe, get_symm_buffer_for_sm90_mega_moe present) and "
            "vllm.utils.deep_gemm._import_deep_gemm() returns it",
            version="0.2.3.post2",
        ),
    )


def with_pr323() -> SoftwareProfile:
    """vLLM 0.33.0 with moe-oracle's plug-in and a DeepGEMM PR #323 build in site-packages (SM90 FP8 x MXFP4)."""
    pr323 = known_builds()["deepgemm-pr323"]
    return with_plugin(
        plain(),
        f"vllm-{VERSION}+moe-oracle+pr323",
        "vLLM 0.33.0 + moe-oracle's plug-in + a DeepGEMM PR #323 build (SM90 FP8 x MXFP4 and FP8 x FP8 mega-MoE; "
        "unreleased) in site-packages, which vLLM loads instead of its vendored DeepGEMM 2.8.1.",
        "vLLM",
        build_entry(
            pr323,
            "DeepGEMM PR #323 build in site-packages (in place of vLLM's vendored 2.8.1)",
            f"{pr323.url} (8ddf7f96): _C.fp8_fp4_mega_moe_sm90 only in PR #323 builds (PR #411 names its kernel "
            f"fp8_mxfp4_mega_moe); {_SITE_FIRST}",
        ),
    )
