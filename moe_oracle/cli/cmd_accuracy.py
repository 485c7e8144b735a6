"""``moe-oracle accuracy``: each variant's numerics (emulation twin) against the FP32 reference."""

from __future__ import annotations

import json
from typing import Any

import click

from moe_oracle.cli.command import FiniteFloat, command
from moe_oracle.errors import BadInputError, excerpt
from moe_oracle.runtime.tolerance import MAX_TOKENS, verdict


@command("accuracy")
@click.argument("model")
@click.option(
    "--variants",
    default="all",
    show_default=True,
    help="Comma list of variants (sm90_fp8xfp8, gfx950_a8w4, ...) or 'all'.",
)
@click.option(
    "--tokens",
    type=click.IntRange(1, MAX_TOKENS),
    default=64,
    show_default=True,
    help=f"Tokens routed through the layer (1..{MAX_TOKENS}; a run that would not fit in free memory is refused).",
)
@click.option(
    "--scale",
    type=FiniteFloat(),
    default=None,
    help="Shrink H, I and E by this factor in (0, 1] (H/I kept multiples of 512/256). Default: H becomes 512. "
    "With --weights only the expert count is scaled. A run that would not fit in free memory is refused.",
)
@click.option(
    "--weights",
    "weights_dir",
    type=click.Path(),
    default=None,
    help="Directory of .safetensors with the layer's experts (DeepSeek V4 or HF/GLM names).",
)
@click.option("--layer", type=click.IntRange(min=0), default=None, help="Layer index (default: the main layer group).")
@click.option(
    "--seed",
    type=click.IntRange(0, 2**64 - 1),
    default=0,
    show_default=True,
    help="Random seed of weights, tokens and routing (0..2**64-1).",
)
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
    if scale is not None and not (0 < scale <= 1):
        raise BadInputError(f"--scale must be in (0, 1], got {scale}", fix="pass a factor such as 0.25")
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
    from moe_oracle.runtime.accuracy import run_accuracy

    desc = resolve_model(model)
    with progress(f"accuracy of {desc.model}: preparing weights") as shown:

        def on_variant(done: int, total: int, variant: str) -> None:
            shown.update(f"accuracy of {desc.model}: variant {done + 1}/{total} ({variant})")

        report = run_accuracy(
            desc,
            variants=names,
            tokens=tokens,
            scale=scale,
            weights_dir=weights_dir,
            layer=layer,
            seed=seed,
            on_variant=on_variant,
        )
    classes = _accuracy_classes()
    if as_json:
        doc = report.to_json()
        for row in doc["variants"]:
            row["accuracy_class"] = classes.get(row["key"])
            row["tolerance"], row["verdict"] = verdict(row["recipe"], row["calc_diff"])
        click.echo(json.dumps(doc, indent=2))
        return
    _print_report(report, classes)


def _print_report(report: Any, classes: dict[str, str]) -> None:
    """The header, one row per variant with its verdict, the stated tolerance, and the notes; the recipe column
    only where the terminal is wide enough for it (always in --json)."""
    from rich.markup import escape
    from rich.table import Table

    from moe_oracle.cli.console import console, print_table
    from moe_oracle.runtime.accuracy import recipe_label
    from moe_oracle.runtime.tolerance import TOLERANCE

    con = console()
    con.print(
        f"[bold]{escape(report.model)}[/bold]  group {report.group} (layers {report.layers})  "
        f"H {report.hidden_size}  I {report.moe_intermediate_size}  E {report.num_experts}  top-{report.top_k}  "
        f"T {report.tokens}  scale {report.scale:g}  seed {report.seed}"
    )
    con.print(f"routing: {escape(report.routing)}; weights: {escape(report.weights_source)}")
    # deliberate abbreviation by width: the recipe from 140 columns, the rel_l2 pair from 100; below, the
    # calc_diff pair and the verdict (the rest is in --json)
    recipe, rel = con.width >= 140, con.width >= 100
    table = Table(header_style="bold", box=None, pad_edge=False)
    columns = [
        "variant",
        "class",
        "weights",
        *(["recipe"] if recipe else []),
        "calc_diff",
        *(["rel_l2"] if rel else []),
    ]
    columns += ["vs master", *(["rel_l2 vs master"] if rel else []), "limit", "verdict", "s"]
    for col in columns:
        table.add_column(col, overflow="fold")
    for row in report.rows:
        tolerance, result = verdict(row.recipe, row.calc_diff)
        table.add_row(
            row.variant,
            classes.get(row.key, "?"),
            row.weights,
            *([recipe_label(row.recipe)] if recipe else []),
            f"{row.calc_diff:.2e}",
            *([f"{row.rel_l2:.2e}"] if rel else []),
            f"{row.calc_diff_vs_master:.2e}",
            *([f"{row.rel_l2_vs_master:.2e}"] if rel else []),
            "?" if tolerance is None else f"{tolerance:.0e}",
            {"ok": "ok", "over": "OVER"}.get(result, "?"),
            f"{row.seconds:.1f}",
        )
    print_table(con, table)
    limits = ", ".join(f"{fmt.value} {value:.0e}" for fmt, value in TOLERANCE.items())
    con.print(
        "verdict: ok when calc_diff (against the FP32 reference on the same quantized weights) is within the limit "
        f"of the variant's coarsest activation format ({limits}; docs/runtime.md). vs master: calc_diff against "
        "the BF16 master weights (adds the weight format's error)."
    )
    if not recipe:
        con.print("recipes" + ("" if rel else " and rel_l2") + ": --json, or a wider terminal")
    notes = sorted({r.weights_note for r in report.rows if "checkpoint is" in r.weights_note})
    for note in notes:
        con.print(f"note: {escape(note)}")
    for line in report.refused:
        con.print(f"refused: {escape(line)}")


def _accuracy_classes() -> dict[str, str]:
    """``backend:variant`` -> accuracy class, from the declarations (see :mod:`moe_oracle.decide.accuracy_class`)."""
    from moe_oracle.decide.accuracy_class import accuracy_class
    from moe_oracle.registry import load_registry

    return {spec.key: accuracy_class(spec) for spec in load_registry().variants}
