"""What ``moe-oracle probe`` reports about this machine (GPUs, domain, libraries, environment).

Everything is read without launching a kernel: NVML / torch device properties / amdsmi for
GPUs, import and attribute checks for libraries, ``os.environ`` for variables.
"""

from __future__ import annotations

import os
from typing import Any

from moe_oracle.hardware import LocalHardware, detect_local, device_spec_for
from moe_oracle.software.probe import probe_installed
from moe_oracle.software.types import LibraryBuild

#: Variables that change what a mega-MoE backend does, grouped by who reads them.
ENV_VARS: dict[str, tuple[str, ...]] = {
    "MoRI / AITER": (
        "MORI_SHMEM_HEAP_SIZE",
        "MORI_SHMEM_MODE",
        "VLLM_ROCM_USE_AITER",
        "VLLM_ROCM_USE_AITER_MOE",
        "VLLM_ROCM_USE_AITER_FUSION_SHARED_EXPERTS",
        "AITER_MEGA_FIXED_SLOT_MAX_MTPR",
    ),
    "DeepGEMM JIT": (
        "DG_JIT_CACHE_DIR",
        "DG_JIT_USE_NVRTC",
        "DG_JIT_NVCC_COMPILER",
        "DG_PRINT_CONFIGS",
        "DG_USE_FP4_ACTS",
        "DG_USE_FP8_COMBINE",
    ),
    "vLLM": (
        "VLLM_USE_DEEP_GEMM",
        "VLLM_MOE_USE_DEEP_GEMM",
        "VLLM_MOE_SKIP_PADDING",
        "VLLM_DISABLE_DSV4_MEGAMOE_SHARED_EXPERT_FUSION",
        "VLLM_PLUGINS",
        "MOE_ORACLE_VLLM_PLUGIN",
    ),
    "SGLang": (
        "SGLANG_OPT_USE_DEEPGEMM_MEGA_MOE",
        "SGLANG_OPT_DEEPGEMM_MEGA_MOE_NUM_MAX_TOKENS_PER_RANK",
        "SGLANG_AMD_USE_FLYDSL_MEGA_MOE",
        "SGLANG_DSV4_FP4_EXPERTS",
    ),
    "NCCL / symmetric memory": ("NCCL_NVLS_ENABLE", "TORCH_SYMM_MEM_DISABLE_MULTICAST", "NVSHMEM_DISABLE_NVLS"),
}


def _build_of(lib: LibraryBuild) -> dict[str, str] | None:
    """The declared build (``moe-oracle list builds``) the probed ``lib`` is recognised as, or None."""
    from moe_oracle.rules.build import builds_present
    from moe_oracle.software.catalog import known_builds

    found = builds_present(lib, known_builds().values()) if lib.present else []
    if not found:
        return None
    b = found[0]
    return {"name": b.name, "title": b.title, "provenance": b.provenance.value, "caveat": b.provenance.caveat}


def _domain_text(hw: LocalHardware) -> str:
    n = len(hw.gpus)
    if n == 0:
        return "no GPU: no NVLink/XGMI domain"
    d = hw.domain_size
    if hw.peer_access is None:
        return f"{n} GPU(s); peer access unknown (source {hw.source}): assume domain 1 (no EP across GPUs)"
    if d == n:
        return f"all {n} GPU(s) reach each other directly: EP up to {n} stays inside one domain"
    return f"largest peer-connected set is {d} of {n} GPUs: keep each EP group within {d} GPUs"


def probe_machine() -> dict[str, Any]:
    hw = detect_local()
    software = probe_installed()
    device = device_spec_for(hw.gpus[0], len(hw.gpus), hw.domain_size) if hw.gpus else None
    return {
        "gpus": [
            {
                "index": g.index,
                "name": g.name,
                "arch": g.arch.value if g.arch else None,
                "arch_label": g.arch_label,
                "memory_gib": round(g.memory_gib, 1),
                "sm_count": g.sm_count,
            }
            for g in hw.gpus
        ],
        "gpu_source": hw.source,
        "gpu_notes": list(hw.notes),
        "peer_access": [list(row) for row in hw.peer_access] if hw.peer_access else None,
        "domain_size": hw.domain_size,
        "domain": _domain_text(hw),
        "device": device.name if device else None,
        "libraries": {
            name: {
                "present": lib.present,
                "dist": lib.dist,
                "version": lib.version,
                "import_path": lib.import_path,
                "entry_points": sorted(lib.symbols),
                "build": _build_of(lib),
                "error": lib.error,
            }
            for name, lib in software.libraries.items()
        },
        "environment": {group: {k: os.environ.get(k) for k in keys} for group, keys in ENV_VARS.items()},
        "software_profile": software.model_dump(mode="json"),
    }
