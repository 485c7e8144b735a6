"""SGLang 0.5.23 launch plans: ``python3 -m sglang.launch_server`` argv, environment, derived values.

SGLang's ``--tp-size`` is the whole model group; attention data parallelism is
``--attn-dp-size`` inside it (0.5.23 deprecates ``--enable-dp-attention``), so the oracle's
``tp x dp`` maps to ``--tp-size tp*dp --attn-dp-size dp``. ``--moe-a2a-backend megamoe``
forces ``ep_size = tp_size``. The per-step token budget per DP rank (``--max-num-batched-tokens``
in moe-oracle terms) becomes ``--chunked-prefill-size budget*dp``: SGLang divides it by the
attention-DP size (``engines/sglang/budget.py``). The DeepGEMM buffer is sized with sgl-deep-gemm
0.2.3.post2, the build SGLang 0.5.23 pins. On ROCm, ``SGLANG_AMD_USE_FLYDSL_MEGA_MOE=1`` routes
megamoe to AITER MegaMoEV2 with a power-of-two ``SGLANG_AMD_FLYDSL_MEGA_MOE_MTPR``; SGLang does not
size the MoRI heap, so the plan does.
"""

from __future__ import annotations

import json

from moe_oracle.engines.plugin_probe import probe_note
from moe_oracle.engines.routes import GroupRoute, backend_pins, group_routes
from moe_oracle.engines.sglang import budget as B
from moe_oracle.engines.sglang.resources import (
    PR323_BUILD,
    PR323_INSTALL,
    aiter_derived,
    deep_gemm_derived,
    engine_conversions,
)
from moe_oracle.engines.sglang.runner import RUNNER_FLAG, runner_pin
from moe_oracle.errors import BadInputError
from moe_oracle.fit.derived import Derived
from moe_oracle.fit.resources import (
    formula,
)
from moe_oracle.fit.server import Command, EngineParts, Layout, PlanContext, distinct_shapes, per_rank_total
from moe_oracle.fit.speculative import speculative_argv, speculative_notes
from moe_oracle.model.types import WeightFormat
from moe_oracle.releases import sglang as release
from moe_oracle.rules import Engine
from moe_oracle.rules.engine import ENGINE_ROUTE, MOE_ORACLE_ROUTE
from moe_oracle.spec.deployment import Deployment

#: The flag vocabulary of the engine release these plans and hooks are written for.
F = release.flags


def check_layout(dep: Deployment) -> None:
    par = dep.parallel
    if par.pp > 1 and par.dp > 1:
        raise BadInputError(
            f"--pp {par.pp} with --dp {par.dp}: the plan does not combine SGLang pipeline parallelism with "
            "attention data parallelism",
            fix="use --pp 1, or --dp 1.",
        )


def router_hint(count: int, layout: Layout) -> str:
    return (
        f"Run the {count} replicas as independent SGLang servers ({layout.label()} each, listening on "
        f"--host 0.0.0.0 --port {F.SERVER_PORT}: SGLang's default host is 127.0.0.1, unreachable from a router on "
        "another machine) and put a router in front on a port of its own (e.g. sglang-router, a separate package: "
        f"python3 -m sglang_router.launch_router --port {F.ROUTER_PORT} --worker-urls http://<replica0>:"
        f"{F.SERVER_PORT} http://<replica1>:{F.SERVER_PORT} ...; its default port {F.SERVER_PORT} is the server's), "
        "or any OpenAI-compatible load balancer. Splitting into domain-sized replicas is moe-oracle's rule (the "
        "EP group then stays inside one NVLink/XGMI domain); SGLang itself does not refuse megamoe across nodes."
    )


def _lossy_offers(ctx: PlanContext) -> list[str]:
    """The conversions SGLang performs itself that only the lossy opt-in holds back, offered with their numerics."""
    offers: list[str] = []
    for g in ctx.decision.groups:
        for cand in g.conversions:
            codes = {r.code.value for r in cand.failures}
            own = release.gates.PROFILE.conversion(cand.conversion) if cand.conversion is not None else None
            if own is None or codes != {"CONVERSION_LOSSY"}:
                continue
            line = (
                f"Option (layer group {g.group.name}): --allow-lossy-conversion plans {cand.spec.key} with "
                f"{own.switch}: {own.summary}; {own.condition}."
            )
            if line not in offers:
                offers.append(line)
    return offers


def _runtime_groups(ctx: PlanContext) -> list[GroupRoute]:
    """The layer groups moe-oracle's runtime serves inside SGLang (the plug-in's route), in decision order."""
    return [r for r in group_routes(ctx.decision) if r.route == MOE_ORACLE_ROUTE]


def _mixed_note(ctx: PlanContext, runtime: list[GroupRoute]) -> list[str]:
    """SGLang's megamoe is one flag for every MoE layer (``--moe-a2a-backend``): with a group on the plug-in,
    the groups whose choice is SGLang's own megamoe run its default MoE instead (pinned ``sglang``)."""
    served = {r.name for r in runtime}
    native = [r for r in group_routes(ctx.decision) if r.route == ENGINE_ROUTE and r.name not in served]
    if not native:
        return []
    names = ", ".join(f"{r.name} ({r.key})" for r in native)
    return [
        f"Layer group(s) {names} would run SGLang's own megamoe, but --moe-a2a-backend megamoe applies to every MoE "
        "layer and would take the layers moe-oracle's plug-in serves: they run SGLang's default MoE instead "
        "(pinned 'sglang'). Pin every group to SGLang (MOE_ORACLE_SGLANG_BACKEND=sglang) and pass "
        "--moe-a2a-backend megamoe to prefer SGLang's megamoe for them."
    ]


def _plugin(ctx: PlanContext, runtime: list[GroupRoute], env: dict[str, str], notes: list[str]) -> list[Derived]:
    """The plug-in's environment (``SGLANG_PLUGINS``, ``MOE_ORACLE_SGLANG_BACKEND``) and the DeepGEMM buffer
    moe-oracle's runtime allocates (one per shape, at model construction: before SGLang sizes its KV cache)."""
    par = ctx.deployment.parallel
    pins = backend_pins(ctx.decision, runtime)
    env["SGLANG_PLUGINS"] = F.PLUGIN_NAME
    env["MOE_ORACLE_SGLANG_BACKEND"] = pins if isinstance(pins, str) else json.dumps(pins, separators=(",", ":"))
    served = ", ".join(f"{r.name} ({r.key})" for r in runtime)
    others = [g.group.name for g in ctx.decision.groups if g.group.name not in {r.name for r in runtime}]
    notes.append(
        f"moe-oracle's runtime serves layer group(s) {served} inside SGLang: moe-oracle's plug-in (entry point "
        f"{F.PLUGIN_NAME} in the group sglang.srt.plugins, installed with moe-oracle; SGLANG_PLUGINS={F.PLUGIN_NAME} "
        "loads it and no other general plug-in) decides with the same rules in the launching process, refuses an "
        "explicit MOE_ORACLE_SGLANG_BACKEND that does not hold before any weight loads, and ships the decision "
        "to every scheduler process; there SGLang's FusedMoE is replaced through its HookRegistry, SGLang's quant "
        "method loads the checkpoint, and the experts move into the kernel layout after loading. No "
        "--moe-a2a-backend: SGLang's router and shared experts stay as they are."
    )
    notes.append(probe_note(Engine.SGLANG))
    if others:
        notes.append(f"SGLang's own MoE serves layer group(s) {', '.join(others)} (pinned 'sglang').")
    notes.extend(_mixed_note(ctx, runtime))
    sm90 = ctx.deployment.device.arch.value == "sm90"
    build = ctx.decision.software.only_build("deep_gemm")
    derived: list[Derived] = []
    for shape in distinct_shapes(ctx.decision):
        derived += formula("derive_deepgemm_for_build")(
            build=build,
            arch="sm90" if sm90 else "sm100",
            shape=shape,
            ranks=par.ep,
            tokens_per_rank=B.prefill_tokens_per_rank(
                ctx.memory.chunked_prefill_size or par.max_num_batched_tokens * par.dp, par.dp
            ),
            tokens_origin="per-rank prefill chunk (--chunked-prefill-size / --attn-dp-size); moe-oracle sizes one "
            "buffer per shape, allocated at model construction (before SGLang sizes its KV cache with "
            "--mem-fraction-static)",
            env=ctx.user_env,
        )
    if build == PR323_BUILD:
        notes.append(PR323_INSTALL)
    return derived


def _unfused_shared(ctx: PlanContext, runtime: list[GroupRoute], notes: list[str]) -> list[str]:
    """``--disable-shared-experts-fusion`` where the plug-in serves a group with shared experts: its layer takes the
    routed experts only (``engines/sglang/layer.py`` refuses fused ones). SGLang fuses the shared expert into the
    routed experts by default for DeepSeek V3/R1-shaped checkpoints and GLM-5 without EP on NVIDIA
    (``models/deepseek_v2.py:3325-3393``, ``glm4_moe.py:1284-1285``), GLM-4.5 without EP (``glm4_moe.py:1012-1034``);
    DeepSeek V4 only with ``--enforce-shared-experts-fusion`` (``deepseek_v4.py:4864-4890``). The flag turns it off
    wherever it would be on and changes nothing elsewhere (``arg_groups/fields/exec_.py:984-990``)."""
    served = {r.name for r in runtime}
    if not any(g.group.num_shared_experts for g in ctx.decision.groups if g.group.name in served):
        return []
    notes.append(
        "--disable-shared-experts-fusion: moe-oracle's layer serves the routed experts only and SGLang computes the "
        "shared expert beside it; SGLang would otherwise fuse the shared expert into the routed experts for "
        "DeepSeek-V3-shaped and GLM checkpoints without EP (models/deepseek_v2.py:3325-3393, glm4_moe.py:1012-1034); "
        "for the others the flag changes nothing."
    )
    return ["--disable-shared-experts-fusion"]


def _launch_advisories(ctx: PlanContext, env: dict[str, str], notes: list[str]) -> None:
    """The launch advisories for the variants this plan runs in SGLang (``decide/launch_advisories.py``): the engine
    switch each sets goes into the environment, and the note says why (MOA-2026-002: ``SGLANG_DEEPGEMM_PDL=0``)."""
    from moe_oracle.decide.launch_advisories import launch_advisories

    keys = [(g.chosen.spec.backend, g.chosen.spec.variant) for g in ctx.decision.groups if g.chosen is not None]
    for adv in launch_advisories("sglang", release.VERSION, keys):
        env.update(adv.env)
        notes.append(adv.note())


def _runner_pin(ctx: PlanContext, runtime: list[GroupRoute], notes: list[str]) -> list[str]:
    """``--moe-runner-backend triton`` where SGLang would resolve another runner for a launch moe-oracle's plug-in
    serves: its SM100 model overrides turn ``auto`` into ``flashinfer_trtllm`` for GLM-4.x, Qwen3-MoE and the
    DeepSeek family, whose loader then fills w13 as ``[up; gate]`` and pads the expert width
    (``engines/sglang/runner.py``). Pinned, SGLang loads the checkpoint's layout and its own layers run Triton."""
    if not runtime:
        return []
    formats = tuple(g.group.weight_format for g in ctx.decision.groups)
    override = runner_pin(ctx.deployment.device.arch.value, ctx.description.architecture, formats)
    if override is None:
        return []
    notes.append(
        f"{RUNNER_FLAG}: on {ctx.deployment.device.arch.value} SGLang's model override for "
        f"{ctx.description.architecture} turns --moe-runner-backend auto into {override.runner} ({override.source}), "
        "under which SGLang's loader fills w13 as [up; gate] and pads the expert width to 128 "
        "(layers/moe/fused_moe_triton/layer.py:513-521, 1375-1380) and TopK may hand over unrouted logits "
        "(layers/moe/topk.py:793-807). Pinned to Triton, SGLang loads the checkpoint's layout and routes as usual; "
        "its layers left to SGLang run its Triton MoE. moe-oracle's plug-in reads what SGLang resolved before any "
        "weight loads and refuses a layout it cannot read."
    )
    return RUNNER_FLAG.split()


def _nvfp4_runner(ctx: PlanContext, notes: list[str]) -> list[str]:
    """``--moe-runner-backend marlin`` where NVFP4 experts run on a pre-Blackwell GPU: SGLang's NVFP4 MoE method
    raises there unless the runner is ``auto`` or ``marlin`` (``layers/quantization/modelopt_quant.py:2377-2386``),
    and its DeepSeek V4 override turns ``auto`` into the Blackwell-only ``flashinfer_trtllm_routed`` for NVFP4
    checkpoints (``arg_groups/model_overrides/deepseek_v4.py:66-74``)."""
    if ctx.deployment.device.arch.value != "sm90":
        return []
    if not any(g.group.weight_format is WeightFormat.NVFP4 for g in ctx.decision.groups):
        return []
    notes.append(
        f"--moe-runner-backend marlin: SGLang {release.VERSION} runs NVFP4 experts before Blackwell only on the Marlin "
        "(weight-only FP4) runner; modelopt_quant.py:2377-2386 raises 'Current platform does not support NVFP4 "
        "quantization with the selected MoE backend' otherwise, and the DeepSeek V4 override "
        "(model_overrides/deepseek_v4.py:66-74) would pick the Blackwell-only flashinfer_trtllm_routed under auto."
    )
    return ["--moe-runner-backend", "marlin"]


def build(ctx: PlanContext) -> EngineParts:
    dep = ctx.deployment
    par = dep.parallel
    notes: list[str] = []
    derived: list[Derived] = []
    env: dict[str, str] = {}
    tp_size = par.tp * par.dp
    chunk = ctx.memory.chunked_prefill_size or par.max_num_batched_tokens * par.dp
    argv = [*F.LAUNCH, "--model-path", ctx.model_arg, "--tp-size", str(tp_size)]
    if par.dp > 1:
        argv += ["--attn-dp-size", str(par.dp)]
    if par.ep > 1:
        argv += ["--ep-size", str(par.ep)]
    if par.pp > 1:
        argv += ["--pp-size", str(par.pp)]
    argv += ["--chunked-prefill-size", str(chunk)]
    if ctx.memory.cuda_graph_max_bs is not None:  # chosen by the memory fit (SGLang's formula reserves less)
        argv += ["--cuda-graph-max-bs-decode", str(ctx.memory.cuda_graph_max_bs)]
    if ctx.memory_fraction is not None:  # the share the memory fit assumed (else SGLang picks its own)
        argv += ["--mem-fraction-static", f"{ctx.memory_fraction:g}"]
    if ctx.memory.max_num_seqs is not None:  # server-wide: SGLang divides it by the attention DP size
        # (model_executor/pool_configurator.py:956: max_running_requests // attn_dp_size per rank)
        argv += ["--max-running-requests", str(ctx.memory.max_num_seqs * par.dp)]
    if ctx.memory.max_model_len is not None:  # given, or what the KV cache holds
        argv += ["--context-length", str(ctx.memory.max_model_len)]
    amd = dep.device.vendor.value == "amd"
    runtime = _runtime_groups(ctx)
    if runtime:
        derived += _plugin(ctx, runtime, env, notes)
        argv += _unfused_shared(ctx, runtime, notes)
        argv += _runner_pin(ctx, runtime, notes)
    elif ctx.backend is not None:
        argv += F.a2a_argv(ctx.backend)
        if ctx.backend == "deep_gemm_mega_moe":
            derived += deep_gemm_derived(ctx, chunk, tp_size, env, notes)
            argv += [word for own in engine_conversions(ctx) for word in own.argv]
        elif ctx.backend == "aiter_mega_moe":
            derived += aiter_derived(ctx, chunk, env, notes)
    _launch_advisories(ctx, env, notes)
    if par.eplb:
        argv.append("--enable-eplb")
    argv += speculative_argv(ctx)
    notes += speculative_notes(ctx)
    argv += _nvfp4_runner(ctx, notes)
    if ctx.replicas > 1 or dep.topology.nodes > 1:
        # every node gets it: SGLang serves on 127.0.0.1 by default, unreachable from another machine
        argv += ["--host", "0.0.0.0", "--port", str(F.SERVER_PORT)]
    total = per_rank_total(derived, dep.device.memory_gib)
    if total is not None:
        derived.append(total)
    if ctx.backend is None and not runtime:
        notes.append(
            "No --moe-a2a-backend megamoe: SGLang's default MoE path serves the MoE layers; see the reasons above."
        )
        notes += _lossy_offers(ctx)
        if amd:
            notes.append("SGLANG_AMD_USE_FLYDSL_MEGA_MOE is left unset (megamoe is not planned).")
    return EngineParts(
        commands=_commands(ctx, argv, env),
        derived=derived,
        notes=notes,
        placeholders=_placeholders(ctx),
        version=release.VERSION,
    )


def _placeholders(ctx: PlanContext) -> dict[str, str]:
    if ctx.deployment.topology.nodes == 1:
        return {}
    out = {}
    for replica in range(ctx.replicas):
        out[_head(replica, ctx.replicas)] = (
            "address of the first node"
            + ("" if ctx.replicas == 1 else f" of replica {replica}")
            + " (SGLang --dist-init-addr)"
        )
    return out


def _head(replica: int, replicas: int) -> str:
    return "HEAD_NODE_IP" if replicas == 1 else f"REPLICA{replica}_HEAD_IP"


def _commands(ctx: PlanContext, argv: list[str], env: dict[str, str]) -> list[Command]:
    nodes = ctx.deployment.topology.nodes
    commands: list[Command] = []
    for replica in range(ctx.replicas):
        if nodes == 1:
            where = "any node" if ctx.replicas == 1 else f"replica {replica}: its node"
            commands.append(Command(tuple(argv), tuple(env.items()), replica=replica, node_rank=0, where=where))
            continue
        for rank in range(nodes):
            extra = ["--nnodes", str(nodes), "--node-rank", str(rank)]
            extra += [
                "--dist-init-addr",
                "${" + _head(replica, ctx.replicas) + "}:" + str(F.DIST_INIT_PORT),
            ]
            where = f"node {rank}" if ctx.replicas == 1 else f"replica {replica}, node {rank}"
            marked = (len(argv) + len(extra) - 1,)  # the --dist-init-addr value
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
    return commands
