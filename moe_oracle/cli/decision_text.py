"""Human-readable rendering of decisions (rich tables, readable at 120 columns).

Candidates built for another architecture are summarised on one line (their reason is always
``ARCH_UNSUPPORTED``); every other rejected candidate is listed with all its reasons and
fixes. ``--json`` carries every reason of every candidate.
"""

from __future__ import annotations

from typing import Any

from moe_oracle.cli.console import console, print_table
from moe_oracle.decide.advisories import nearby_advisories
from moe_oracle.decide.selection import Candidate, Decision, GroupDecision
from moe_oracle.model.spans import layer_span
from moe_oracle.rules import ReasonCode


def _group_title(g: GroupDecision) -> str:
    grp = g.group
    return (
        f"Layer group [bold]{grp.name}[/bold]: layers {layer_span(grp.layers)} ({len(grp.layers)}), "
        f"{grp.weight_quant.label()}, E{grp.num_experts} top{grp.top_k}, "
        f"H{grp.hidden_size} I{grp.moe_intermediate_size}"
    )


def _signature(g: GroupDecision) -> tuple[Any, ...]:
    return (
        g.chosen.key if g.chosen else None,
        tuple((c.spec.key, tuple((r.code, r.message) for r in c.reasons)) for c in g.candidates),
    )


def _other_arch(c: Candidate) -> bool:
    return bool(c.failures) and c.failures[0].code is ReasonCode.ARCH_UNSUPPORTED


def render_decision(decision: Decision, doc: dict[str, Any], *, all_reasons: bool = False) -> None:
    from rich.markup import escape
    from rich.table import Table

    con = console()
    dep = decision.deployment
    par, topo = dep.parallel, dep.topology
    con.print(
        f"[bold]{escape(decision.model.model)}[/bold] ({decision.model.architecture}) on "
        f"{topo.gpus_label(dep.device.name)} ({dep.device.arch.value}): {topo.nodes} node(s) x "
        f"{topo.gpus_per_node} GPUs, NVLink/XGMI domain {topo.domain_size}"
    )
    con.print(
        f"tp {par.tp}  dp {par.dp}  ep {par.ep}  pp {par.pp}  max tokens/rank {par.max_num_batched_tokens}  "
        f"engine {decision.engine.value}  software {decision.software.name} ({escape(doc['software']['origin'])})"
    )
    workload = escape(decision.workload.label)
    con.print(f"costs: us per MoE layer call, weighted over the workload ({workload}; tokens per rank)")
    if decision.override is not None:
        con.print(f"override: --moe-backend {decision.override}")
    for line in decision.model.assumptions:
        con.print(f"assumed: {escape(line)}")
    seen: dict[tuple[Any, ...], str] = {}
    for g in decision.groups:
        con.print()
        con.print(_group_title(g))
        sig = _signature(g)
        if g.chosen is not None:
            cost = f"  ~{g.chosen.cost.us:,.0f} us/call" if g.chosen.cost else ""
            con.print(
                f"  [green]chosen[/green]: [bold]{escape(g.chosen.label)}[/bold]{cost}  accuracy class "
                f"{g.chosen.accuracy_class}"
            )
            if g.chosen.cost:
                con.print(f"    cost basis: {escape(g.chosen.cost.basis)}")
            con.print(f"    validated: {escape(g.chosen.validation_text)}")
            if g.chosen.unreleased_build:
                con.print(f"    {escape(g.chosen.unreleased_build)}")
            for line in nearby_advisories(
                decision.question.advisories, g.chosen.spec, dep.device.arch.value, decision.engine.value
            ):
                con.print(f"    {escape(line)}")
        else:
            con.print(f"  [yellow]no fused backend[/yellow]; the engine uses: {escape(g.fallback or '')}")
        for note in g.notes:
            con.print(f"  note: {escape(note)}")
        if sig in seen and not all_reasons:
            con.print(f"  other candidates: as for layer group '{seen[sig]}'")
            continue
        seen.setdefault(sig, g.group.name)
        others = g.others
        skipped = [c for c in others if not all_reasons and _other_arch(c)]
        table = Table(show_header=True, header_style="bold", box=None, pad_edge=False)
        table.add_column("candidate", no_wrap=True)
        table.add_column("verdict", no_wrap=True)
        table.add_column("reason and fix", overflow="fold", max_width=82)
        for c in others:
            if c in skipped:
                continue
            if c.eligible:
                if any(note.startswith(f"{c.key} ") and "not chosen automatically" in note for note in g.notes):
                    text = f"accuracy class {c.accuracy_class}: not chosen automatically (see note)"
                else:
                    than = "the chosen one" if g.chosen is not None else "the non-fused path (see note)"
                    text = f"~{c.cost.us:,.0f} us/call, slower than {than}" if c.cost else ""
                    if c.accuracy_class != "standard":
                        text += f"; accuracy class {c.accuracy_class}"
                table.add_row(escape(c.label), "[green]eligible[/green]", escape(text))
                continue
            for i, r in enumerate(c.failures):
                table.add_row(
                    escape(c.label) if i == 0 else "",
                    f"[red]{r.code.value}[/red]",
                    escape(f"{r.message}. Fix: {r.remediation}"),
                )
        if table.row_count:
            print_table(con, table)
        if skipped:
            names = ", ".join(c.label for c in skipped)  # a conversion candidate says so (sm90_fp8xfp8 after ...)
            con.print(
                f"  [dim]ARCH_UNSUPPORTED on {dep.device.arch.value}: {names} (--all-reasons or --json for "
                "their other reasons)[/dim]"
            )
    con.print()
    con.print(f"fingerprint {doc['fingerprint']}  (save with --json, re-check with --replay FILE)")
