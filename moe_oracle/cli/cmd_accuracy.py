"""``moe-oracle accuracy``: each variant's numerics (emulation twin) against the FP32 reference."""

from __future__ import annotations

import json

import click

from moe_oracle.errors import BadInputError, excerpt


@click.command("accuracy")
@click.argument("model")
@click.option(
    "--variants",
    default="all",
    show_default=True,
    help="Comma list of variants (sm90_fp8xfp8, gfx950_a8w4, ...) or 'all'.",
)
@click.option("--tokens", type=int, default=64, show_default=True, help="Tokens routed through the layer.")
@click.option(
    "--scale",
    type=float,
    default=None,
    help="Shrink H, I and E by this factor (H/I kept multiples of 512/256). Default: H becomes 512. "
    "With --weights only the expert count is scaled.",
)
@click.option(
    "--weights",
    "weights_dir",
    type=click.Path(),
    default=None,
    help="Directory of .safetensors with the layer's experts (DeepSeek V4 or HF/GLM names).",
)
@click.option("--layer", type=int, default=None, help="Layer index (default: the main layer group).")
@click.option("--seed", type=int, default=0, show_default=True, help="Random seed of weights, tokens and routing.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
def accuracy(
    model: str,
    variants: str,
    tokens: int,
    scale: float | None,
    weights_dir: str | None,
    layer: int | None,
    seed: int,
    as_json: bool,
) -> None:
    """Run every variant's emulation on MODEL's MoE shapes and print its error against the FP32 reference.

    Weights are random BF16 masters (or --weights) quantized to each variant's weight format with
    the bit-exact quantizers; routing follows the model family (random logits, bias, hash table).
    calc_diff = 1 - 2 sum(xy) / sum(x^2 + y^2); rel_l2 = |y - ref| / |ref|. "ref" uses the same
    quantized weights; "master" the BF16 masters.
    """
    if tokens < 1:
        raise BadInputError(f"--tokens must be positive, got {tokens}")
    if scale is not None and not (0 < scale <= 1):
        raise BadInputError(f"--scale must be in (0, 1], got {scale}")
    if layer is not None and layer < 0:
        raise BadInputError(f"--layer must be >= 0, got {layer}")
    if weights_dir is not None:
        from pathlib import Path

        from moe_oracle.jsonfile import path_problem

        problem = path_problem(Path(weights_dir))
        if problem is not None:
            raise BadInputError(
                f"--weights {excerpt(weights_dir)} {problem}", fix="point --weights at a checkpoint directory"
            )
    names = None if variants.strip().lower() == "all" else [v for v in variants.split(",") if v.strip()]
    if names is not None and not names:
        raise BadInputError("--variants is empty", fix="pass 'all' or a comma list of variants")
    try:
        import torch  # noqa: F401
    except Exception:
        raise BadInputError(
            "moe-oracle accuracy needs torch", fix="pip install 'moe-oracle[torch]' (the CPU wheel is enough)"
        ) from None
    from moe_oracle.cli.progress import progress
    from moe_oracle.model.resolve import resolve_model
    from moe_oracle.runtime.accuracy import recipe_label, run_accuracy

    desc = resolve_model(model)
    with progress(f"accuracy of {desc.model}: emulating every variant against the FP32 reference"):
        report = run_accuracy(
            desc, variants=names, tokens=tokens, scale=scale, weights_dir=weights_dir, layer=layer, seed=seed
        )
    classes = _accuracy_classes()
    if as_json:
        doc = report.to_json()
        for row in doc["variants"]:
            row["accuracy_class"] = classes.get(row["key"])
        click.echo(json.dumps(doc, indent=2))
        return
    from rich.markup import escape
    from rich.table import Table

    from moe_oracle.cli.console import console, print_table

    con = console()
    con.print(
        f"[bold]{escape(report.model)}[/bold]  group {report.group} (layers {report.layers})  "
        f"H {report.hidden_size}  I {report.moe_intermediate_size}  E {report.num_experts}  top-{report.top_k}  "
        f"T {report.tokens}  scale {report.scale:g}  seed {report.seed}"
    )
    con.print(f"routing: {escape(report.routing)}; weights: {escape(report.weights_source)}")
    table = Table(header_style="bold", box=None, pad_edge=False)
    columns = ("variant", "class", "weights", "recipe", "calc_diff", "rel_l2", "calc_diff (master)", "rel_l2 (master)")
    for col in (*columns, "s"):
        table.add_column(col, overflow="fold")
    for row in report.rows:
        table.add_row(
            row.variant,
            classes.get(row.key, "?"),
            row.weights,
            recipe_label(row.recipe),
            f"{row.calc_diff:.2e}",
            f"{row.rel_l2:.2e}",
            f"{row.calc_diff_vs_master:.2e}",
            f"{row.rel_l2_vs_master:.2e}",
            f"{row.seconds:.1f}",
        )
    print_table(con, table)
    notes = sorted({r.weights_note for r in report.rows if "checkpoint is" in r.weights_note})
    for note in notes:
        con.print(f"note: {escape(note)}")


def _accuracy_classes() -> dict[str, str]:
    """``backend:variant`` -> accuracy class, from the declarations (see :mod:`moe_oracle.decide.accuracy_class`)."""
    from moe_oracle.decide.accuracy_class import accuracy_class
    from moe_oracle.registry import load_registry

    return {spec.key: accuracy_class(spec) for spec in load_registry().variants}
