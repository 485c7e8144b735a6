"""vLLM general plug-in: resolve and validate ``--moe-backend`` at server start, before weights load.

Registered under the ``vllm.general_plugins`` entry point (``moe_oracle = ...:register``), so
vLLM loads it in every process when moe-oracle is installed next to it. ``register()`` wraps
the ``MODELS_CONFIG_MAP`` entries of the DeepSeek V4 and GLM MoE architectures: the wrapper
subclasses the existing entry (its ``verify_and_update_config`` and
``verify_and_update_model_config`` keep running first) and then, inside
``VllmConfig.__post_init__`` (``try_verify_and_update_config``, before the LoRA check,
``KernelConfig.set_platform_defaults`` and any model construction):

* ``--moe-backend auto``: asks the oracle with vLLM 0.33 semantics and, when every MoE layer
  group can run the same fused backend, sets ``kernel_config.moe_backend`` to it (plus
  ``parallel_config.all2all_backend=mori_high_throughput`` and a default
  ``MORI_SHMEM_HEAP_SIZE`` for AITER). Otherwise vLLM's own auto path stays.
* an explicit ``deep_gemm_mega_moe`` / ``aiter_mega_moe``: validates it and raises
  ``ValueError`` with the oracle's reasons when it cannot run (instead of failing in the
  workers after minutes of loading).
* any other value (``triton``, ``marlin``, ...): left to vLLM.

One decision table is logged at INFO on ``vllm.plugins.moe_oracle``. The decision is a pure
function of the config (named software profile ``vllm-0.33.0``, no probing), so every process,
including headless nodes that build their own config, reaches the same one.

Environment:

``MOE_ORACLE_VLLM_PLUGIN=0``
    disables the plug-in (also ``false``/``off``/``no``); vLLM's ``VLLM_PLUGINS`` allow-list
    works as for any plug-in.
``MOE_ORACLE_VLLM_DEVICE=<catalogue name>``
    overrides the platform's device (e.g. ``b200``, ``mi355x``): for checking a config on a
    machine without that GPU.
``MOE_ORACLE_DOMAIN_SIZE=<n>``
    NVLink/XGMI domain size in GPUs when it differs from the device's default.

The translation (plain values in, decisions and mutations out) lives in :func:`snapshot_inputs`
and :func:`resolve`, which take plain values and are tested without vLLM; only
:func:`apply_to_vllm_config` and :func:`register` touch vLLM objects.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass, field, replace
from typing import Any

from moe_oracle.engines.vllm import flags as F

LOGGER_NAME = "vllm.plugins.moe_oracle"
logger = logging.getLogger(LOGGER_NAME)

ENV_SWITCH = "MOE_ORACLE_VLLM_PLUGIN"
ENV_DEVICE = "MOE_ORACLE_VLLM_DEVICE"
ENV_DOMAIN = "MOE_ORACLE_DOMAIN_SIZE"
_OFF = ("0", "false", "off", "no")
#: Environment a decision reads, with vLLM's own defaults where vLLM has one.
_ENV_READ = (*F.ENGINE_ENV, "MORI_SHMEM_HEAP_SIZE", "DG_USE_FP4_ACTS", "DG_USE_FP8_COMBINE")


def enabled(env: dict[str, str] | None = None) -> bool:
    value = (env if env is not None else os.environ).get(ENV_SWITCH, "1")
    return value.strip().lower() not in _OFF


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
    moe_backend: str = "auto"
    device: str | None = None
    arch: str | None = None
    platform: str = "unknown"
    memory_gib: float | None = None
    env: dict[str, str] = field(default_factory=dict)
    vllm_version: str = F.VERSION
    hf_quant_config: dict[str, Any] | None = None
    lora: bool = False
    pcp: int = 1


@dataclass
class Outcome:
    """What the plug-in does with one config.

    ``action``: ``set`` (mutations below), ``keep`` (the requested value stands, validated or
    auto left alone), ``refuse`` (raise ``ValueError(error)``), ``skip`` (not ours to judge).
    """

    action: str
    requested: str
    moe_backend: str | None = None
    all2all_backend: str | None = None
    env_defaults: dict[str, str] = field(default_factory=dict)
    table: list[str] = field(default_factory=list)
    error: str | None = None
    fingerprint: str | None = None

    def mutations(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.moe_backend is not None:
            out["kernel_config.moe_backend"] = self.moe_backend
        if self.all2all_backend is not None:
            out["parallel_config.all2all_backend"] = self.all2all_backend
        for k, v in self.env_defaults.items():
            out[f"os.environ.setdefault({k})"] = v
        return out


# ---------------------------------------------------------------------------------------------
# Pure translation (plain values only)
# ---------------------------------------------------------------------------------------------


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
    from moe_oracle.software.profiles import named_profile
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
    domain = int(snap.env.get(ENV_DOMAIN) or base.domain_size)
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
    )
    software = named_profile(f"vllm-{snap.vllm_version}")
    if software is None:
        raise BadInputError(f"moe-oracle has no software profile for vLLM {snap.vllm_version}")
    return description, deployment, software


def _with_vllm_defaults(env: dict[str, str]) -> dict[str, str]:
    out = dict(F.ENGINE_ENV)
    out.update({k: v for k, v in env.items() if v is not None})
    # vLLM reads booleans as "1"/"true"
    for key in F.ENGINE_ENV:
        value = out[key].strip().lower()
        out[key] = "1" if value in ("1", "true") else "0"
    return out


def _layout(snap: VllmSnapshot) -> str:
    ep = snap.tp * snap.dp if snap.enable_expert_parallel else 1
    return f"TP{snap.tp} DP{snap.dp} EP{ep} PP{snap.pp}"


def decision_table(decision: Any, headline: str) -> list[str]:
    """One readable table: chosen backend per layer group, one line per rejected candidate."""
    from moe_oracle.model.types import layer_span

    lines = [headline]
    signatures = []
    for g in decision.groups:
        grp = g.group
        chosen = g.chosen.spec.key if g.chosen else "no fused backend (vLLM's --moe-backend auto path)"
        lines.append(
            f"  layer group {grp.name} (layers {layer_span(grp.layers)}, {grp.weight_quant.label()}, "
            f"E{grp.num_experts} top{grp.top_k}): {chosen}"
        )
        signatures.append(tuple((c.spec.key, tuple((r.code, r.message) for r in c.failures)) for c in g.candidates))
    same = all(s == signatures[0] for s in signatures)
    for i, g in enumerate(decision.groups):
        if same and i > 0:
            break
        scope = "every layer group" if same else f"layer group {g.group.name}"
        rejected = [c for c in g.candidates if not c.eligible]
        if rejected:
            lines.append(f"  rejected ({scope}):")
        for c in rejected:
            first = c.failures[0]
            more = list(dict.fromkeys(r.code.value for r in c.failures[1:]))
            tail = f" (also {', '.join(more)})" if more else ""
            lines.append(f"    {c.spec.key}: [{first.code.value}] {first.message}{tail}")
        slower = [c for c in g.candidates if c.eligible and c is not g.chosen]
        for c in slower:
            lines.append(f"    {c.spec.key}: eligible, not chosen (higher expected cost)")
    return lines


def resolve(snap: VllmSnapshot) -> Outcome:
    """The plug-in's decision for one config, from plain values (the unit-tested core)."""
    from moe_oracle.cost.model import Workload
    from moe_oracle.errors import BadInputError, OverrideRefusedError
    from moe_oracle.plan.build import distinct_shapes, global_choice
    from moe_oracle.plan.resources import aiter_capacities, derive_aiter_mtpr, derive_mori_heap
    from moe_oracle.record import decision_to_json
    from moe_oracle.rules import Engine
    from moe_oracle.selection import Override, decide

    requested = (snap.moe_backend or "auto").strip().lower().replace("-", "_")
    head = f"moe-oracle: {snap.architecture} --moe-backend {requested}"
    if requested != "auto" and requested not in F.MOE_BACKENDS:
        line = f"{head}: not a fused mega-MoE backend moe-oracle judges; left to vLLM"
        return Outcome("skip", requested, table=[line])
    if snap.vllm_version != F.VERSION:
        line = f"{head}: moe-oracle's vLLM rules describe {F.VERSION}, this is vLLM {snap.vllm_version}; left to vLLM"
        return Outcome("skip", requested, table=[line])
    snap = replace(snap, env=_with_vllm_defaults(snap.env))
    if snap.arch is None:
        if requested == "auto":
            return Outcome(
                "keep", requested, table=[f"{head}: platform {snap.platform} has no GPU moe-oracle models; auto kept"]
            )
        return Outcome(
            "refuse",
            requested,
            error=(
                f"--moe-backend {requested} cannot run on platform {snap.platform}: deep_gemm_mega_moe needs an "
                "SM 10.x NVIDIA GPU and aiter_mega_moe an MI355X (gfx950) [moe-oracle]"
            ),
            table=[f"{head}: refused, platform {snap.platform} has no fused mega-MoE kernel"],
        )
    try:
        description, deployment, software = snapshot_inputs(snap)
    except BadInputError as exc:
        return Outcome(
            "keep" if requested == "auto" else "skip",
            requested,
            table=[f"{head}: moe-oracle cannot describe this config ({exc.one_line()}); left to vLLM"],
        )
    blockers = []
    if snap.lora:
        blockers.append("LoRA is enabled and vLLM rejects every mega-MoE backend with LoRA")
    if snap.pcp > 1:
        blockers.append(f"prefill context parallel size {snap.pcp}: vLLM's DSv4.1 PCP path refuses mega-MoE backends")
    where = (
        f"vLLM {snap.vllm_version}; {deployment.device.name} {deployment.device.arch.value}; {_layout(snap)}; "
        f"{snap.max_num_batched_tokens} tokens/rank, {snap.max_num_seqs} seqs; domain {deployment.topology.domain_size}"
    )
    override = None if requested == "auto" else Override(requested)
    # the workload the engine will run: decode steps of up to max_num_seqs tokens per DP rank and prefill
    # chunks of max_num_batched_tokens, equally weighted
    workload = Workload.default(deployment.parallel.tokens_per_rank, decode_tokens=snap.max_num_seqs)
    try:
        decision = decide(description, deployment, software, engine=Engine.VLLM, override=override, workload=workload)
    except OverrideRefusedError as exc:
        decision = decide(description, deployment, software, engine=Engine.VLLM, workload=workload)
        table = decision_table(decision, f"{head}: REFUSED ({where})")
        return Outcome(
            "refuse",
            requested,
            error=f"{exc.one_line()} [moe-oracle vLLM plug-in; disable with {ENV_SWITCH}=0]",
            table=table,
            fingerprint=decision_to_json(decision)["fingerprint"],
        )
    fingerprint = decision_to_json(decision)["fingerprint"]
    if override is not None and blockers:
        return Outcome(
            "refuse",
            requested,
            error=f"--moe-backend {requested} cannot run: {'; '.join(blockers)} [moe-oracle]",
            table=decision_table(decision, f"{head}: REFUSED ({where})"),
            fingerprint=fingerprint,
        )
    backend, _variant, why = global_choice(decision)
    if override is None and (backend is None or blockers or backend not in F.MOE_BACKENDS):
        reason = "; ".join(blockers) or why or f"{backend} is not a vLLM {F.VERSION} --moe-backend value"
        table = decision_table(decision, f"{head} -> auto kept ({where})")
        table.append(f"  kept auto: {reason}")
        return Outcome("keep", requested, table=table, fingerprint=fingerprint)
    chosen = backend if override is None else requested
    out = Outcome(
        "set" if override is None else "keep",
        requested,
        moe_backend=chosen if override is None else None,
        fingerprint=fingerprint,
    )
    if chosen == "aiter_mega_moe":
        if deployment.parallel.all2all_backend not in F.ALL2ALL_BACKENDS:
            out.all2all_backend = "mori_high_throughput"
            out.action = "set"
        shapes = distinct_shapes(decision)
        mtpr = derive_aiter_mtpr(snap.max_num_batched_tokens, "max_num_batched_tokens", engine="vllm")
        ep = deployment.parallel.ep
        heap = derive_mori_heap(
            runtimes=[(s, aiter_capacities(mtpr.value, s.experts // ep, engine="vllm")) for s in shapes], ep=ep
        )
        from moe_oracle.spec.units import format_size

        out.env_defaults["MORI_SHMEM_HEAP_SIZE"] = format_size(heap.value)
        if out.action == "keep":
            out.action = "set"
    verb = "->" if override is None else "validated:"
    out.table = decision_table(decision, f"{head} {verb} {chosen} ({where})")
    for key, value in out.mutations().items():
        out.table.append(f"  set {key} = {value}")
    out.table.append(f"  decision fingerprint {fingerprint}")
    return out


# ---------------------------------------------------------------------------------------------
# The thin layer that touches vLLM
# ---------------------------------------------------------------------------------------------


def _platform(env: dict[str, str]) -> tuple[str | None, str | None, str, float | None]:
    """(catalogue device name, arch, platform label, memory GiB) of this process's platform."""
    from moe_oracle.spec.device import DEVICES, Arch

    override = env.get(ENV_DEVICE)
    if override:
        spec = DEVICES.get(override.strip().lower())
        if spec is None:
            raise ValueError(f"{ENV_DEVICE}={override!r} is not a known device (use one of: {', '.join(DEVICES)})")
        return spec.name, spec.arch.value, f"{spec.name} ({ENV_DEVICE})", spec.memory_gib
    from vllm.platforms import current_platform

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


def _hf_quant_config(model: str) -> dict[str, Any] | None:
    import json
    from pathlib import Path

    path = Path(model) / "hf_quant_config.json"
    if path.is_file():
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        return data if isinstance(data, dict) else None
    return None


def snapshot_from_vllm(vllm_config: Any, architecture: str) -> VllmSnapshot:
    """Read the plain values out of a real ``VllmConfig``."""
    import vllm

    mc, pc = vllm_config.model_config, vllm_config.parallel_config
    env = {k: os.environ[k] for k in (*_ENV_READ, ENV_DOMAIN) if k in os.environ}
    device, arch, platform, memory = _platform(dict(os.environ))
    hf = mc.hf_config.to_dict() if hasattr(mc.hf_config, "to_dict") else dict(vars(mc.hf_config))
    return VllmSnapshot(
        architecture=architecture,
        hf_config=hf,
        model=str(mc.model),
        tp=pc.tensor_parallel_size,
        dp=pc.data_parallel_size,
        pp=pc.pipeline_parallel_size,
        dp_local=getattr(pc, "data_parallel_size_local", None),
        nnodes=getattr(pc, "nnodes", 1) or 1,
        enable_expert_parallel=bool(pc.enable_expert_parallel),
        max_num_batched_tokens=int(vllm_config.scheduler_config.max_num_batched_tokens),
        max_num_seqs=int(getattr(vllm_config.scheduler_config, "max_num_seqs", 256) or 256),
        all2all_backend=pc.all2all_backend,
        enable_eplb=bool(getattr(pc, "enable_eplb", False)),
        moe_backend=str(vllm_config.kernel_config.moe_backend),
        device=device,
        arch=arch,
        platform=platform,
        memory_gib=memory,
        env=env,
        vllm_version=vllm.__version__,
        hf_quant_config=_hf_quant_config(str(mc.model)),
        lora=vllm_config.lora_config is not None,
        pcp=int(getattr(pc, "prefill_context_parallel_size", 1) or 1),
    )


def _allowed(name: str, value: str) -> bool:
    """Is ``value`` a member of vLLM's own Literal for this field?"""
    import typing

    if name == "moe_backend":
        from vllm.config.kernel import MoEBackend

        return value in typing.get_args(MoEBackend)
    from vllm.config.parallel import All2AllBackend

    return value in typing.get_args(All2AllBackend)


def apply_to_vllm_config(vllm_config: Any, architecture: str) -> Outcome:
    """Decide for a real ``VllmConfig``, log the table, then mutate it or raise ``ValueError``."""
    outcome = resolve(snapshot_from_vllm(vllm_config, architecture))
    for line in outcome.table:
        logger.info("%s", line)
    if outcome.action == "refuse":
        raise ValueError(outcome.error)
    if outcome.action != "set":
        return outcome
    if outcome.moe_backend is not None:
        if not _allowed("moe_backend", outcome.moe_backend):
            logger.warning("moe-oracle: %s is not a --moe-backend of this vLLM; left unchanged", outcome.moe_backend)
            return outcome
        vllm_config.kernel_config.moe_backend = outcome.moe_backend
    if outcome.all2all_backend is not None and _allowed("all2all_backend", outcome.all2all_backend):
        vllm_config.parallel_config.all2all_backend = outcome.all2all_backend
    for key, value in outcome.env_defaults.items():
        os.environ.setdefault(key, value)
    return outcome


def wrap_entry(base: type, architecture: str) -> type:
    """A subclass of ``base`` (a ``VerifyAndUpdateConfig``) that runs the oracle after it."""

    class MoEOracleVerifyAndUpdateConfig(base):  # type: ignore[misc, valid-type]
        _moe_oracle_wrapped = True
        _moe_oracle_base = base
        _moe_oracle_architecture = architecture

        @classmethod
        def verify_and_update_config(cls, vllm_config: Any) -> None:
            super().verify_and_update_config(vllm_config)
            if enabled():
                apply_to_vllm_config(vllm_config, architecture)

    MoEOracleVerifyAndUpdateConfig.__name__ = f"MoEOracle{base.__name__}"
    MoEOracleVerifyAndUpdateConfig.__qualname__ = MoEOracleVerifyAndUpdateConfig.__name__
    return MoEOracleVerifyAndUpdateConfig


def register() -> None:
    """``vllm.general_plugins`` entry point: wrap the DSv4 and GLM ``MODELS_CONFIG_MAP`` entries."""
    if not enabled():
        logger.info("moe-oracle: vLLM plug-in disabled (%s=%s)", ENV_SWITCH, os.environ.get(ENV_SWITCH))
        return
    try:
        from vllm.model_executor.models import config as cfgmod
    except Exception as exc:  # a broken plug-in must not stop vLLM
        logger.warning("moe-oracle: vLLM plug-in not active (cannot import MODELS_CONFIG_MAP: %s)", exc)
        return
    table = cfgmod.MODELS_CONFIG_MAP
    for arch in F.HOOKED_ARCHITECTURES:
        base = table.get(arch, cfgmod.VerifyAndUpdateConfig)
        if getattr(base, "_moe_oracle_wrapped", False):
            continue
        table[arch] = wrap_entry(base, arch)
