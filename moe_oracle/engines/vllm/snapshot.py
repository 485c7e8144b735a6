"""A ``VllmConfig`` as plain values: what the plug-in's decision reads, and how it is read.

:class:`VllmSnapshot` holds no vLLM object; :func:`snapshot_inputs` turns it into moe-oracle's
model description, deployment and software profile (tested without vLLM);
:func:`snapshot_from_vllm` reads one out of a real config (every attribute through guarded access).
"""

from __future__ import annotations

import logging
import os
import re
from dataclasses import dataclass, field
from typing import Any

from moe_oracle.engines.vllm.shipped import ENV_BACKEND
from moe_oracle.errors import excerpt as shown
from moe_oracle.releases import vllm as release

#: The flag vocabulary of the engine release these plans and hooks are written for.
F = release.flags

logger = logging.getLogger("vllm.plugins.moe_oracle")

ENV_DEVICE = "MOE_ORACLE_VLLM_DEVICE"
ENV_DOMAIN = "MOE_ORACLE_DOMAIN_SIZE"
ENV_SWITCH = "MOE_ORACLE_VLLM_PLUGIN"
#: the plug-in switch's spellings (anything else is refused)
SWITCH_ON = ("1", "true", "on", "yes")
SWITCH_OFF = ("0", "false", "off", "no")
#: the plug-in's own environment variables, read in the process that builds the config
PLUGIN_ENV = (ENV_SWITCH, ENV_DEVICE, ENV_DOMAIN, ENV_BACKEND)
#: Environment a decision reads, with vLLM's own defaults where vLLM has one.
_ENV_READ = (*F.ENGINE_ENV, "MORI_SHMEM_HEAP_SIZE", "DG_USE_FP4_ACTS", "DG_USE_FP8_COMBINE")


@dataclass(frozen=True)
class VllmSnapshot:
    """The plain values of a ``VllmConfig`` a decision needs (no vLLM objects)."""

    architecture: str
    hf_config: dict[str, Any]
    model: str
    tp: int = 1
    dp: int = 1
    pp: int = 1
    dp_local: int | None = None
    nnodes: int = 1
    enable_expert_parallel: bool = False
    max_num_batched_tokens: int = 8192
    max_num_seqs: int = 256
    all2all_backend: str | None = None
    enable_eplb: bool = False
    #: ``mtp`` when ``--speculative-config`` drafts with the model's own MTP layers (vLLM normalises every MTP
    #: method name to ``mtp``, config/speculative.py:1246-1250), which only then builds them
    speculative: str = "none"
    moe_backend: str = "auto"
    device: str | None = None
    arch: str | None = None
    platform: str = "unknown"
    memory_gib: float | None = None
    env: dict[str, str] = field(default_factory=dict)
    vllm_version: str = release.VERSION
    hf_quant_config: dict[str, Any] | None = None
    lora: bool = False
    pcp: int = 1
    additional_config: Any = None
    #: ``parallel_config._api_process_count`` / ``_api_process_rank``: with several API-server processes
    #: each builds its own config, and only the process that owns the whole server logs the table
    api_process_count: int = 1
    api_process_rank: int = 0
    #: ``parallel_config.data_parallel_rank``: 0 on the head node, the start rank on a ``--headless`` node
    dp_rank: int = 0
    #: where the device came from (``MOE_ORACLE_VLLM_DEVICE`` or the platform probe), and what was
    #: adjusted because of it (shown in the decision table)
    device_source: str = "platform"
    notes: tuple[str, ...] = ()
    #: the kernel builds the decision judges: ``installed`` (probed, what the real hook uses: vLLM prefers a
    #: site-packages ``deep_gemm`` over its vendored one,
    #: https://github.com/vllm-project/vllm/blob/v0.33.0/vllm/utils/deep_gemm.py) or a named profile
    software: str = release.NAME


def _normalize_hf(config: dict[str, Any]) -> dict[str, Any]:
    """Undo vLLM's in-place rewrites so the model adapters see the checkpoint's config."""
    out = dict(config)
    for key in ("quantization_config",):
        qc = out.get(key)
        if isinstance(qc, dict) and qc.get("quant_method") == "deepseek_v4_fp8":
            out[key] = {**qc, "quant_method": "fp8"}
    text = out.get("text_config")
    if isinstance(text, dict):
        out["text_config"] = _normalize_hf(text)
    return out


def snapshot_inputs(snap: VllmSnapshot) -> tuple[Any, Any, Any]:
    """(ModelDescription, Deployment, SoftwareProfile) for a snapshot; BadInputError if unreadable."""
    from moe_oracle.errors import BadInputError
    from moe_oracle.model.adapters import describe_config
    from moe_oracle.releases.profiles import named_profile
    from moe_oracle.spec.deployment import Deployment, Parallelism, Topology
    from moe_oracle.spec.device import DEVICES, Arch, DeviceSpec

    description = describe_config(
        _normalize_hf(snap.hf_config), snap.hf_quant_config, model_id=snap.model, source="vLLM hf_config"
    )
    if snap.arch is None:
        raise BadInputError(f"platform {snap.platform}: no GPU architecture moe-oracle models")
    arch = Arch(snap.arch)
    base = DEVICES.get(snap.device or "")
    if base is not None and base.arch is not arch:
        base = None
    if base is None:
        base = DeviceSpec(
            name=(snap.device or f"{arch.value}-gpu").lower()[:40],
            arch=arch,
            memory_gib=snap.memory_gib or 1.0,
        )
    world = snap.tp * snap.dp * snap.pp
    if snap.dp_local:
        gpn = snap.dp_local * snap.tp * snap.pp
    elif snap.nnodes > 1:
        gpn = max(1, world // snap.nnodes)
    else:
        gpn = world
    nodes = max(1, -(-world // gpn))
    domain = domain_size(snap.env) or base.domain_size
    ep = snap.tp * snap.dp if snap.enable_expert_parallel else 1
    all2all = None if snap.all2all_backend in (None, F.DEFAULT_ALL2ALL) else snap.all2all_backend
    deployment = Deployment(
        device=base,
        topology=Topology(gpus_per_node=gpn, nodes=nodes, domain_size=domain),
        parallel=Parallelism(
            tp=snap.tp,
            dp=snap.dp,
            ep=ep,
            pp=snap.pp,
            max_num_batched_tokens=snap.max_num_batched_tokens,
            all2all_backend=all2all,
            eplb=snap.enable_eplb,
        ),
        env={k: snap.env[k] for k in _ENV_READ if k in snap.env},
        speculative="mtp" if snap.speculative == "mtp" else "none",
    )
    if snap.software == "installed":
        from moe_oracle.software.probe import probe_installed

        software = probe_installed()
    else:
        named = named_profile(snap.software)
        if named is None:
            raise BadInputError(f"moe-oracle has no software profile {snap.software!r}")
        software = named
    return description, deployment, software


def _positive(env: dict[str, str], name: str, upper: int) -> int | None:
    from moe_oracle.errors import BadInputError

    raw = env.get(name)
    if raw is None or not raw.strip():
        return None
    text = raw.strip()
    # ASCII digits, at most as many as ``upper`` has: int() of 5,000 digits raises, and str.isdigit takes '٣'
    if not re.fullmatch(f"[0-9]{{1,{len(str(upper))}}}", text) or not 1 <= int(text) <= upper:
        raise BadInputError(
            f"{name}={shown(raw)} is not a whole number from 1 to {upper}",
            fix=f"unset {name} or set it to the GPUs of one NVLink/XGMI domain (e.g. 8, 72).",
        )
    return int(text)


def domain_size(env: dict[str, str]) -> int | None:
    """``MOE_ORACLE_DOMAIN_SIZE``: the NVLink/XGMI domain in GPUs, or None (the device's own)."""
    return _positive(env, ENV_DOMAIN, 4096)


def check_env(env: dict[str, str]) -> None:
    """The plug-in's own variables, checked before the config is accepted (BadInputError, one line)."""
    from moe_oracle.errors import BadInputError
    from moe_oracle.spec.device import DEVICES

    switch = env.get(ENV_SWITCH)
    if switch is not None and switch.strip().lower() not in (*SWITCH_ON, *SWITCH_OFF):
        raise BadInputError(
            f"{ENV_SWITCH}={shown(switch)} is neither on nor off",
            fix=f"set {ENV_SWITCH}=1 (on) or {ENV_SWITCH}=0 (off).",
        )
    device = env.get(ENV_DEVICE)
    if device is not None and device.strip().lower() not in DEVICES:
        raise BadInputError(
            f"{ENV_DEVICE}={shown(device)} is not a device moe-oracle knows",
            fix=f"use one of {', '.join(DEVICES)}, or unset it.",
        )
    domain_size(env)


def _layout(snap: VllmSnapshot) -> str:
    ep = snap.tp * snap.dp if snap.enable_expert_parallel else 1
    return f"TP{snap.tp} DP{snap.dp} EP{ep} PP{snap.pp}"


def _probe_platform() -> tuple[str | None, str | None, str, float | None]:
    """(catalogue device name, arch, platform label, memory GiB) of the GPU vLLM's platform sees."""
    from vllm.platforms import current_platform

    from moe_oracle.spec.device import DEVICES, Arch

    label = type(current_platform).__name__
    arch: Arch | None = None
    name = ""
    memory = None
    try:
        if current_platform.is_cuda():
            cap = current_platform.get_device_capability()
            arch = Arch.from_capability(cap.major, cap.minor) if cap is not None else None
            name = current_platform.get_device_name()
        elif current_platform.is_rocm():
            from vllm.platforms import rocm

            arch = Arch.from_gcn_arch(getattr(rocm, "_GCN_ARCH", ""))
            name = current_platform.get_device_name()
        if arch is not None:
            memory = current_platform.get_device_total_memory() / (1 << 30)
    except Exception as exc:  # never take vLLM down while probing
        logger.warning("moe-oracle: could not identify the GPU (%s); treating the platform as unknown", exc)
        arch = None
    key = None
    low = name.lower().replace(" ", "")
    for cand in sorted(DEVICES, key=len, reverse=True):
        if cand.replace("-", "") in low:
            key = cand
            break
    return key or (name or None), None if arch is None else arch.value, f"{label} {name}".strip(), memory


def _platform(env: dict[str, str]) -> tuple[str | None, str | None, str, float | None, str]:
    """Device, arch, platform label, memory GiB and where the device came from.

    ``MOE_ORACLE_VLLM_DEVICE`` names the device for a dry check on a machine without that GPU; where
    vLLM's platform sees a real GPU it wins, and the override is reported as ignored (never a silent
    replacement of a real probe).
    """
    from moe_oracle.spec.device import DEVICES

    check_env(env)
    override = (env.get(ENV_DEVICE) or "").strip().lower()
    spec = DEVICES.get(override) if override else None
    device, arch, label, memory = _probe_platform()
    if spec is None:
        return device, arch, label, memory, "platform"
    if arch is not None:
        logger.warning(
            "moe-oracle: %s=%s ignored: vLLM's platform sees %s (%s); the decision uses the real GPU",
            ENV_DEVICE,
            override,
            label,
            arch,
        )
        return device, arch, label, memory, f"platform ({ENV_DEVICE}={override} ignored)"
    return spec.name, spec.arch.value, f"{spec.name} ({ENV_DEVICE})", spec.memory_gib, ENV_DEVICE


def _checkpoint_json(model: str, name: str) -> dict[str, Any] | None:
    """A JSON file of a local checkpoint directory, as ``moe-oracle plan`` reads it (None elsewhere).

    The checkpoint's own ``config.json`` rather than vLLM's ``hf_config.to_dict()``: transformers 5 renames
    keys there (Qwen3-MoE's ``num_experts`` comes back as ``num_local_experts``) and vLLM rewrites some in
    place, so the hook and ``plan`` read the same file."""
    import json
    from pathlib import Path

    path = Path(model) / name
    if path.is_file():
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        return data if isinstance(data, dict) else None
    return None


def _hf_quant_config(model: str) -> dict[str, Any] | None:
    return _checkpoint_json(model, "hf_quant_config.json")


def snapshot_from_vllm(vllm_config: Any, architecture: str) -> VllmSnapshot:
    """Read the plain values out of a real ``VllmConfig`` (every attribute through guarded access:
    a missing one raises :class:`SnapshotError`, which the plug-in reports at WARNING)."""
    import vllm

    mc, pc, sched = _attr(vllm_config, "model_config"), _attr(vllm_config, "parallel_config"), None
    sched = _attr(vllm_config, "scheduler_config")
    env = {k: os.environ[k] for k in (*_ENV_READ, *PLUGIN_ENV) if k in os.environ}
    device, arch, platform, memory, source = _platform(dict(os.environ))
    hf = _checkpoint_json(str(mc.model), "config.json")
    if hf is None:  # a Hub id: the config as vLLM parsed it (transformers may rename keys in to_dict)
        hf_config = _attr(mc, "hf_config")
        hf = hf_config.to_dict() if hasattr(hf_config, "to_dict") else dict(vars(hf_config))
    tp, dp, pp = (int(_attr(pc, n)) for n in ("tensor_parallel_size", "data_parallel_size", "pipeline_parallel_size"))
    tokens = int(_attr(sched, "max_num_batched_tokens"))
    seqs = int(getattr(sched, "max_num_seqs", 256) or 256)
    notes: tuple[str, ...] = ()
    if source == ENV_DEVICE:  # vLLM 0.33 scales its CPU defaults by TP x PP (arg_utils.py:3157), not by DP
        tokens, seqs, notes = batch_defaults_for(device, tp * pp, tokens, seqs)
    return VllmSnapshot(
        architecture=architecture,
        hf_config=hf,
        model=str(mc.model),
        tp=tp,
        dp=dp,
        pp=pp,
        dp_local=getattr(pc, "data_parallel_size_local", None),
        nnodes=getattr(pc, "nnodes", 1) or 1,
        enable_expert_parallel=bool(getattr(pc, "enable_expert_parallel", False)),
        max_num_batched_tokens=tokens,
        max_num_seqs=seqs,
        all2all_backend=getattr(pc, "all2all_backend", None),
        enable_eplb=bool(getattr(pc, "enable_eplb", False)),
        speculative="mtp"
        if getattr(getattr(vllm_config, "speculative_config", None), "method", None) == "mtp"
        else "none",
        moe_backend=str(getattr(getattr(vllm_config, "kernel_config", None), "moe_backend", "auto")),
        device=device,
        arch=arch,
        platform=platform,
        memory_gib=memory,
        env=env,
        vllm_version=vllm.__version__,
        hf_quant_config=_hf_quant_config(str(mc.model)),
        lora=getattr(vllm_config, "lora_config", None) is not None,
        pcp=int(getattr(pc, "prefill_context_parallel_size", 1) or 1),
        additional_config=getattr(vllm_config, "additional_config", None),
        api_process_count=int(getattr(pc, "_api_process_count", 1) or 1),
        api_process_rank=int(getattr(pc, "_api_process_rank", 0) or 0),
        dp_rank=int(getattr(pc, "data_parallel_rank", 0) or 0),
        device_source=source,
        notes=notes,
        software="installed",
    )


class SnapshotError(Exception):
    """A ``VllmConfig`` attribute the plug-in reads is missing (another vLLM version)."""


def _attr(obj: Any, name: str) -> Any:
    value = getattr(obj, name, None)
    if value is None:
        raise SnapshotError(f"VllmConfig has no {type(obj).__name__}.{name}")
    return value


def batch_defaults_for(device: str | None, world: int, tokens: int, seqs: int) -> tuple[int, int, tuple[str, ...]]:
    """Replace vLLM's CPU batch defaults by the named GPU's when a CPU platform stands in for it.

    On a CPU vLLM 0.33 defaults to 2048 / 4096 tokens and 128 / 256 sequences per unit of ``world``
    = TP x PP (API server / LLM class, ``engine/arg_utils.py`` ``get_batch_defaults``, called with
    ``pipeline_parallel_size * tensor_parallel_size`` at line 3157); values equal to those are
    taken as defaults, and the named device's ``vllm serve`` defaults are used instead. Anything
    else was set by the operator and stays.
    """
    from moe_oracle.decide.memory_share import vllm_serve_batch_defaults as serve_batch_defaults

    gpu_tokens, gpu_seqs = serve_batch_defaults(device)
    notes = []
    if tokens in (2048 * world, 4096 * world) and tokens != gpu_tokens:
        notes.append(f"max_num_batched_tokens {tokens} is vLLM's CPU default; sized for {device}'s {gpu_tokens}")
        tokens = gpu_tokens
    if seqs in (128 * world, 256 * world) and seqs != gpu_seqs:
        notes.append(f"max_num_seqs {seqs} is vLLM's CPU default; sized for {device}'s {gpu_seqs}")
        seqs = gpu_seqs
    return tokens, seqs, tuple(notes)
