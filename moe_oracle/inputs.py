"""Build typed decision inputs from command-line values, with one-line errors.

Shared by every planning command (``select``, ``matrix``, ``plan``) and the engine plug-ins,
so flags mean the same everywhere.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from moe_oracle.errors import BadInputError, DeploymentError, excerpt
from moe_oracle.releases import RELEASES
from moe_oracle.releases.profiles import named_profile, profile_names
from moe_oracle.software.types import SoftwareProfile
from moe_oracle.spec.deployment import (
    SPECULATIVE_CHOICES,
    Deployment,
    LayoutError,
    Parallelism,
    Speculative,
    Topology,
)
from moe_oracle.spec.device import DEVICES, DeviceSpec
from moe_oracle.spec.units import format_size, parse_size
from moe_oracle.validation import one_line

LOCAL = "local"
#: Environment variables a decision reads when the caller passes them through.
RELEVANT_ENV = (
    "MORI_SHMEM_HEAP_SIZE",
    "VLLM_ROCM_USE_AITER",
    "VLLM_ROCM_USE_AITER_MOE",
    "DG_USE_FP4_ACTS",
    "DG_USE_FP8_COMBINE",
)


@dataclass(frozen=True)
class DeploymentFlags:
    """Raw deployment flags; None means "the device's default"."""

    device: str
    gpus_per_node: int | None = None
    nodes: int = 1
    domain_size: int | None = None
    tp: int = 1
    dp: int = 1
    ep: int = 1
    pp: int = 1
    max_num_batched_tokens: int = 8192
    all2all_backend: str | None = None
    eplb: bool = False
    speculative: str = "none"


def resolve_device(name: str) -> tuple[DeviceSpec, str]:
    """The DeviceSpec for a catalogue name or ``local``, and where it came from."""
    key = name.strip().lower()
    if key == LOCAL:
        from moe_oracle.hardware import detect_local, device_spec_for

        hw = detect_local()
        if not hw.gpus:
            raise DeploymentError(
                f"--device local found no GPU on this machine ({'; '.join(hw.notes) or 'no source'})",
                fix=f"name the device instead: --device {{{', '.join(DEVICES)}}}.",
            )
        spec = device_spec_for(hw.gpus[0], len(hw.gpus), hw.domain_size)
        if spec is None:
            raise DeploymentError(
                f"--device local found {hw.gpus[0].name} ({hw.gpus[0].arch_label}), an architecture no backend models",
                fix=f"name a known device: --device {{{', '.join(DEVICES)}}}.",
            )
        return spec, f"local ({hw.source}: {len(hw.gpus)} x {hw.gpus[0].name})"
    spec = DEVICES.get(key)
    if spec is None:
        raise DeploymentError(
            f"--device {name!r} is not a known device",
            fix=f"use one of: {', '.join(DEVICES)}, or local.",
        )
    return spec, "catalogue"


#: Deployment field -> the flag that sets it (for range errors).
_FLAG_OF = {
    "gpus_per_node": "--gpus-per-node",
    "nodes": "--nodes",
    "domain_size": "--domain-size",
    "tp": "--tp",
    "dp": "--dp",
    "ep": "--ep",
    "pp": "--pp",
    "max_num_batched_tokens": "--max-num-batched-tokens",
    "all2all_backend": "--all2all-backend",
}


def _deployment_error(exc: ValidationError) -> DeploymentError:
    """A pydantic error on the deployment, told in flags: ``--tp 100000: ...`` with the range as the fix."""
    first = exc.errors(include_url=False)[0]
    cause = (first.get("ctx") or {}).get("error")
    if isinstance(cause, LayoutError):
        return DeploymentError(cause.message, fix=cause.fix, fixes=cause.fixes)
    field = str(first.get("loc", ("",))[-1]) if first.get("loc") else ""
    flag = _FLAG_OF.get(field)
    ctx = first.get("ctx") or {}
    if flag is None or "input" not in first:
        return DeploymentError(one_line(exc, "invalid deployment"))
    msg = first.get("msg", "invalid").removeprefix("Value error, ")
    hi = ctx.get("le")
    if hi is not None:
        fix = f"use {flag} in 1..{hi}"
    elif ctx.get("gt") is not None:
        fix = f"use {flag} greater than {ctx['gt']}"
    else:
        fix = f"correct {flag}"
    return DeploymentError(f"{flag} {first['input']!r}: {msg.lower()}", fix=fix)


def _check_domain(flags: DeploymentFlags, device: DeviceSpec, origin: str) -> None:
    """An explicit ``--domain-size`` larger than the device's real NVLink/XGMI domain is refused."""
    check_domain_size(flags.domain_size, device, origin)


def check_domain_size(wanted: int | None, device: DeviceSpec, origin: str = "catalogue") -> None:
    """``--domain-size`` (or a record's domain) larger than ``device``'s real NVLink/XGMI domain: exit 2."""
    if wanted is None or wanted <= device.domain_size:
        return
    bigger = [name for name, d in DEVICES.items() if d.domain_size >= wanted]
    where = "this machine" if origin != "catalogue" else f"a {device.name} system"
    raise DeploymentError(
        f"--domain-size {wanted} is larger than the NVLink/XGMI domain of {where} ({device.domain_size} GPUs): "
        "GPUs outside one domain cannot reach each other's memory, whatever the flag says",
        fix=f"drop --domain-size (default {device.domain_size})"
        + (f", or name a device with a domain that large: --device {' / '.join(bigger)}" if bigger else ""),
    )


def check_heap_size(env: dict[str, str], device: DeviceSpec) -> None:
    """``MORI_SHMEM_HEAP_SIZE`` must be a size (``8G``, ``4294967296``) that one GPU can hold: ``banana`` is not
    "below 8G", and ``99999999999999999999T`` is not a heap."""
    value = env.get("MORI_SHMEM_HEAP_SIZE")
    if value is None:
        return
    size = parse_size(value)
    if size is None:
        raise BadInputError(
            f"MORI_SHMEM_HEAP_SIZE={excerpt(value)} is not a size",
            fix="write it as MoRI reads it: a number with an optional K/M/G/T unit (8G, 16G, 4294967296), or unset it",
        )
    memory = int(device.memory_gib * 1024**3)
    if size > memory:
        raise BadInputError(
            f"MORI_SHMEM_HEAP_SIZE={excerpt(value)} ({format_size(size)}) is more than one {device.name} GPU's "
            f"memory ({format_size(memory)})",
            fix="set it to what the plan computes (moe-oracle plan ... prints it), or unset it",
        )


def build_deployment(flags: DeploymentFlags, env: dict[str, str] | None = None) -> tuple[Deployment, str]:
    device, origin = resolve_device(flags.device)
    _check_domain(flags, device, origin)
    check_heap_size(env or {}, device)
    gpn = flags.gpus_per_node or device.gpus_per_node
    domain = flags.domain_size or device.domain_size
    if flags.domain_size is None and device.domain_size == device.gpus_per_node and flags.gpus_per_node:
        # an HGX-style box: the NVLink domain is the node, but never larger than the device's own domain
        # (--gpus-per-node 16 on b200 is two 8-GPU domains, as --domain-size 16 is refused)
        domain = min(gpn, device.domain_size)
    try:
        deployment = Deployment(
            device=device,
            topology=Topology(gpus_per_node=gpn, nodes=flags.nodes, domain_size=domain),
            parallel=Parallelism(
                tp=flags.tp,
                dp=flags.dp,
                ep=flags.ep,
                pp=flags.pp,
                max_num_batched_tokens=flags.max_num_batched_tokens,
                all2all_backend=flags.all2all_backend,
                eplb=flags.eplb,
            ),
            env=dict(env or {}),
            speculative=_speculative(flags.speculative),
        )
    except ValidationError as exc:
        raise _deployment_error(exc) from None
    return deployment, origin


def _speculative(text: str) -> Speculative:
    value = text.strip().lower()
    for choice in SPECULATIVE_CHOICES:
        if value == choice:
            return choice
    raise DeploymentError(
        f"--speculative {excerpt(text)} is not one of {', '.join(SPECULATIVE_CHOICES)}",
        fix="use --speculative mtp (build the model's MTP layers for speculative decoding) or --speculative none "
        "(the engines' default)",
    )


def deployment_warnings(deployment: Deployment) -> list[str]:
    """One line for each legal but probably unintended layout: whole nodes left idle, a TP group that does
    not divide a node. (One node partly used is the ordinary single-rank default and is not warned.)"""
    par, topo = deployment.parallel, deployment.topology
    out = []
    if topo.gpus_per_node > topo.domain_size and topo.gpus_per_node > deployment.device.gpus_per_node:
        out.append(
            f"--gpus-per-node {topo.gpus_per_node} is more than one {deployment.device.name} NVLink/XGMI domain "
            f"({topo.domain_size} GPUs): each node is taken as {-(-topo.gpus_per_node // topo.domain_size)} "
            "domains (an expert-parallel group larger than one is judged as crossing domains)"
        )
    used, world = deployment.ranks_used, topo.world_size
    if par.tp > 1 and topo.gpus_per_node % par.tp and par.tp < world:
        out.append(
            f"--tp {par.tp} does not divide the {topo.gpus_per_node} GPUs of a node: tensor-parallel groups "
            f"straddle nodes or leave GPUs idle ({world - used} of {world} idle here; use a --tp that divides "
            f"{topo.gpus_per_node})"
        )
    elif used <= world - topo.gpus_per_node:  # a whole node (or more) would run nothing
        fill = f"--dp {world // (par.tp * par.pp)}" + (f" --ep {world // par.pp}" if par.ep > 1 else "")
        out.append(
            f"tp*dp*pp = {par.tp}*{par.dp}*{par.pp} = {used} ranks on {topo.nodes} nodes x {topo.gpus_per_node} "
            f"GPUs: {world - used} of {world} GPUs stay idle (to use them all: {fill}; "
            f"or --nodes {-(-used // topo.gpus_per_node)})"
        )
    return out


def check_engine_software(engine: str | None, software: str | None) -> None:
    """``--software ENGINE-VERSION`` must name the ``--engine`` in use (``--engine vllm --software sglang-0.5.23``
    would judge vLLM's gates against SGLang's libraries)."""
    if not engine or engine == "none" or not software:
        return
    for other in ("vllm", "sglang"):
        if other != engine and software.strip().lower().startswith(other + "-"):
            raise BadInputError(
                f"--engine {engine} contradicts --software {software} (a profile of the {other} release)",
                fix=f"use --software {engine}-<version> (moe-oracle list profiles), or --engine {other}",
            )


#: The engine release a question about an engine is judged against by default (a named software profile).
ENGINE_RELEASE_PROFILE = {engine.value: release.plugin_profile for engine, release in RELEASES.items()}


def resolve_engine_software(name: str | None, device: str, engine: str) -> tuple[SoftwareProfile, str]:
    """The software profile for every command alike: given, else ``installed`` for a local device, else the
    engine's release profile (``--engine vllm``/``sglang``), else ``all`` (every known kernel build)."""
    if name is None and device.strip().lower() != LOCAL and engine in ENGINE_RELEASE_PROFILE:
        profile, _ = resolve_software(ENGINE_RELEASE_PROFILE[engine], device)
        return profile, f"default for --engine {engine}"
    return resolve_software(name, device)


def resolve_software(name: str | None, device: str) -> tuple[SoftwareProfile, str]:
    """The software profile, defaulting to ``installed`` for a local device and ``all`` otherwise."""
    is_local = device.strip().lower() == LOCAL
    chosen = name or ("installed" if is_local else "all")
    origin = "requested" if name else f"default for --device {device}"
    if chosen == "installed":
        from moe_oracle.software.probe import probe_installed

        return probe_installed(), origin
    profile = named_profile(chosen)
    if profile is None:
        raise BadInputError(
            f"--software {chosen!r} is not a known software profile",
            fix=f"use installed or one of: {', '.join(profile_names())}.",
        )
    return profile, origin


#: Most points a workload histogram may have, and the largest weight of one point.
MAX_WORKLOAD_POINTS = 4096
MAX_WORKLOAD_WEIGHT = 1e12


def check_workload_points(points: Sequence[Any], tokens_per_rank: int) -> tuple[tuple[int, float], ...]:
    """``points`` as ``((tokens, weight), ...)``, or ValueError saying which point breaks which rule.

    The rules of ``--workload T:w,...``: at least one point and at most :data:`MAX_WORKLOAD_POINTS`;
    each T an integer in ``1..tokens_per_rank`` (the per-rank budget); each weight a finite number
    in ``(0, MAX_WORKLOAD_WEIGHT]``. Shared by the flag and by decision records.
    """
    if not points:
        raise ValueError("the workload has no points; give at least one T:weight")
    if len(points) > MAX_WORKLOAD_POINTS:
        raise ValueError(f"{len(points)} points; at most {MAX_WORKLOAD_POINTS} are accepted")
    out = []
    for point in points:
        tokens, weight = point
        if isinstance(tokens, bool) or not isinstance(tokens, int):
            raise ValueError(f"tokens {tokens!r} is not an integer")
        if isinstance(weight, bool) or not isinstance(weight, (int, float)):
            raise ValueError(f"weight {weight!r} is not a number")
        if not 1 <= tokens <= tokens_per_rank:
            raise ValueError(f"tokens {tokens}: need 1 <= T <= {tokens_per_rank} (the per-rank token budget)")
        if not (math.isfinite(weight) and 0 < weight <= MAX_WORKLOAD_WEIGHT):
            raise ValueError(f"weight {weight!r} of T={tokens}: need a finite weight in (0, {MAX_WORKLOAD_WEIGHT:g}]")
        out.append((tokens, float(weight)))
    return tuple(out)


def parse_workload(text: str, tokens_per_rank: int, decode_tokens: int) -> Any:
    """The :class:`~moe_oracle.cost.model.Workload` of ``--workload``, or a one-line BadInputError."""
    from moe_oracle.cost.model import Workload

    fix = "use decode, prefill, mixed or T:w,... (T in 1..the per-rank budget, w a finite weight > 0)"
    try:
        workload = Workload.parse(text, tokens_per_rank, decode_tokens)
        check_workload_points(workload.points, tokens_per_rank)
    except ValueError as exc:
        raise BadInputError(f"--workload {text!r}: {exc}", fix=fix) from None
    return workload
