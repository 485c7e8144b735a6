"""``moe-oracle model``: print a model's MoE layer groups."""

from __future__ import annotations

import json
from typing import Any

import click

from moe_oracle.cli.command import command
from moe_oracle.cli.manual_options import description_from, manual_options


@command("model")
@click.argument("model", required=False)
@manual_options
@click.option("--json", "as_json", is_flag=True, help="Print the description as JSON (see docs/cli.md).")
def model(model: str | None, as_json: bool, **kw: Any) -> None:
    """Describe MODEL's MoE layer groups (preset id, Hub id in the local cache, directory, config.json, manual JSON),
    or a model given by the manual flags (--hidden-size, --moe-intermediate-size, --num-experts, --top-k,
    --weight-format)."""
    from moe_oracle.model.description_json import description_to_json

    desc = description_from(model, kw, "model")
    doc = description_to_json(desc)
    if as_json:
        click.echo(json.dumps(doc, indent=2))
        return
    from rich.markup import escape
    from rich.table import Table

    from moe_oracle.cli.console import console, print_table
    from moe_oracle.model.spans import layer_span

    con = console()
    con.print(
        f"[bold]{escape(desc.model)}[/bold]  architecture {desc.architecture}  model_type {desc.model_type}  "
        f"family {desc.family}"
    )
    con.print(f"source: {escape(desc.source)}")
    table = Table(header_style="bold", box=None, pad_edge=False)
    for col in ("group", "layers", "H", "I", "experts", "top-k", "shared", "weights", "activation", "routing"):
        table.add_column(col, overflow="fold")
    for g in desc.layer_groups:
        r = g.routing
        routing = r.scoring.value + (" hash" if r.hash else "") + (" +bias" if r.correction_bias else "")
        routing += (
            " renorm" if r.renormalize else ""
        ) + f" g{r.topk_groups}/{r.num_groups} x{r.routed_scaling_factor:g}"
        routing += " weight-on-input" if r.weight_on_input else ""
        shared = str(g.num_shared_experts)
        if g.num_shared_experts and g.shared_expert_width is not None:
            shared += f" w{g.shared_expert_width}"
        if g.shared_expert_gate:
            shared += " gated"
        if g.shared_expert_quant is not None:
            shared += f" ({g.shared_expert_quant.format.value})"
        act = g.activation.label() + (" +bias" if g.expert_bias else "")
        table.add_row(
            g.name,
            f"{layer_span(g.layers)} ({len(g.layers)})",
            str(g.hidden_size),
            str(g.moe_intermediate_size),
            str(g.num_experts),
            str(g.top_k),
            shared,
            g.weight_quant.label(),
            act,
            routing,
        )
    print_table(con, table)
    for line in desc.assumptions:
        con.print(f"assumed: {escape(line)}")
