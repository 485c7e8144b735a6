"""``moe-oracle probe``: this machine's GPUs, NVLink/XGMI domain, kernel libraries and environment."""

from __future__ import annotations

import json

import click

from moe_oracle.cli.command import command


@command("probe")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@click.option(
    "--engine",
    type=click.Choice(["vllm", "sglang"]),
    default=None,
    help="Check instead that this environment's ENGINE would load moe-oracle's plug-in (its entry point, the "
    "engine's allow-list and version, moe-oracle's switch); run it with the Python the engine runs in. Exit 2 when "
    "it would not.",
)
def probe(as_json: bool, engine: str | None) -> None:
    """Report what this machine offers the oracle. Never launches a kernel."""
    if engine is not None:
        _probe_plugin(engine, as_json)
        return
    from moe_oracle.cli.progress import progress
    from moe_oracle.probe_report import probe_machine

    with progress("probing GPUs, kernel libraries and environment"):
        report = probe_machine()
    if as_json:
        click.echo(json.dumps(report, indent=2))
        return
    from rich.markup import escape
    from rich.table import Table

    from moe_oracle.cli.console import console, print_table

    con = console()
    gpus = report["gpus"]
    present = [n for n, lib in report["libraries"].items() if lib["present"] and n in ("deep_gemm", "aiter", "mori")]
    if not gpus and not present:
        con.print(
            "[bold]Summary[/bold]: no GPU and no mega-MoE kernel library on this machine. Planning still works "
            "with named devices and profiles, e.g. `moe-oracle select MODEL --device b200 --software all`."
        )
    else:
        con.print(
            f"[bold]Summary[/bold]: {len(gpus)} GPU(s); mega-MoE libraries present: {', '.join(present) or 'none'}."
        )
    if gpus:
        con.print(f"[bold]GPUs[/bold] ({len(gpus)}, via {report['gpu_source']}): device profile '{report['device']}'")
        t = Table(header_style="bold", box=None, pad_edge=False)
        for col in ("index", "name", "arch", "memory GiB", "SMs/CUs"):
            t.add_column(col)
        for g in gpus:
            t.add_row(
                str(g["index"]),
                g["name"],
                g["arch"] or g["arch_label"],
                str(g["memory_gib"]),
                str(g["sm_count"] or "?"),
            )
        print_table(con, t)
    else:
        con.print("[bold]GPUs[/bold]: none found on this machine")
    for note in report["gpu_notes"]:
        con.print(f"  [dim]{escape(note)}[/dim]")
    con.print(f"[bold]NVLink/XGMI domain[/bold]: {report['domain']}")
    con.print()
    con.print("[bold]Kernel libraries[/bold]")
    t = Table(header_style="bold", box=None, pad_edge=False)
    for col in ("library", "found", "dist / version", "mega-MoE entry points or error"):
        t.add_column(col, overflow="fold")
    for name, lib in report["libraries"].items():
        found = "[green]yes[/green]" if lib["present"] else "[dim]no[/dim]"
        dist = " ".join(x for x in (lib["dist"], lib["version"]) if x) or "-"
        detail = ", ".join(lib["entry_points"]) if lib["present"] else (lib["error"] or "")
        if lib.get("build"):
            b = lib["build"]
            detail = f"build {b['name']}: {b['title']} ({b['caveat']}); " + detail
        elif lib["present"] and lib["entry_points"] and name == "deep_gemm":
            detail = "build not recognised (moe-oracle list builds); " + detail
        t.add_row(name, found, escape(dist), escape(detail or "-"))
    print_table(con, t)
    con.print()
    con.print("[bold]Environment[/bold] (unset variables omitted)")
    shown = False
    for group, values in report["environment"].items():
        for key, value in values.items():
            if value is not None:
                con.print(f"  {group}: {key}={escape(value)}")
                shown = True
    if not shown:
        con.print("  none of the variables that matter are set")
    con.print()
    con.print(
        "The 'installed' software profile is what `moe-oracle select MODEL --device local` uses by default; "
        "`--json` prints it in full."
    )


def _probe_plugin(engine: str, as_json: bool) -> None:
    """``probe --engine``: one line (or JSON); exit 2 (bad input: the environment) when the engine would not load it."""
    import os

    from moe_oracle.engines.plugin_probe import probe_plugin
    from moe_oracle.errors import ExitCode
    from moe_oracle.rules import Engine

    found = probe_plugin(Engine(engine), os.environ)
    click.echo(json.dumps(found.to_json(), indent=2) if as_json else found.line())
    if not found.loads:
        raise SystemExit(int(ExitCode.BAD_INPUT))
