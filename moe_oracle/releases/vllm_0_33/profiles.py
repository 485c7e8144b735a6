"""The software profiles vLLM 0.33.0 ships (``--software vllm-0.33.0, vllm-0.33.0+moe-oracle``), as data.

Each is a declared description, not a probe; where the release's contents were inferred rather than read from
its wheel, the library's ``note`` says so.
"""

from __future__ import annotations

from moe_oracle.releases.vllm_0_33.version import SOURCE, SOURCE_TREE, VERSION
from moe_oracle.software.catalog import MORI_SYMBOLS
from moe_oracle.software.profiles import AITER_V2, SM90_FP8_DG, SM100_DG, TORCH, with_plugin
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


def with_moe_oracle() -> SoftwareProfile:
    """vLLM 0.33.0 with moe-oracle's plug-in and a DeepGEMM build that has the SM90 mega kernels.

    vLLM imports a site-packages ``deep_gemm`` before its vendored copy
    (https://github.com/vllm-project/vllm/blob/v0.33.0/vllm/utils/deep_gemm.py), so
    installing the SM90 build next to vLLM gives moe-oracle's runtime the SM90 kernels; on SM100
    the vendored 2.8.1 kernels stay what vLLM's native path and the runtime use.
    """
    base = plain()
    vendored = base.libraries["deep_gemm"]
    deep_gemm = LibraryBuild(
        name="deep_gemm",
        dist="DeepGEMM PR #323 build in site-packages (SM90), vLLM's vendored 2.8.1 (SM100)",
        version=None,
        symbols=vendored.symbols
        | SM90_FP8_DG
        | {"_C.fp8_fp4_mega_moe_sm90", "transform_weights_for_mega_moe_sm90_fp4"},
        builds=frozenset({"deepgemm-pr323", "vllm-deepgemm-2.8.1"}),
        note="https://github.com/deepseek-ai/DeepGEMM/pull/323: _C.fp8_fp4_mega_moe_sm90 only in PR #323 builds (PR "
        "#411 names its kernel "
        f"fp8_mxfp4_mega_moe); {SOURCE}/utils/deep_gemm.py "
        "site-packages first",
    )
    return with_plugin(
        base,
        f"vllm-{VERSION}+moe-oracle",
        "vLLM 0.33.0 + moe-oracle's plug-in (its runtime inside vLLM) + a DeepGEMM build with the "
        "SM90 mega kernels (PR #323) in site-packages.",
        deep_gemm,
        "vLLM",
    )
