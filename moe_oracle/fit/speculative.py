"""The speculative-decoding part of a launch plan: the engine's flags when on, the offer and its memory when off.

Layer groups built only under speculative decoding (MTP, draft; :mod:`moe_oracle.releases.speculative`)
take part in the decision and the buffer sizes only when ``--speculative mtp`` is planned; otherwise the plan
offers that setup with the expert memory it adds.
"""

from __future__ import annotations

from moe_oracle.fit.server import PlanContext
from moe_oracle.model.spans import layer_span
from moe_oracle.releases.speculative import LAUNCHES, flag_built
from moe_oracle.shell import shell_join

GIB = 1 << 30


def speculative_argv(ctx: PlanContext) -> list[str]:
    """The engine's speculative-decoding flags when the plan builds the MTP layers, else nothing."""
    launch = LAUNCHES.get(ctx.decision.engine)
    if launch is None or ctx.deployment.speculative != "mtp":
        return []
    if not any(flag_built(g) for g in ctx.description.layer_groups):
        return []
    return list(launch.argv)


def speculative_notes(ctx: PlanContext) -> list[str]:
    """What the plan says about the MTP layers: built (and decided) with the flags, or offered with their memory."""
    launch = LAUNCHES.get(ctx.decision.engine)
    if launch is None:
        return []
    flagged = [g for g in ctx.description.layer_groups if flag_built(g)]
    if not flagged:
        if ctx.deployment.speculative == "mtp":
            return [f"--speculative mtp: {ctx.description.model} declares no MTP layers; no speculative flags added."]
        return []
    names = ", ".join(f"{g.name} (layers {layer_span(g.layers)})" for g in flagged)
    ep = ctx.deployment.parallel.ep
    extra = sum(len(g.layers) * (g.num_experts // ep) * g.expert_weight_bytes() for g in flagged)
    if ctx.deployment.speculative == "mtp":
        return [
            f"Speculative decoding with the model's MTP layers ({' '.join(launch.argv[:2])} ...): the engine builds "
            f"layer group(s) {names}, so they take part in the decision and the buffer sizes above; their routed "
            f"experts add {extra / GIB:.2f} GiB per rank ({launch.source})."
        ]
    return [
        f"Speculative decoding is off (the engine's default): layer group(s) {names} are not built, so they neither "
        f"decide the backend nor take memory ({launch.source}). Option: --speculative mtp plans the engine's MTP "
        f"setup ({shell_join(launch.argv)}); their routed experts add {extra / GIB:.2f} GiB per rank, plus a symmetric "
        "buffer of their own where their shape or kernel differs from the other groups'."
    ]
