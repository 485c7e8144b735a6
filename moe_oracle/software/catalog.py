"""Which libraries and entry points matter, and where each provider installs them.

Backends' requirements name entry points from this catalogue; the probe looks for exactly
these; named profiles list subsets of them. Sources: https://github.com/deepseek-ai/DeepGEMM (its
pull requests and branches, named per build) and
https://github.com/vllm-project/vllm/blob/v0.33.0/vllm/model_executor/layers/fused_moe/deep_gemm_mega_moe.py,
https://github.com/vllm-project/vllm/tree/v0.33.0/vllm/third_party/deep_gemm. A backend package adds its own
libraries through its entry point (:class:`~moe_oracle.software.types.LibrarySpec`); :func:`known_libraries` is
this catalogue plus those.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from importlib.metadata import EntryPoint, entry_points

from moe_oracle.errors import OracleError
from moe_oracle.rules.build import BuildSpec, builds_named_by
from moe_oracle.software.types import LibraryBuild, LibrarySpec

#: DeepGEMM entry points relevant to mega-MoE, by meaning.
DEEP_GEMM_SYMBOLS: dict[str, str] = {
    "fp8_fp4_mega_moe": "FP8 x FP4 mega-MoE front end (SM100; SM90 in PR #323 builds)",
    "_C.fp8_fp4_mega_moe_sm90": "SM90 FP8 x MXFP4 kernel (DeepGEMM PR #323 and forks only)",
    "transform_weights_for_mega_moe_sm90_fp4": "SM90 FP4 weight transform (PR #323)",
    "fp8_mega_moe": "SM90 FP8 x FP8 block-128 mega-MoE (sgl-deep-gemm >= 0.2.0, upstream nv_dev)",
    "mega_moe_pre_dispatch_sm90": "SM90 fused activation staging",
    "get_symm_buffer_for_sm90_mega_moe": "SM90 symmetric buffer (sgl-deep-gemm)",
    "get_symm_buffer_for_mega_moe": "symmetric buffer (SM100; SM90 in PR #323 builds)",
    "transform_weights_for_mega_moe": "SM100 weight transform",
    "transform_weights_for_mega_moe_sm90": "SM90 FP8 weight transform",
    "bf16_mega_moe": "SM100 BF16 mega-MoE",
    "nvfp4_mega_moe": "SM100 NVFP4 mega-MoE (vLLM's DeepGEMM fork; sgl-deep-gemm >= 0.2.3.post2)",
    "NVFP4SymmBuffer": "SM100 NVFP4 symmetric buffer",
    "SymmBuffer": "SM100 symmetric buffer with mma_type (sgl-deep-gemm >= 0.2.3: fp8xfp4, mxf4xmxf4, nvfp4xnvfp4)",
    "fp4_fp4_mega_moe": "SM100 NVFP4 x NVFP4 mega-MoE",
    "get_block_m_for_mega_moe": "BLOCK_M heuristic (needed for shared-expert fusion)",
    "SM90FusedSymmBuffer": "fused SM90 FP8 symmetric buffer (DeepGEMM PR #440)",
    "fp8_mxfp4_mega_moe": "SM90 FP8 x MXFP4 unified persistent kernel (DeepGEMM PR #411)",
    "transform_weights_for_fp8_mxfp4_mega_moe_sm90": "SM90 MXFP4 weight transform of PR #411",
    "per_token_cast_to_fp8": "reference FP8 quantizer",
    "per_token_cast_to_fp4": "reference FP4 quantizer",
}

#: Attribute paths (relative to the library's top module) where an entry point lives when it is
#: not a top-level attribute. The probe imports the submodule only when the top level lacks it.
SYMBOL_PATHS: dict[str, dict[str, str]] = {
    "aiter": {
        "MegaMoEV2": "ops.flydsl.kernels.mega_moe.MegaMoEV2",
        "MegaMoE": "ops.flydsl.kernels.mega_moe.MegaMoE",
        "MegaMoEInterNodeBackend": "ops.flydsl.kernels.mega_moe.MegaMoEInterNodeBackend",
        "MegaMoEIntraNodeBackend": "ops.flydsl.kernels.mega_moe.MegaMoEIntraNodeBackend",
        "shuffle_weight_a16w4": "ops.shuffle.shuffle_weight_a16w4",
        "shuffle_scale_a16w4": "ops.shuffle.shuffle_scale_a16w4",
    },
}

AITER_SYMBOLS: dict[str, str] = {
    "MegaMoEV2": "aiter.ops.flydsl.kernels.mega_moe.MegaMoEV2 (aiter >= v0.1.20)",
    "MegaMoE": "aiter.ops.flydsl.kernels.mega_moe.MegaMoE (newer aiter bundle API)",
    "MegaMoEInterNodeBackend": "inter-node a4w4 backend (EP16, newer aiter)",
    "MegaMoEIntraNodeBackend": "intranode backend behind the MegaMoEV2 facade (newer aiter)",
    "shuffle_weight_a16w4": "aiter.ops.shuffle.shuffle_weight_a16w4",
    "shuffle_scale_a16w4": "aiter.ops.shuffle.shuffle_scale_a16w4",
}

MORI_SYMBOLS: dict[str, str] = {
    "shmem.shmem_torch_process_group_init": "MoRI symmetric heap init",
}

TORCH_SYMBOLS: dict[str, str] = {
    "distributed._symmetric_memory": "torch symmetric memory (DeepGEMM mega needs torch >= 2.9)",
}

#: Where each provider of a logical library is imported from, in the order engines prefer.
#: vLLM prefers a site-packages ``deep_gemm`` over its vendored copy (https://github.com/vllm-project/vllm/blob/v0.33.0/vllm/utils/deep_gemm.py).
PROVIDERS: dict[str, tuple[str, ...]] = {
    "deep_gemm": ("deep_gemm", "vllm.third_party.deep_gemm"),
    "aiter": ("aiter",),
    "mori": ("mori",),
    "flydsl": ("flydsl",),
    "torch": ("torch",),
    "vllm": ("vllm",),
    "sglang": ("sglang",),
    "flashinfer": ("flashinfer",),
}

SYMBOLS: dict[str, dict[str, str]] = {
    "deep_gemm": DEEP_GEMM_SYMBOLS,
    "aiter": AITER_SYMBOLS,
    "mori": MORI_SYMBOLS,
    "torch": TORCH_SYMBOLS,
}


def core_libraries() -> dict[str, LibrarySpec]:
    """This catalogue as declarations, in the probe's order."""
    return {
        name: LibrarySpec(
            name=name,
            providers=paths,
            symbols=SYMBOLS.get(name, {}),
            symbol_paths=SYMBOL_PATHS.get(name, {}),
        )
        for name, paths in PROVIDERS.items()
    }


def merge_libraries(a: LibrarySpec, b: LibrarySpec) -> LibrarySpec:
    """One declaration of a library two packages describe: providers, symbols and profile entries united.

    Raises ValueError when they place the same entry point at different attribute paths.
    """
    clash = sorted(s for s in set(a.symbol_paths) & set(b.symbol_paths) if a.symbol_paths[s] != b.symbol_paths[s])
    if clash:
        raise ValueError(f"library {a.name!r}: entry point {clash[0]} is declared at two attribute paths")
    profiles = dict(a.profiles)
    for name, entry in b.profiles.items():
        profiles[name] = merge_builds(profiles[name], entry) if name in profiles else entry
    return LibrarySpec(
        name=a.name,
        providers=tuple(dict.fromkeys(a.import_paths + b.import_paths)),
        symbols={**b.symbols, **a.symbols},
        symbol_paths={**a.symbol_paths, **b.symbol_paths},
        profiles=profiles,
        dist=a.dist or b.dist,
    )


def merge_builds(a: LibraryBuild, b: LibraryBuild) -> LibraryBuild:
    """``a`` with ``b``'s entry points added (a described build that a second package extends)."""
    return a.model_copy(update={"symbols": a.symbols | b.symbols})


class LibraryConflictError(OracleError):
    """Two backend packages place one entry point of a library at different attribute paths."""


#: The entry-point group backend packages register in (read here by string, for their libraries).
BACKENDS_GROUP = "moe_oracle.backends"


def distribution_of(ep: EntryPoint) -> str:
    """The name of the distribution that installed ``ep`` (its top module when unknown)."""
    dist = getattr(ep, "dist", None)
    name = dist.metadata["Name"] if dist is not None else None
    return name or ep.value.split(":", 1)[0].split(".")[0]


@functools.lru_cache(maxsize=1)
def _backend_packages() -> tuple[tuple[EntryPoint, object], ...]:
    """Each ``moe_oracle.backends`` entry point with what it returns, in name order; one that fails to load is
    left out (a broken plug-in must not take the probe down; the registry reports it)."""
    loaded = []
    for ep in sorted(entry_points(group=BACKENDS_GROUP), key=lambda e: e.name):
        try:
            loaded.append((ep, ep.load()()))
        except Exception:
            continue
    return tuple(loaded)


@functools.lru_cache(maxsize=1)
def known_libraries() -> dict[str, LibrarySpec]:
    """This catalogue plus the libraries the ``moe_oracle.backends`` entry points declare (core first).

    An entry point's result declares libraries through its ``libraries`` attribute (a
    ``moe_oracle.registry.BackendPackage``); one that fails to load is skipped here (the registry
    reports it). Raises :class:`LibraryConflictError` naming both distributions on a conflict.
    """
    libraries = core_libraries()
    origin = dict.fromkeys(libraries, "moe-oracle (moe_oracle.software.catalog)")
    for ep, package in _backend_packages():
        here = f"{distribution_of(ep)} ({ep.name} = {ep.value})"
        for lib in getattr(package, "libraries", ()):
            if not isinstance(lib, LibrarySpec):
                continue
            if lib.name not in libraries:
                libraries[lib.name], origin[lib.name] = lib, here
                continue
            try:
                libraries[lib.name] = merge_libraries(libraries[lib.name], lib)
            except ValueError as exc:
                raise LibraryConflictError(
                    f"{exc}: by {origin[lib.name]} and by {here}",
                    fix="make both packages declare the same attribute path for it.",
                ) from None
    return libraries


@functools.lru_cache(maxsize=1)
def known_builds() -> dict[str, BuildSpec]:
    """Every named library build the registered backends' entry-point checks declare, by name, in declaration
    order (``checks.entry_points(..., builds=...)``); a plug-in that fails to load is skipped (the registry
    reports it). Raises :class:`LibraryConflictError` when two declarations share a name."""
    found: dict[str, BuildSpec] = {}
    for ep, package in _backend_packages():
        variants = getattr(package, "variants", package)
        for build in builds_named_by(variants if isinstance(variants, Iterable) else ()):
            if found.setdefault(build.name, build) != build:
                raise LibraryConflictError(
                    f"two different builds are declared as {build.name!r} (the second by "
                    f"{distribution_of(ep)} ({ep.name} = {ep.value}))",
                    fix="give each build declaration its own name.",
                )
    return found
