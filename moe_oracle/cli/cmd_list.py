"""``moe-oracle list``: the vocabulary (devices, software profiles, backends, presets, reason codes)."""

from __future__ import annotations

import json

import click

from moe_oracle.cli.command import command
from moe_oracle.rules.build import BuildSpec

WHAT = ("devices", "profiles", "backends", "builds", "presets", "reasons")


def build_row(build: BuildSpec) -> dict[str, object]:
    """One declared library build as ``list builds`` shows it: provenance, how it is recognised, its limits."""
    limits = [f"{ep}: {check.rule}" for ep, checks in build.limits.items() for check in checks]
    return {
        "build": build.name,
        "library": build.library,
        "provenance": build.provenance.value,
        "recognised by": build.recognised_by,
        "token alignment": build.alignment_text,
        "limits beyond the variants' checks": "; ".join(limits) or "-",
        "source": build.ref,
    }


@command("list")
@click.argument("what", type=click.Choice(WHAT))
@click.option("--json", "as_json", is_flag=True)
def list_(what: str, as_json: bool) -> None:
    """List known devices, software profiles, registered backends, kernel-library builds, bundled model presets or
    reason codes."""
    rows: list[dict[str, object]]
    if what == "devices":
        from moe_oracle.spec.device import DEVICES

        rows = [
            {
                "name": d.name,
                "arch": d.arch.value,
                "vendor": d.vendor.value,
                "memory_gib": d.memory_gib,
                "gpus_per_node": d.gpus_per_node,
                "domain_size": d.domain_size,
            }
            for d in DEVICES.values()
        ]
    elif what == "profiles":
        from moe_oracle.releases.profiles import named_profile, profile_names

        rows = [{"name": "installed", "description": "probed on this machine (default for --device local)"}]
        for name in profile_names():
            p = named_profile(name)
            assert p is not None
            rows.append({"name": name, "description": p.description})
    elif what == "backends":
        from moe_oracle.registry import load_registry

        reg = load_registry()
        rows = [
            {
                "backend": v.backend,
                "variant": v.variant,
                "target": v.target,
                "weights": v.weights,
                "activations": v.activations,
                "kernel": v.kernel,
            }
            for v in reg.variants
        ]
        for ep, err in reg.broken:
            click.echo(f"warning: backend entry point {ep} failed to load: {err}", err=True)
    elif what == "builds":
        from moe_oracle.software.catalog import known_builds

        rows = [build_row(b) for b in known_builds().values()]
    elif what == "presets":
        from moe_oracle.model.loader import list_presets

        rows = [{"model": p} for p in list_presets()]
    else:
        from moe_oracle.rules import ReasonCode

        rows = [{"code": c.value, "meaning": c.meaning} for c in ReasonCode]
    if as_json:
        click.echo(json.dumps(rows, indent=2))
        return
    from rich.table import Table

    from moe_oracle.cli.console import console, print_table

    table = Table(header_style="bold", box=None, pad_edge=False)
    for key in rows[0]:
        table.add_column(key, overflow="fold")
    for row in rows:
        table.add_row(*(str(v) for v in row.values()))
    print_table(console(), table)
