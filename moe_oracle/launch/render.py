"""Plain-text and Markdown renderings of a :class:`LaunchPlan` (copy-paste friendly: commands are never wrapped)."""

from __future__ import annotations

from moe_oracle.fit.derived import Derived
from moe_oracle.launch.model import LaunchPlan
from moe_oracle.spec.deployment import Topology
from moe_oracle.terminal_text import wrap_line


def _engine_name(plan: LaunchPlan) -> str:
    return {"vllm": "vLLM", "sglang": "SGLang"}.get(plan.engine, plan.engine) + f" {plan.engine_version}"


def headline(plan: LaunchPlan) -> str:
    req = plan.requested
    where = Topology(gpus_per_node=req.gpus_per_node, nodes=req.nodes, domain_size=req.domain_size)
    return f"{plan.model} on {where.gpus_label(plan.device)} ({plan.arch}) with {_engine_name(plan)}"


def summary_lines(plan: LaunchPlan) -> list[str]:
    out = []
    if plan.fused:
        out.append(f"Fused backend: {plan.backend} ({plan.variant}) for every MoE layer group.")
    else:
        out.append("Fused backend: none eligible; the plan is the engine's default command.")
        if plan.default_command_reason:
            out.append(f"  why: {plan.default_command_reason}")
    rep = plan.replicas
    if rep is not None:
        if rep.adopted:
            out.append(
                f"Layout: {rep.count} replicas of {rep.layout.label()} (each inside one NVLink/XGMI domain) instead of "
                f"the requested {rep.requested.label()}, which {rep.why}."
            )
        else:
            out.append(f"Layout: {plan.layout.label()} as requested (replicas considered, not adopted).")
    else:
        out.append(f"Layout: {plan.layout.label()}, {plan.layout.nodes} node(s) x {plan.layout.gpus_per_node} GPUs.")
    if plan.layout_why:
        out.append(f"  {plan.layout_why}")
    if plan.settings_why:
        out.append(f"  {plan.settings_why}")
    if plan.fit is not None:
        kv = plan.fit.kv_bytes / (1 << 30)
        longest = f", longest sequence {plan.fit.max_context:,} tokens" if plan.fit.max_context is not None else ""
        counted = (
            f"{plan.fit.needed_bytes / (1 << 30):.1f} GiB per rank, {kv:.1f} GiB KV cache{longest}"
            if plan.fit.weighed_all
            else f"{plan.fit.needed_bytes / (1 << 30):.1f} GiB per rank counted"
        )
        out.append(
            f"Memory: {plan.fit.verdict} ({counted}; engine share {plan.fit.share.fraction:g}"
            + (f" = {plan.fit.share.flag}" if plan.fit.share.flag else "")
            + ")"
        )
    out.append(
        f"Software profile: {plan.software} ({plan.software_origin}); decision fingerprint {plan.fingerprint}"
        + (f"; override --moe-backend {plan.override}" if plan.override else "")
    )
    return out


def decision_lines(plan: LaunchPlan, *, max_rejected: int | None = None, all_reasons: bool = False) -> list[str]:
    """The decision per layer group, then the rejected candidates of the first group: each with its first reason
    (and the other codes), candidates built only for another GPU on one line; ``all_reasons`` (``--all-reasons``)
    lists every reason of every rejected candidate with its fix."""
    out = []
    shown_validation: set[str] = set()
    for g in plan.groups:
        if g.get("built") is False:
            out.append(f"layer group {g['name']} (layers {g['layers']}): not built (speculative decoding off)")
            continue
        chosen = g.get("chosen_label") or g["chosen"] or "no fused backend"
        if g.get("accuracy_class"):
            chosen += f" (accuracy class {g['accuracy_class']})"
        out.append(f"layer group {g['name']} (layers {g['layers']}): {chosen}")
        if g.get("validation") and g["validation"] not in shown_validation:
            shown_validation.add(g["validation"])
            out.append(f"  validated: {g['validation']}")
        if g.get("unreleased_build") and g["unreleased_build"] not in shown_validation:
            shown_validation.add(g["unreleased_build"])
            out.append(f"  {g['unreleased_build']}")
    arch_only = [] if all_reasons else [r["candidate"] for r in plan.rejected if r["codes"] == ["ARCH_UNSUPPORTED"]]
    shown = [r for r in plan.rejected if r["candidate"] not in arch_only]
    if shown or arch_only:
        out.append(f"rejected for layer group {plan.groups[0]['name']}:")
    for r in shown[:max_rejected]:
        if all_reasons:
            out.append(f"  {r['candidate']}:")
            out += [f"    [{x['code']}] {x['message']}. Fix: {x['fix']}" for x in r["reasons"]]
            continue
        first = r["reasons"][0]
        more = [code for code in dict.fromkeys(r["codes"]) if code != first["code"]]
        tail = f" (also: {', '.join(more)})" if more else ""
        out.append(f"  {r['candidate']}: [{first['code']}] {first['message']}{tail}")
    if arch_only:
        out.append(f"  ARCH_UNSUPPORTED only (built for another GPU): {', '.join(arch_only)}")
    return out


def replica_lines(plan: LaunchPlan) -> list[str]:
    rep = plan.replicas
    if rep is None:
        return []
    out = [
        f"Requested layout {rep.requested.label()} on {rep.requested.nodes} node(s) is refused for every fused "
        f"backend: its expert parallelism {rep.why}."
    ]
    for line in rep.refused_reasons[:4]:
        out.append(f"  {line}")
    if rep.refused_fingerprint:
        out.append(f"  (decision for the requested layout: {rep.refused_fingerprint})")
    if rep.adopted:
        out.append(f"Replica plan: {rep.count} x {rep.layout.label()} ({rep.layout.nodes} node(s) each).")
        out.append(f"Router: {rep.router_hint}")
    else:
        for why in rep.why_not:
            if rep.count:
                out.append(f"Replicas of {rep.layout.label()} were considered but not adopted: {why}")
            else:
                out.append(f"Replicas were not possible: {why}")
    return out


def derived_lines(d: Derived) -> list[str]:
    out = [f"{d.label} = {d.display}"]
    if d.env:
        out.append(f"  sets: {d.env}")
    out.append(f"  formula: {d.formula}")
    ins = ", ".join(f"{k}={v}" for k, v in d.inputs.items())
    out.append(f"  inputs: {ins}")
    if d.terms:
        out.append("  terms: " + ", ".join(f"{name} {value:,}" for name, value in d.terms if value))
    out.append(f"  source: {d.source}")
    if d.assumption:
        out.append(f"  assumption: {d.assumption}")
    return out


def command_blocks(plan: LaunchPlan) -> list[tuple[str, str]]:
    return [(cmd.where, cmd.shell()) for cmd in plan.commands]


def render_text(plan: LaunchPlan, *, all_reasons: bool = False, width: int | None = None) -> str:
    """The plan as text; ``width``: wrap its prose to that many columns (the terminal's), the launch commands
    left whole (they are pasted: one flag per line already, never re-wrapped)."""
    lines = [f"# moe-oracle plan: {headline(plan)}", ""]
    if plan.prerequisites:
        lines += ["## Before you start", *(f"- {p}" for p in plan.prerequisites), ""]
    lines += summary_lines(plan)
    for w in plan.warnings:
        lines.append(f"warning: {w}")
    lines += ["", "## Decision"]
    lines += decision_lines(plan, all_reasons=all_reasons)
    if plan.replicas is not None:
        lines += ["", "## Expert parallelism across domains"]
        lines += replica_lines(plan)
    lines += ["", "## Launch"]
    if plan.placeholders:
        lines.append("Set first: " + "; ".join(f"{k} = {v}" for k, v in plan.placeholders.items()))
    verbatim: set[int] = set()
    for where, shell in command_blocks(plan):
        lines.append(f"# {where}")
        verbatim.add(len(lines))
        lines.append(shell)
    if plan.fit is not None:
        lines += ["", "## Memory fit"]
        lines += plan.fit.lines()
    if plan.derived:
        lines += ["", "## Derived quantities"]
        for d in plan.derived:
            lines += derived_lines(d)
    if plan.notes:
        lines += ["", "## Notes"]
        lines += [f"- {n}" for n in plan.notes]
    if width is not None:
        lines = [out for n, line in enumerate(lines) for out in ([line] if n in verbatim else wrap_line(line, width))]
    return "\n".join(lines) + "\n"


def render_markdown(plan: LaunchPlan, *, title: str, regenerate: str, comparison: list[str] | None = None) -> str:
    lines = [
        f"# {title}",
        "",
        f"<!-- generated by `{regenerate}`; do not edit by hand -->",
        "",
        f"**{headline(plan)}**",
        "",
    ]
    if plan.prerequisites:
        lines += ["Before you start:", "", *(f"- {p}" for p in plan.prerequisites), ""]
    lines += [f"- {s.strip()}" for s in summary_lines(plan)]
    for w in plan.warnings:
        lines.append(f"- warning: {w}")
    lines += ["", "## Decision", "", "```text", *decision_lines(plan), "```"]
    if plan.replicas is not None:
        lines += ["", "## Expert parallelism across domains", "", "```text", *replica_lines(plan), "```"]
    lines += ["", "## Launch", ""]
    if plan.placeholders:
        for k, v in plan.placeholders.items():
            lines.append(f"- `{k}`: {v}")
        lines.append("")
    for where, shell in command_blocks(plan):
        lines += [f"{where}:", "", "```bash", shell, "```", ""]
    if plan.fit is not None:
        lines += ["## Memory fit", "", "```text", *plan.fit.lines(), "```", ""]
    if plan.derived:
        lines += ["## Derived quantities", "", "```text"]
        for d in plan.derived:
            lines += derived_lines(d)
        lines += ["```", ""]
    if plan.notes:
        lines += ["## Notes", ""]
        lines += [f"- {n}" for n in plan.notes]
        lines.append("")
    if comparison:
        lines += ["## With `--software all`", ""]
        lines += comparison
        lines.append("")
    return "\n".join(lines).rstrip() + "\n"
