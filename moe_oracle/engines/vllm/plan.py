"""vLLM 0.33.0 launch plans: ``vllm serve`` argv, environment and derived quantities.

Parallel flags map one to one (``--tensor-parallel-size``, ``--data-parallel-size``,
``--pipeline-parallel-size``); expert parallelism in vLLM is all-or-nothing
(``--enable-expert-parallel`` makes the EP group every TP x DP rank), so the oracle's ``ep``
must be 1 or ``tp*dp``. A fused backend is selected only by ``--moe-backend`` (vLLM 0.33's
``auto`` never picks one, https://github.com/vllm-project/vllm/tree/v0.33.0); AITER MegaMoEV2 also needs a MoRI all2all
backend, ``VLLM_ROCM_USE_AITER=1 VLLM_ROCM_USE_AITER_MOE=1`` and a MoRI heap that holds its
buffers (§3.1, §3.2). Servers spanning several nodes use vLLM's multi-node data parallel
(``--data-parallel-size-local``/``--data-parallel-address``/``--data-parallel-start-rank``,
``--headless`` on the non-head nodes).
"""

from __future__ import annotations

import json

from moe_oracle.engines.plugin_probe import probe_note
from moe_oracle.errors import BadInputError
from moe_oracle.fit.resources import (
    Derived,
    aiter_capacities,
    choose_mori_heap,
    derive_aiter_mtpr,
    derive_mori_heap,
    formula,
)
from moe_oracle.fit.server import Command, EngineParts, Layout, PlanContext, distinct_shapes, per_rank_total
from moe_oracle.fit.speculative import speculative_argv, speculative_notes
from moe_oracle.releases import vllm as release
from moe_oracle.rules import Engine
from moe_oracle.spec.deployment import Deployment

#: The flag vocabulary of the engine release these plans and hooks are written for.
F = release.flags

TOKENS_ORIGIN = "--max-num-batched-tokens; vLLM passes scheduler max_num_batched_tokens to the mega path unchanged"


def check_layout(dep: Deployment) -> None:
    par, topo = dep.parallel, dep.topology
    group = par.tp * par.dp
    if par.ep not in (1, group):
        raise BadInputError(
            f"--ep {par.ep}: vLLM's expert-parallel group is every TP x DP rank (tp*dp={group}) or none",
            fix=f"use --ep {group} (--enable-expert-parallel) or --ep 1.",
        )
    per_dp = par.tp * par.pp
    ranks = group * par.pp
    if ranks > topo.gpus_per_node and topo.gpus_per_node % per_dp:
        raise BadInputError(
            f"tp*pp={per_dp} does not divide the {topo.gpus_per_node} GPUs of a node; the plan places whole "
            "data-parallel ranks on each node",
            fix="choose --tp/--pp that divide --gpus-per-node.",
        )


def router_hint(count: int, layout: Layout) -> str:
    return (
        f"Run the {count} replicas as independent vLLM servers ({layout.label()} each, port 8000 on each "
        "replica's first node) and put an OpenAI-compatible load balancer or router in front of them "
        "(e.g. vllm-router, or any HTTP round-robin balancer), sending each replica 1/"
        f"{count} of the requests. Do not join them with --data-parallel-address: one DP group would "
        "make the EP group cross the domain again. (This is the 2-node layout of the SM90 mega-MoE "
        "measurement: two DP8+EP8 replicas, half the requests each.)"
    )


def _placeholder(replica: int, replicas: int) -> tuple[str, str]:
    name = "HEAD_NODE_IP" if replicas == 1 else f"REPLICA{replica}_HEAD_IP"
    what = "address of the first node" + ("" if replicas == 1 else f" of replica {replica}")
    return name, f"{what} (reachable from the other nodes; vLLM --data-parallel-address)"


def _native_flag(ctx: PlanContext) -> str:
    """The ``--moe-backend`` value of the native route that serves the chosen variant (vLLM's own
    ``deep_gemm_mega_moe`` first; ``flashinfer_moe_ep_mega_deep_gemm`` where only FlashInfer's route passes)."""
    from moe_oracle.engines.routes import candidate_support
    from moe_oracle.rules.engine import ENGINE_ROUTE

    for gd in ctx.decision.groups:
        if gd.chosen is None:
            continue
        support = candidate_support(ctx.decision, gd, gd.chosen)
        if support is not None and support.route == ENGINE_ROUTE:
            return support.flag_value
    return str(ctx.backend)


def _runtime_groups(ctx: PlanContext) -> list:
    """The layer groups moe-oracle's runtime serves inside vLLM (the plug-in's route), in decision order."""
    from moe_oracle.engines.vllm.routes import group_routes
    from moe_oracle.rules.engine import MOE_ORACLE_ROUTE

    return [r for r in group_routes(ctx.decision) if r.route == MOE_ORACLE_ROUTE]


def _unreleased_builds(ctx: PlanContext, runtime: list) -> str:
    """The chosen candidates' ``needs an unreleased build: ...`` for the groups ``runtime`` serves, each once
    (empty when a release serves them all)."""
    served = {r.name for r in runtime}
    needs = [g.chosen.unreleased_build for g in ctx.decision.groups if g.chosen is not None and g.group.name in served]
    return "; ".join(dict.fromkeys(n for n in needs if n))


def backend_pins(ctx: PlanContext, runtime: list) -> str | dict[str, str]:
    """``moe_oracle.backend`` for the plug-in (:func:`moe_oracle.engines.routes.backend_pins`)."""
    from moe_oracle.engines.routes import backend_pins as pins

    return pins(ctx.decision, runtime)


def _plugin_args(ctx: PlanContext, runtime: list, derived: list[Derived], notes: list[str], shapes: list) -> list[str]:
    """``--additional-config`` for the plug-in, the DeepGEMM buffer it sizes, and what vLLM alone would run."""
    par = ctx.deployment.parallel
    request: dict[str, object] = {"backend": backend_pins(ctx, runtime)}
    if ctx.decision.conversion.allow_lossy:
        request["allow_lossy_conversion"] = True
    args = ["--additional-config", json.dumps({"moe_oracle": request}, separators=(",", ":"))]
    served = ", ".join(f"{r.name} ({r.key})" for r in runtime)
    others = [g.group.name for g in ctx.decision.groups if g.group.name not in {r.name for r in runtime}]
    notes.append(
        f"moe-oracle's runtime serves layer group(s) {served} inside vLLM: the moe-oracle plug-in (installed "
        "with moe-oracle, entry point vllm.general_plugins) registers its out-of-tree RoutedExperts; vLLM's quant "
        "method loads the checkpoint and the plug-in moves the experts into the kernel layout after loading. "
        "--additional-config pins each layer group's variant ('vllm': vLLM's own MoE for that group); the plug-in "
        "validates every pin before any weight loads, and --moe-backend auto would choose the same."
    )
    notes.append(probe_note(Engine.VLLM))
    if others:
        notes.append(f"vLLM's own MoE serves layer group(s) {', '.join(others)} (no fused backend fits them).")
    sm90 = ctx.deployment.device.arch.value == "sm90"
    build = ctx.decision.software.only_build("deep_gemm")
    for shape in shapes:
        derived += formula("derive_deepgemm_for_build")(
            build=build,
            arch="sm90" if sm90 else "sm100",
            shape=shape,
            ranks=par.ep,
            tokens_per_rank=par.max_num_batched_tokens,
            tokens_origin=TOKENS_ORIGIN + "; moe-oracle sizes one buffer per shape, allocated at model construction "
            "(before vLLM profiles memory for the KV cache)",
            env=ctx.user_env,
        )
    notes.extend(_deep_gemm_install(ctx, runtime, build))
    return args


_SITE_FIRST = (
    "vLLM imports a site-packages deep_gemm before its vendored 2.8.1 (vllm/utils/deep_gemm.py, "
    f"{release.SOURCE}/utils/deep_gemm.py), so this build serves every DeepGEMM "
    "call vLLM makes (one deep_gemm module at a time); the vendored 2.8.1 has no SM90 mega kernel"
)
_NO_PLUGIN = (
    f"Without moe-oracle's plug-in, vLLM {release.SERIES} serves these layers with its non-fused MoE "
    "(https://github.com/vllm-project/vllm/issues/57772: Marlin weight-only on Hopper)."
)


def _deep_gemm_install(ctx: PlanContext, runtime: list, build: str | None) -> list[str]:
    """What to install for the DeepGEMM build the profile lists, where it is not vLLM's vendored one: exactly that
    build (a release: its pip pin; unreleased: its source), and nothing for the vendored 2.8.1."""
    from moe_oracle.software.catalog import known_builds

    spec = known_builds().get(build or "")
    if spec is None or spec.import_paths == ("vllm.third_party.deep_gemm",):
        return []
    if spec.released:
        dist = spec.dists[0] if spec.dists else spec.name
        pin = f"{dist}{spec.version}" if spec.version else dist
        return [
            f"Install {spec.title} into vLLM's environment: pip install '{pin}' ({spec.url}). {_SITE_FIRST}. "
            f"`moe-oracle probe` recognises the build. {_NO_PLUGIN}"
        ]
    needs = _unreleased_builds(ctx, runtime) or f"needs an unreleased build: {spec.label}, obtain: {spec.url}"
    return [
        f"This plan {needs}. Build it from that source with its submodules (a pull request: git fetch origin "
        f"pull/<number>/head) and pip install it into vLLM's environment. {_SITE_FIRST}. `moe-oracle probe` "
        f"recognises the build. {_NO_PLUGIN}"
    ]


def build(ctx: PlanContext) -> EngineParts:
    dep = ctx.deployment
    par, topo = dep.parallel, dep.topology
    notes: list[str] = []
    derived: list[Derived] = []
    env: dict[str, str] = {}
    argv = ["vllm", "serve", ctx.model_arg, "--tensor-parallel-size", str(par.tp), "--data-parallel-size", str(par.dp)]
    if par.pp > 1:
        argv += ["--pipeline-parallel-size", str(par.pp)]
    if par.ep > 1:
        argv.append("--enable-expert-parallel")
    argv += ["--max-num-batched-tokens", str(par.max_num_batched_tokens)]
    if ctx.memory.max_num_seqs is not None:  # the decode batch the decision weighed, as given
        argv += ["--max-num-seqs", str(ctx.memory.max_num_seqs)]
    if ctx.memory.max_model_len is not None:  # given, or what the KV cache holds (vLLM refuses a longer one)
        argv += ["--max-model-len", str(ctx.memory.max_model_len)]
    if ctx.memory_fraction is not None:  # the fit's share: given, or chosen because the default does not fit
        argv += ["--gpu-memory-utilization", f"{ctx.memory_fraction:g}"]
    all2all = par.all2all_backend
    shapes = distinct_shapes(ctx.decision)
    runtime = _runtime_groups(ctx)
    if runtime:
        argv += _plugin_args(ctx, runtime, derived, notes, shapes)
    elif ctx.backend == "deep_gemm_mega_moe":
        flag = _native_flag(ctx)
        argv += ["--moe-backend", flag]
        if flag != "deep_gemm_mega_moe":
            all2all = None  # vLLM binds passthrough itself and its CLI does not offer it (config/kernel.py:194-205)
            notes.append(
                f"--moe-backend {flag}: vLLM's FlashInfer MoE-EP layer runs DeepGEMM's SM100 FP8 x FP4 mega kernel on "
                "the MXFP4 checkpoint as stored, with its own dispatch and combine (all2all bound to passthrough; "
                "vllm/config/kernel.py:194-228, model_executor/layers/fused_moe/flashinfer_moe_ep.py:226-235, "
                "275-281); the DeepGEMM buffer below is sized as vLLM's own mega path sizes it (FlashInfer allocates "
                "its workspace itself: unverified)."
            )
        fuse_env = ctx.user_env.get("VLLM_DISABLE_DSV4_MEGAMOE_SHARED_EXPERT_FUSION", "0")
        fuse = fuse_env in ("", "0") and par.pp == 1
        for shape in shapes:
            derived += formula("derive_deepgemm_for_build")(
                build=ctx.decision.software.only_build("deep_gemm") or "vllm-deepgemm-2.8.1",
                arch="sm100",
                shape=shape,
                ranks=par.ep,
                tokens_per_rank=par.max_num_batched_tokens,
                tokens_origin=TOKENS_ORIGIN,
                fuse_shared=fuse,
                env=ctx.user_env,
            )
        notes.append(
            f"vLLM {release.SERIES} never resolves --moe-backend auto to deep_gemm_mega_moe; the explicit flag "
            "selects it "
            "(moe-oracle's vLLM plug-in does the same for auto, after the same checks)."
        )
        if fuse and any(s.shared_experts for s in shapes):
            notes.append(
                "DeepSeek V4's shared expert is fused into the DeepGEMM launch (TP=1 or sequence parallel, and "
                "VLLM_DISABLE_DSV4_MEGAMOE_SHARED_EXPERT_FUSION unset): one extra combine slot per token."
            )
        if all2all:
            notes.append(f"--all2all-backend {all2all} is kept; the native mega path does its own dispatch/combine.")
    elif ctx.backend == "aiter_mega_moe":
        argv += ["--moe-backend", "aiter_mega_moe"]
        if all2all not in F.ALL2ALL_BACKENDS:
            all2all = "mori_high_throughput"
            notes.append(
                "--all2all-backend mori_high_throughput: AITER MegaMoE runs on MoRI shmem "
                "(vLLM: 'add --all2all-backend mori_high_throughput')."
            )
        env["VLLM_ROCM_USE_AITER"] = "1"
        env["VLLM_ROCM_USE_AITER_MOE"] = "1"
        mtpr_d = derive_aiter_mtpr(par.max_num_batched_tokens, TOKENS_ORIGIN, engine="vllm")
        derived.append(mtpr_d)
        heap = derive_mori_heap(
            runtimes=[(sh, aiter_capacities(mtpr_d.value, sh.experts // par.ep, engine="vllm")) for sh in shapes],
            ep=par.ep,
        )
        derived.append(heap)
        env["MORI_SHMEM_HEAP_SIZE"], kept = choose_mori_heap(heap.value, ctx.user_env.get("MORI_SHMEM_HEAP_SIZE"))
        notes.extend([kept] if kept else [])
        notes.append(
            "MegaMoEV2 sizes one runtime per distinct shape and capacity; the mtp layer group only builds one "
            "when speculative decoding (--speculative-config) is on, and shares it when its shape is equal."
        )
    if all2all:
        argv += ["--all2all-backend", all2all]
    if par.eplb:
        argv.append("--enable-eplb")
    argv += speculative_argv(ctx)
    notes += speculative_notes(ctx)
    total = per_rank_total(derived, dep.device.memory_gib)
    if total is not None:
        derived.append(total)
    if ctx.backend is None and not runtime:
        notes.append("No --moe-backend: vLLM's default (auto) path serves the MoE layers; see the reasons above.")
        if dep.device.vendor.value == "amd":
            notes.append(
                "On ROCm, vLLM's AITER MoE kernels are used only with VLLM_ROCM_USE_AITER=1 "
                "(the rocm/vllm image does not set it)."
            )

    commands: list[Command] = []
    placeholders: dict[str, str] = {}
    nodes = topo.nodes
    per_dp = par.tp * par.pp
    for replica in range(ctx.replicas):
        if nodes == 1:
            where = "any node" if ctx.replicas == 1 else f"replica {replica}: its node"
            commands.append(Command(tuple(argv), tuple(env.items()), replica=replica, node_rank=0, where=where))
            continue
        name, what = _placeholder(replica, ctx.replicas)
        placeholders[name] = what
        dp_local = topo.gpus_per_node // per_dp
        for rank in range(nodes):
            extra = [
                "--data-parallel-size-local",
                str(dp_local),
                "--data-parallel-address",
                "${" + name + "}",
                "--data-parallel-rpc-port",
                str(F.DEFAULT_RPC_PORT),
            ]
            if rank > 0:
                extra += ["--data-parallel-start-rank", str(rank * dp_local), "--headless"]
            where = f"node {rank}" if ctx.replicas == 1 else f"replica {replica}, node {rank}"
            if rank == 0:
                where += " (head: serves the API)"
            marked = (len(argv) + extra.index("${" + name + "}"),)
            commands.append(
                Command(
                    tuple(argv + extra),
                    tuple(env.items()),
                    replica=replica,
                    node_rank=rank,
                    where=where,
                    placeholder_words=marked,
                )
            )
    for cmd in commands:
        F.check_argv(cmd.argv)
    return EngineParts(
        commands=commands, derived=derived, notes=notes, placeholders=placeholders, version=release.VERSION
    )
