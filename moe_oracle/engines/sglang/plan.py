"""SGLang 0.5.23 launch plans: ``python3 -m sglang.launch_server`` argv, environment, derived values.

SGLang's ``--tp-size`` is the whole model group; attention data parallelism is
``--attn-dp-size`` inside it (0.5.23 deprecates ``--enable-dp-attention``), so the oracle's
``tp x dp`` maps to ``--tp-size tp*dp --attn-dp-size dp``. ``--moe-a2a-backend megamoe``
forces ``ep_size = tp_size``. The per-step token budget per DP rank
(``--max-num-batched-tokens`` in moe-oracle terms) becomes ``--chunked-prefill-size
budget*dp`` (SGLang's chunk is split over attention-DP ranks), and
``SGLANG_OPT_DEEPGEMM_MEGA_MOE_NUM_MAX_TOKENS_PER_RANK`` must cover the per-rank share
(``arg_groups/mega_moe_hook.py`` validate_mega_moe_token_budget). On ROCm,
``SGLANG_AMD_USE_FLYDSL_MEGA_MOE=1`` routes megamoe to AITER MegaMoEV2 with a power-of-two
``SGLANG_AMD_FLYDSL_MEGA_MOE_MTPR``; SGLang does not size the MoRI heap, so the plan does.
"""

from __future__ import annotations

from moe_oracle.engines.sglang import flags as F
from moe_oracle.engines.sglang.budget import derive_sglang_token_cap
from moe_oracle.errors import BadInputError
from moe_oracle.plan.build import EngineParts, PlanContext, distinct_shapes, per_rank_total
from moe_oracle.plan.model import Command, Layout
from moe_oracle.plan.resources import (
    Derived,
    aiter_capacities,
    choose_mori_heap,
    derive_aiter_mtpr,
    derive_deepgemm,
    derive_mori_heap,
    formula,
)
from moe_oracle.spec.deployment import Deployment


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
        f"Run the {count} replicas as independent SGLang servers ({layout.label()} each) and put a router in "
        "front (e.g. sglang-router, a separate package: python3 -m sglang_router.launch_router --worker-urls "
        "http://<replica0>:30000 http://<replica1>:30000 ...), or any OpenAI-compatible load balancer."
    )


def build(ctx: PlanContext) -> EngineParts:
    dep = ctx.deployment
    par, topo = dep.parallel, dep.topology
    notes: list[str] = []
    derived: list[Derived] = []
    env: dict[str, str] = {}
    tp_size = par.tp * par.dp
    chunk = par.max_num_batched_tokens * par.dp
    argv = [*F.LAUNCH, "--model-path", ctx.model_arg, "--tp-size", str(tp_size)]
    if par.dp > 1:
        argv += ["--attn-dp-size", str(par.dp)]
    if par.ep > 1:
        argv += ["--ep-size", str(par.ep)]
    if par.pp > 1:
        argv += ["--pp-size", str(par.pp)]
    argv += ["--chunked-prefill-size", str(chunk)]
    shapes = distinct_shapes(ctx.decision)
    amd = dep.device.vendor.value == "amd"
    if ctx.backend is not None:
        argv += ["--moe-a2a-backend", "megamoe"]
    if ctx.backend == "deep_gemm_mega_moe":
        sm90 = dep.device.arch.value == "sm90"
        alignment = formula("deepgemm_token_alignment")("sm90" if sm90 else "sm100")
        cap = derive_sglang_token_cap(
            chunked_prefill_size=chunk, tp_size=tp_size, attn_dp_size=par.dp, alignment=alignment
        )
        derived.append(cap)
        env[cap.env or ""] = str(cap.value)
        for shape in shapes:
            derived += derive_deepgemm(
                flavour="sm90" if sm90 else "sm100",
                shape=shape,
                ranks=par.ep,
                tokens_per_rank=cap.value,
                tokens_origin="SGLANG_OPT_DEEPGEMM_MEGA_MOE_NUM_MAX_TOKENS_PER_RANK",
                env=ctx.user_env,
            )
        notes.append(
            f"--chunked-prefill-size {chunk} = {par.max_num_batched_tokens} tokens per attention-DP rank x "
            f"{par.dp}; the MegaMoE cap covers each rank's share (SGLang checks this at start for models without a "
            "fused-MoE fallback, e.g. DeepSeek V4 and NVFP4 checkpoints; others fall back per forward above the cap)."
        )
        notes.append(
            "The buffer formula is DeepGEMM's public SM"
            + ("90" if sm90 else "100")
            + " code at 8ddf7f96 (the sgl_deep_gemm front end); SGLang 0.5.23 pins sgl-deep-gemm 0.2.3.post2, "
            "whose layout was not read."
        )
    elif ctx.backend == "aiter_mega_moe":
        cap = derive_sglang_token_cap(chunked_prefill_size=chunk, tp_size=tp_size, attn_dp_size=par.dp, alignment=None)
        derived.append(cap)
        mtpr = derive_aiter_mtpr(cap.value, "per-rank chunked-prefill share (above)", engine="sglang")
        derived.append(mtpr)
        env["SGLANG_AMD_USE_FLYDSL_MEGA_MOE"] = "1"
        env["SGLANG_AMD_FLYDSL_MEGA_MOE_MTPR"] = str(mtpr.value)
        heap = derive_mori_heap(
            runtimes=[(sh, aiter_capacities(mtpr.value, sh.experts // par.ep, engine="sglang")) for sh in shapes],
            ep=par.ep,
        )
        derived.append(heap)
        env["MORI_SHMEM_HEAP_SIZE"], kept = choose_mori_heap(heap.value, ctx.user_env.get("MORI_SHMEM_HEAP_SIZE"))
        notes.extend([kept] if kept else [])
        notes.append(
            "SGLANG_AMD_USE_FLYDSL_MEGA_MOE=1 routes --moe-a2a-backend megamoe to aiter MegaMoEV2 (a8w4, intranode, "
            "EP <= 8, power-of-two SGLANG_AMD_FLYDSL_MEGA_MOE_MTPR <= 32768, no EPLB)."
        )
    if par.eplb:
        argv.append("--enable-eplb")
    total = per_rank_total(derived, dep.device.memory_gib)
    if total is not None:
        derived.append(total)
    if ctx.backend is None:
        notes.append(
            "No --moe-a2a-backend megamoe: SGLang's default MoE path serves the MoE layers; see the reasons above."
        )
        if amd:
            notes.append("SGLANG_AMD_USE_FLYDSL_MEGA_MOE is left unset (megamoe is not planned).")

    commands: list[Command] = []
    placeholders: dict[str, str] = {}
    for replica in range(ctx.replicas):
        if topo.nodes == 1:
            where = "any node" if ctx.replicas == 1 else f"replica {replica}: its node"
            commands.append(Command(tuple(argv), tuple(env.items()), replica=replica, node_rank=0, where=where))
            continue
        name = "HEAD_NODE_IP" if ctx.replicas == 1 else f"REPLICA{replica}_HEAD_IP"
        placeholders[name] = (
            "address of the first node"
            + ("" if ctx.replicas == 1 else f" of replica {replica}")
            + " (SGLang --dist-init-addr)"
        )
        for rank in range(topo.nodes):
            extra = [
                "--nnodes",
                str(topo.nodes),
                "--node-rank",
                str(rank),
                "--dist-init-addr",
                "${" + name + "}:" + str(F.DIST_INIT_PORT),
            ]
            where = f"node {rank}" if ctx.replicas == 1 else f"replica {replica}, node {rank}"
            commands.append(
                Command(tuple(argv + extra), tuple(env.items()), replica=replica, node_rank=rank, where=where)
            )
    for cmd in commands:
        F.check_argv(cmd.argv)
    return EngineParts(commands=commands, derived=derived, notes=notes, placeholders=placeholders, version=F.VERSION)
