"""``moe-oracle matrix``: every registered variant against every scenario, straight from ``decide``."""

from __future__ import annotations

import shlex
from typing import Any

import click

from moe_oracle.errors import BadInputError
from moe_oracle.output import write_text_file

FORMATS = ("table", "markdown", "json", "html")


@click.command("matrix")
@click.option("--models", default=None, help="Comma list of preset ids or config paths [every bundled preset].")
@click.option("--devices", default=None, help="Comma list of devices [h100,h200,b200,b300,gb200,mi300x,mi325x,mi355x].")
@click.option("--formats", default=None, help="Keep models whose main layer group has one of these weight formats.")
@click.option("--topologies", default=None, help="Comma list of dp8ep8, tp8, ep16x2 [all three].")
@click.option("--engine", "engines", default="none", show_default=True, help="none, vllm, sglang, or a comma list.")
@click.option(
    "--software",
    default="all",
    show_default=True,
    help="Software profile(s), comma list: installed, all, vllm-0.33.0, sglang-0.5.23, none.",
)
@click.option("--advisories", type=click.Path(dir_okay=False), default=None, help="Extra known-bad advisory file.")
@click.option(
    "--env",
    "env_items",
    multiple=True,
    metavar="KEY=VALUE",
    help="Environment the engine will see (default: this shell's relevant variables, as for select).",
)
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

    from moe_oracle.cli.options import env_from
    from moe_oracle.decide.advisories import load_advisories
    from moe_oracle.report.matrix import build_matrix
    from moe_oracle.report.scenarios import build_scenarios, split_list

    fmt = kw["fmt"]
    output = kw["output"]
    env = env_from(kw["env_items"])
    advisories = load_advisories(kw["advisories"])
    scenarios = build_scenarios(
        models=split_list(kw["models"], "--models"),
        devices=split_list(kw["devices"], "--devices"),
        topologies=split_list(kw["topologies"], "--topologies"),
        engines=split_list(kw["engines"], "--engines"),
        software=split_list(kw["software"], "--software"),
        formats=split_list(kw["formats"], "--formats"),
        env=env,
        advisories_file=kw["advisories"],
    )
    from moe_oracle.cli.progress import progress

    with progress(f"matrix: deciding {len(scenarios)} scenarios"):
        result = build_matrix(scenarios, advisories=advisories, command=_command(kw))
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


def _command(kw: dict[str, Any]) -> str:
    """The command line that regenerates this output (printed in generated headers)."""
    args = ["moe-oracle", "matrix"]
    for opt, key, default in (
        ("--models", "models", None),
        ("--devices", "devices", None),
        ("--formats", "formats", None),
        ("--topologies", "topologies", None),
        ("--engine", "engines", "none"),
        ("--software", "software", "all"),
        ("--advisories", "advisories", None),
    ):
        if kw.get(key) not in (None, default):
            args += [opt, str(kw[key])]
    for item in kw.get("env_items") or ():
        args += ["--env", item]
    if kw.get("fmt", "table") != "table":
        args += ["--format", kw["fmt"]]
    if kw.get("output"):
        args += ["--output", str(kw["output"])]
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

    from rich.console import Console

    buf = io.StringIO()
    render_table(result, Console(file=buf, width=120, highlight=False, soft_wrap=False, color_system=None))
    _write(buf.getvalue(), output)


def _write_docs(docs_dir: str, kw: dict[str, Any]) -> None:
    changed = [
        opt
        for opt, key, default in (
            ("--models", "models", None),
            ("--devices", "devices", None),
            ("--formats", "formats", None),
            ("--topologies", "topologies", None),
            ("--engine", "engines", "none"),
            ("--software", "software", "all"),
            ("--advisories", "advisories", None),
            ("--output", "output", None),
        )
        if kw.get(key) not in (None, default)
    ]
    if kw.get("env_items"):
        changed.append("--env")
    if kw.get("fmt") != "table":
        changed.append("--format")
    if changed:
        raise BadInputError(
            f"--docs writes the default matrix and cannot be combined with {', '.join(changed)}",
            fix="run moe-oracle matrix --docs DIR alone, or drop --docs.",
        )
    from moe_oracle.cli.docs import write_docs

    for path in write_docs(docs_dir):
        click.echo(f"wrote {path}", err=True)
