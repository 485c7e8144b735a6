"""Checks and set-up shared by the real-kernel backends (imported lazily; never at ``import moe_oracle``).

Everything that can be missing (the vendor package, an entry point, a GPU, the right architecture,
a process group) is turned into one :class:`BackendUnavailableError` line naming what is missing
and the fix; nothing here launches a kernel.
"""

from __future__ import annotations

import importlib
import os
import socket
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from moe_oracle.runtime.errors import BackendUnavailableError

if TYPE_CHECKING:
    from torch.distributed import ProcessGroup

    from moe_oracle.rules import LayerScenario, VariantSpec
    from moe_oracle.rules.build import BuildSpec
    from moe_oracle.runtime.interface import LayerConfig

#: CUDA compute-capability major of each NVIDIA architecture the declarations name.
_CUDA_MAJOR = {"sm90": 9, "sm100": 10, "sm103": 10, "sm120": 12}


@dataclass(frozen=True)
class DeclaredEntryPoints:
    """What a variant's entry-point check says one library must export, and what provides it."""

    library: str
    all_of: tuple[str, ...] = ()
    any_of: tuple[str, ...] = ()
    provided_by: str = ""
    builds: tuple[BuildSpec, ...] = ()  # the builds that provide them (most specific first)


def declared_entry_points(spec: VariantSpec, library: str) -> DeclaredEntryPoints:
    """The entry points ``spec`` declares for ``library`` (all of its entry-point checks merged)."""
    all_of: list[str] = []
    any_of: list[str] = []
    builds: list[BuildSpec] = []
    provided_by = ""
    for check in spec.checks:
        if check.data.get("library") != library:
            continue
        all_of += [n for n in check.data.get("all_of", ()) if n not in all_of]
        any_of += [n for n in check.data.get("any_of", ()) if n not in any_of]
        builds += [b for b in check.data.get("builds", ()) if b not in builds]
        provided_by = provided_by or check.data.get("provided_by", "")
    if not provided_by:
        raise BackendUnavailableError(
            f"{spec.key} declares no entry-point check for the library '{library}' its runtime imports.",
            fix=f"add checks.entry_points('{library}', ...) to the declaration of {spec.key}.",
        )
    return DeclaredEntryPoints(library, tuple(all_of), tuple(any_of), provided_by, tuple(builds))


def require_build_limits(declared: DeclaredEntryPoints, scenario: LayerScenario, *, key: str) -> str | None:
    """Recognise the installed build of ``declared.library`` among ``declared.builds`` and raise
    :class:`~moe_oracle.runtime.errors.LayerInputError` when ``scenario`` (a ``LayerScenario``) breaks one of
    its limits for the entry points this layer calls, before anything is allocated. Returns the build's name
    (None when no declared build is recognised: the entry points alone were checked)."""
    from moe_oracle.rules.build import builds_present, limits_finding
    from moe_oracle.runtime.errors import LayerInputError
    from moe_oracle.software.probe import probe_library

    if not declared.builds:
        return None
    present = builds_present(probe_library(declared.library), declared.builds)
    finding = limits_finding(present, declared.all_of, scenario)
    if finding is not None:  # limits_finding carries the broken limit's code and remediation
        raise LayerInputError(
            f"{key}: the installed {declared.library} is {finding.message} ({finding.code.value})",  # type: ignore[union-attr]
            fix=finding.remediation or "",
        )
    return present[0].name if present else None


def declared_arch_majors(spec: VariantSpec) -> tuple[int, ...]:
    """CUDA capability majors of the architectures ``spec``'s arch check allows, in declaration order."""
    majors: list[int] = []
    for check in spec.checks:
        for arch in check.data.get("archs", ()):
            major = _CUDA_MAJOR.get(getattr(arch, "value", arch))
            if major is not None and major not in majors:
                majors.append(major)
    return tuple(majors)


def require_env_off(spec: VariantSpec, *, key: str) -> None:
    """Every environment variable ``spec`` declares must be off (unset or ``0``) in this process."""
    for check in spec.checks:
        for name in check.data.get("env_off", ()):
            if os.environ.get(name, "0") not in ("", "0"):
                raise BackendUnavailableError(
                    f"{key}: the kernel asserts {name}=0 (it is {os.environ[name]!r}).", fix=f"unset {name}."
                )


def resolve_attr(module: object, path: str) -> Any:
    """``module.a.b`` for ``path = "a.b"`` (AttributeError when a part is missing)."""
    obj = module
    for part in path.split("."):
        obj = getattr(obj, part)
    return obj


def has_attr(module: object, path: str) -> bool:
    try:
        resolve_attr(module, path)
        return True
    except AttributeError:
        return False


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
    module: object, *, key: str, all_of: tuple[str, ...] = (), any_of: tuple[str, ...] = (), fix: str
) -> None:
    """Every name of ``all_of`` and one of ``any_of`` must resolve on ``module`` (dotted names allowed)."""

    missing = [n for n in all_of if not has_attr(module, n)]
    if any_of and not any(has_attr(module, n) for n in any_of):
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


def ensure_process_group(config: LayerConfig, *, backend: str, key: str) -> ProcessGroup:
    """The EP process group: ``config.ep_group``, or a 1-rank loopback group when ``ep_size == 1``.

    With ``ep_size == 1`` and no group, torch.distributed is initialized on 127.0.0.1 with one rank
    (docs/performance.md: the symmetric-memory rendezvous works with one rank) and ``WORLD`` is returned.
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
    world = dist.group.WORLD
    if world is None:  # init_process_group above creates it
        raise BackendUnavailableError(f"{key}: torch.distributed has no default group.", fix="initialize it.")
    return world
