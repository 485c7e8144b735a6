"""This machine's accelerators, read without launching a kernel.

Sources in order: NVML (nvidia-ml-py), amdsmi, torch (CUDA or ROCm build). Each is optional
and imported lazily; whatever is missing is reported, not raised.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field

from moe_oracle.spec.device import DEVICES, Arch, DeviceSpec


@dataclass(frozen=True)
class LocalGPU:
    index: int
    name: str
    arch: Arch | None
    arch_label: str
    memory_gib: float
    sm_count: int | None = None


@dataclass(frozen=True)
class LocalHardware:
    gpus: tuple[LocalGPU, ...]
    source: str
    peer_access: tuple[tuple[bool, ...], ...] | None = None
    notes: tuple[str, ...] = field(default=())

    @property
    def domain_size(self) -> int:
        """GPUs in the largest set that can all reach each other (peer access), else 1 per GPU."""
        if not self.gpus:
            return 0
        if self.peer_access is None:
            return 1
        n = len(self.gpus)
        full = all(self.peer_access[i][j] for i in range(n) for j in range(n) if i != j)
        if full:
            return n
        best = 1
        for i in range(n):
            best = max(best, 1 + sum(1 for j in range(n) if j != i and self.peer_access[i][j]))
        return best


def _catalog_name(name: str) -> str | None:
    low = name.lower().replace(" ", "")
    for key in sorted(DEVICES, key=len, reverse=True):
        if key.replace("-", "") in low:
            return key
    return None


def device_spec_for(gpu: LocalGPU, count: int, domain: int) -> DeviceSpec | None:
    """A DeviceSpec for a detected GPU: the catalogue entry when known, else one built from it."""
    if gpu.arch is None:
        return None
    key = _catalog_name(gpu.name)
    base = DEVICES.get(key) if key else None
    if base is not None and base.arch is gpu.arch:
        return base.model_copy(update={"gpus_per_node": count, "domain_size": max(domain, 1)})
    return DeviceSpec(
        name=key or gpu.name.lower().replace(" ", "-")[:40] or "local",
        arch=gpu.arch,
        memory_gib=max(gpu.memory_gib, 0.001),
        sm_count=gpu.sm_count,
        gpus_per_node=count,
        domain_size=max(domain, 1),
    )


def _from_torch(notes: list[str]) -> LocalHardware | None:
    try:
        import torch
    except Exception as exc:
        notes.append(f"torch not importable ({type(exc).__name__})")
        return None
    try:
        if not torch.cuda.is_available():
            notes.append(f"torch {torch.__version__} sees no GPU")
            return None
        gpus = []
        n = torch.cuda.device_count()
        for i in range(n):
            p = torch.cuda.get_device_properties(i)
            if getattr(torch.version, "hip", None):
                label = getattr(p, "gcnArchName", "") or "gfx?"
                arch = Arch.from_gcn_arch(label)
            else:
                label = f"sm{p.major}{p.minor}"
                arch = Arch.from_capability(p.major, p.minor)
            gpus.append(
                LocalGPU(i, p.name, arch, label, p.total_memory / 2**30, getattr(p, "multi_processor_count", None))
            )
        peer = tuple(tuple(i == j or bool(torch.cuda.can_device_access_peer(i, j)) for j in range(n)) for i in range(n))
        return LocalHardware(tuple(gpus), f"torch {torch.__version__}", peer, tuple(notes))
    except Exception as exc:
        notes.append(f"torch device query failed: {type(exc).__name__}: {exc}")
        return None


def _from_nvml(notes: list[str]) -> LocalHardware | None:
    try:
        import pynvml
    except Exception:
        notes.append("nvidia-ml-py not installed")
        return None
    try:
        pynvml.nvmlInit()
    except Exception as exc:
        notes.append(f"NVML unavailable ({type(exc).__name__})")
        return None
    try:
        n = pynvml.nvmlDeviceGetCount()
        gpus = []
        handles = []
        for i in range(n):
            h = pynvml.nvmlDeviceGetHandleByIndex(i)
            handles.append(h)
            name = pynvml.nvmlDeviceGetName(h)
            name = name.decode() if isinstance(name, bytes) else name
            major, minor = pynvml.nvmlDeviceGetCudaComputeCapability(h)
            mem = pynvml.nvmlDeviceGetMemoryInfo(h).total / 2**30
            gpus.append(LocalGPU(i, name, Arch.from_capability(major, minor), f"sm{major}{minor}", mem))
        peer = []
        for i in range(n):
            row = []
            for j in range(n):
                if i == j:
                    row.append(True)
                    continue
                try:
                    status = pynvml.nvmlDeviceGetP2PStatus(handles[i], handles[j], pynvml.NVML_P2P_CAPS_INDEX_NVLINK)
                    row.append(status == pynvml.NVML_P2P_STATUS_OK)
                except Exception:
                    row.append(False)
            peer.append(tuple(row))
        return LocalHardware(tuple(gpus), "nvml", tuple(peer), tuple(notes))
    finally:
        with contextlib.suppress(Exception):
            pynvml.nvmlShutdown()


def _from_amdsmi(notes: list[str]) -> LocalHardware | None:
    """AMD GPUs through amdsmi: ASIC info (``target_graphics_version`` such as gfx950), VRAM, XGMI links."""
    try:
        import amdsmi
    except Exception:
        notes.append("amdsmi not installed")
        return None
    try:
        amdsmi.amdsmi_init()
    except Exception as exc:
        notes.append(f"amdsmi unavailable ({type(exc).__name__})")
        return None
    try:
        handles = list(amdsmi.amdsmi_get_processor_handles())
        gpus = []
        for i, h in enumerate(handles):
            asic = amdsmi.amdsmi_get_gpu_asic_info(h)
            label = str(asic.get("target_graphics_version") or "gfx?")
            try:
                mem = float(amdsmi.amdsmi_get_gpu_vram_info(h)["vram_size"]) / 1024  # MiB -> GiB
            except Exception:
                mem = 0.0
            gpus.append(LocalGPU(i, str(asic.get("market_name", "AMD GPU")), Arch.from_gcn_arch(label), label, mem))
        xgmi = getattr(getattr(amdsmi, "AmdSmiIoLinkType", None), "XGMI", None)
        peer = []
        for a in handles:
            row = []
            for b in handles:
                if a is b:
                    row.append(True)
                    continue
                try:
                    row.append(amdsmi.amdsmi_topo_get_link_type(a, b).get("type") == xgmi)
                except Exception:
                    row.append(False)
            peer.append(tuple(row))
        return LocalHardware(tuple(gpus), "amdsmi", tuple(peer), tuple(notes))
    except Exception as exc:
        notes.append(f"amdsmi query failed: {type(exc).__name__}: {exc}")
        return None
    finally:
        with contextlib.suppress(Exception):
            amdsmi.amdsmi_shut_down()


def detect_local() -> LocalHardware:
    """Detected GPUs (possibly none) and notes on every source tried."""
    notes: list[str] = []
    for source in (_from_nvml, _from_amdsmi, _from_torch):
        found = source(notes)
        if found is not None and found.gpus:
            return found
    return LocalHardware((), "none", None, tuple(notes))
