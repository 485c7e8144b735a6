"""Checks and set-up shared by the real-kernel backends (imported lazily; never at ``import moe_oracle``).

Everything that can be missing (the vendor package, an entry point, a GPU, the right architecture,
a process group) is turned into one :class:`BackendUnavailableError` line naming what is missing
and the fix; nothing here launches a kernel.
"""

from __future__ import annotations

import importlib
import os
import socket
from typing import Any

from moe_oracle.runtime.errors import BackendUnavailableError


def require_module(name: str, *, key: str, fix: str) -> Any:
    """``importlib.import_module(name)`` or a one-line :class:`BackendUnavailableError`."""
    try:
        return importlib.import_module(name)
    except Exception as exc:  # ImportError, or a broken build failing at import
        reason = " ".join(f"{type(exc).__name__}: {exc}".split())
        raise BackendUnavailableError(
            f"{key} needs the Python package '{name}', which does not import ({reason}).", fix=fix
        ) from None


def require_attrs(
    module: Any, *, key: str, all_of: tuple[str, ...] = (), any_of: tuple[str, ...] = (), fix: str
) -> None:
    """Every name of ``all_of`` and one of ``any_of`` must resolve on ``module`` (dotted names allowed)."""

    def has(path: str) -> bool:
        obj = module
        for part in path.split("."):
            if not hasattr(obj, part):
                return False
            obj = getattr(obj, part)
        return True

    missing = [n for n in all_of if not has(n)]
    if any_of and not any(has(n) for n in any_of):
        missing.append(" or ".join(any_of))
    if missing:
        name = getattr(module, "__name__", str(module))
        version = getattr(module, "__version__", "unknown version")
        raise BackendUnavailableError(
            f"{key}: {name} ({version}) lacks the entry point(s) {', '.join(missing)}.", fix=fix
        )


def require_cuda_arch(*, key: str, majors: tuple[int, ...], device: str = "cuda", fix: str) -> Any:
    """A CUDA device of compute capability major in ``majors``; returns the torch device."""
    import torch

    if not torch.cuda.is_available() or getattr(torch.version, "hip", None):
        raise BackendUnavailableError(
            f"{key} needs an NVIDIA GPU (SM{'/'.join(f'{m}x' for m in majors)}); torch sees none.", fix=fix
        )
    dev = torch.device(device)
    if dev.type != "cuda":
        raise BackendUnavailableError(
            f"{key} runs on a CUDA device, not {device!r}.", fix="pass LayerConfig(device='cuda')."
        )
    if dev.index is None:  # "cuda" means the current device
        dev = torch.device("cuda", torch.cuda.current_device())
    major, minor = torch.cuda.get_device_capability(dev)
    if major not in majors:
        raise BackendUnavailableError(
            f"{key} needs compute capability {'/'.join(f'{m}.x' for m in majors)}; this GPU is {major}.{minor} "
            f"({torch.cuda.get_device_name(dev)}).",
            fix=fix,
        )
    return dev


def require_rocm_arch(*, key: str, prefix: str = "gfx95", device: str = "cuda", fix: str) -> Any:
    """A ROCm device whose ``gcnArchName`` starts with ``prefix``."""
    import torch

    if not torch.cuda.is_available() or not getattr(torch.version, "hip", None):
        raise BackendUnavailableError(f"{key} needs an AMD GPU ({prefix}x, ROCm torch); torch sees none.", fix=fix)
    dev = torch.device(device)
    if dev.index is None:
        dev = torch.device("cuda", torch.cuda.current_device())
    arch = str(getattr(torch.cuda.get_device_properties(dev), "gcnArchName", "unknown"))
    if not arch.startswith(prefix):
        raise BackendUnavailableError(f"{key} needs a {prefix}x GPU (MI355X); this GPU is {arch}.", fix=fix)
    return dev


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def ensure_process_group(config: Any, *, backend: str, key: str) -> Any:
    """The EP process group: ``config.ep_group``, or a 1-rank loopback group when ``ep_size == 1``.

    With ``ep_size == 1`` and no group, torch.distributed is initialized on 127.0.0.1 with one rank
    (h200.md: the symmetric-memory rendezvous works with one rank) and ``WORLD`` is returned.
    """
    import torch.distributed as dist

    if config.ep_group is not None:
        size = config.ep_group.size()
        if size != config.ep_size:
            raise BackendUnavailableError(
                f"{key}: ep_group has {size} ranks but LayerConfig.ep_size is {config.ep_size}.",
                fix="pass the expert-parallel group whose size is ep_size.",
            )
        return config.ep_group
    if config.ep_size != 1:
        raise BackendUnavailableError(
            f"{key}: ep_size={config.ep_size} needs LayerConfig.ep_group (the expert-parallel process group).",
            fix="initialize torch.distributed in every rank and pass the EP group.",
        )
    if not dist.is_available():
        raise BackendUnavailableError(
            f"{key}: torch.distributed is not available in this torch build.", fix="install a CUDA/ROCm torch."
        )
    if not dist.is_initialized():
        os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
        os.environ.setdefault("MASTER_PORT", str(_free_port()))
        dist.init_process_group(backend=backend, rank=0, world_size=1)
    if dist.get_world_size() != 1:
        raise BackendUnavailableError(
            f"{key}: torch.distributed has {dist.get_world_size()} ranks but ep_size=1 and no ep_group was given.",
            fix="pass LayerConfig(ep_group=..., ep_size=...) for expert parallelism.",
        )
    return dist.group.WORLD
