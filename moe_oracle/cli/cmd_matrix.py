"""``moe-oracle matrix``: every registered variant against every scenario, straight from ``decide``."""

from __future__ import annotations

import shlex
from typing import Any

import click

from moe_oracle.cli.command import command
from moe_oracle.cli.options import flags_from, matrix_question_options, options_from
from moe_oracle.errors import BadInputError
from moe_oracle.output import write_text_file
from moe_oracle.releases import RELEASES

FORMATS = ("table", "markdown", "json", "html")


@command("matrix")
@click.option("--models", default=None, help="Comma list of preset ids or config paths [every bundled preset].")
@click.option("--devices", default=None, help="Comma list of devices [h100,h200,b200,b300,gb200,mi300x,mi325x,mi355x].")
@click.option("--formats", default=None, help="Keep models whose main layer group has one of these weight formats.")
@click.option("--topologies", default=None, help="Comma list of dp8ep8, tp8, ep16x2 [all three].")
@click.option("--engine", "engines", default="none", show_default=True, help="none, vllm, sglang, or a comma list.")
@click.option(
    "--software",
    default=None,
    help=f"Software profile(s), comma list: installed, all, {', '.join(r.name for r in RELEASES.values())}, none, ... "
    "[as for select: "
    "the engine's release profile for vllm/sglang, all for none].",
)
@matrix_question_options
@click.option("--format", "fmt", type=click.Choice(FORMATS), default="table", show_default=True)
@click.option("-o", "--output", type=click.Path(dir_okay=False, writable=True), default=None, help="Write to FILE.")
@click.option(
    "--docs",
    "docs_dir",
    type=click.Path(file_okay=False),
    default=None,
    help="Write the generated docs (capability-matrix.md/.html, variants.md, reason-codes.md) into DIR.",
)
def matrix(**kw: Any) -> None:
    """Judge every registered backend variant in every scenario (model x device x topology x engine x software).

    Each cell comes from the same decide() call as `moe-oracle select`: supported (★ = the oracle's
    choice), unverifiable, or rejected with its first reason code; --format json or html carry every reason.
    """
    docs_dir = kw.pop("docs_dir")
    if docs_dir is not None:
        _write_docs(docs_dir, kw)
        return

    from moe_oracle.report.matrix import build_matrix
    from moe_oracle.report.scenarios import build_scenarios, split_list

    fmt = kw.pop("fmt")
    output = kw.pop("output")
    command = _command(kw, fmt, output)
    axes = {key: kw.pop(key) for key in ("models", "devices", "topologies", "engines", "software", "formats")}
    options = options_from(kw)
    base = flags_from(kw)
    scenarios = build_scenarios(
        models=split_list(axes["models"], "--models"),
        devices=split_list(axes["devices"], "--devices"),
        topologies=split_list(axes["topologies"], "--topologies"),
        engines=split_list(axes["engines"], "--engines"),
        software=split_list(axes["software"], "--software"),
        formats=split_list(axes["formats"], "--formats"),
        base=base,
        options=options,
    )
    from moe_oracle.cli.progress import progress

    with progress(f"matrix: deciding {len(scenarios)} scenarios"):
        result = build_matrix(scenarios, command=command)
    if fmt == "table":
        _emit_table(result, output)
        return
    if fmt == "json":
        import json

        text = json.dumps(result.to_json(), indent=2, ensure_ascii=False) + "\n"
    elif fmt == "markdown":
        from moe_oracle.report.markdown import render_markdown

        text = render_markdown(result)
    else:
        from moe_oracle.report.html import render_html

        text = render_html(result)
    _write(text, output)


def _given_args(kw: dict[str, Any]) -> list[str]:
    """The options typed on the command line, as typed (in the order of ``matrix --help``)."""
    ctx = click.get_current_context()
    args: list[str] = []
    for param in ctx.command.params:
        if not isinstance(param, click.Option) or param.name in ("fmt", "output", "docs_dir"):
            continue
        if ctx.get_parameter_source(str(param.name)) is not click.core.ParameterSource.COMMANDLINE:
            continue
        value = kw.get(str(param.name))
        if param.is_flag:
            args.append(param.opts[0] if value else param.secondary_opts[0])
        else:
            items = (value or ()) if param.multiple else (value,)
            args += [x for item in items for x in (param.opts[0], str(item))]
    return args


def _command(kw: dict[str, Any], fmt: str, output: str | None) -> str:
    """The command line that regenerates this output (printed in generated headers)."""
    args = ["moe-oracle", "matrix", *_given_args(kw)]
    if fmt != "table":
        args += ["--format", fmt]
    if output:
        args += ["--output", str(output)]
    return shlex.join(args)


def _write(text: str, output: str | None) -> None:
    if output is None:
        click.echo(text, nl=False)
        return
    write_text_file(output, text, "--output")
    click.echo(f"wrote {output}", err=True)


def _emit_table(result: Any, output: str | None) -> None:
    from moe_oracle.report.text import render_table

    if output is None:
        from moe_oracle.cli.console import console

        render_table(result, console())
        return
    import io
    import os

    from rich.console import Console

    from moe_oracle.cli.console import terminal_width

    buf = io.StringIO()
    width = terminal_width() if os.environ.get("COLUMNS") else None  # a file: 120 unless COLUMNS says
    render_table(result, Console(file=buf, width=width or 120, highlight=False, soft_wrap=False, color_system=None))
    _write(buf.getvalue(), output)


def _write_docs(docs_dir: str, kw: dict[str, Any]) -> None:
    changed = [arg for arg in _given_args(kw) if arg.startswith("--")]
    if kw.get("fmt") != "table":
        changed.append("--format")
    if kw.get("output") is not None:
        changed.append("--output")
    if changed:
        raise BadInputError(
            f"--docs writes the default matrix and cannot be combined with {', '.join(dict.fromkeys(changed))}",
            fix="run moe-oracle matrix --docs DIR alone, or drop --docs.",
        )
    from moe_oracle.cli.docs import write_docs
    from moe_oracle.cost.local import use_file

    use_file("none")  # the generated docs are the package's answer, never this machine's calibration

    for path in write_docs(docs_dir):
        click.echo(f"wrote {path}", err=True)
