"""``moe-oracle tune``: measure every eligible path on this machine's GPU and write a calibration file."""

from __future__ import annotations

import json
from typing import Any

import click

from moe_oracle.cli.command import FiniteFloat, command
from moe_oracle.cost.local import TimingBasis
from moe_oracle.errors import BadInputError, excerpt


@command("tune")
@click.argument("model")
@click.option(
    "--device",
    default="local",
    show_default=True,
    help="local: measure this machine's GPU. A catalogue device (h200, b200, ...) only with --dry-run.",
)
@click.option(
    "--tokens",
    "tokens_text",
    default="1,8,64,512,4096",
    show_default=True,
    help="Token counts per rank to measure, comma-separated (1..65536).",
)
@click.option("--software", default=None, help="Software profile the paths are judged under [installed].")
@click.option(
    "--skew",
    type=FiniteFloat(min=0.0, max=4.0),
    default=0.0,
    show_default=True,
    help="Routing skew S: router logits offset by -S ln(rank) over a random expert ranking, a Zipf-like load "
    "(0: every expert equally likely; 1.2: the hottest expert several times its share). The run is stamped with it; "
    "select weighs it with --workload ...@skew=S.",
)
@click.option(
    "--timing",
    type=click.Choice([b.value for b in TimingBasis]),
    default=TimingBasis.INTERLEAVED.value,
    show_default=True,
    help="interleaved: every path replayed in turn in each round (the basis of benchmarks/ and the package "
    "calibration); steady: each path alone after 2 s of its own replays, at the clock its own power draw sets (what a "
    "server running only that path sees; slower: 2 s more per path and T). The file is stamped with it and the cost "
    "basis reads '(date, each path alone)'.",
)
@click.option(
    "--out",
    default=None,
    help="Calibration file to write [the user cache: <cache>/calibration/<device>.json, merged with what is there].",
)
@click.option("--dry-run", is_flag=True, help="Print the measurement plan; measure nothing.")
@click.option("--json", "as_json", is_flag=True, help="Print the plan or the result as JSON.")
def tune(
    model: str,
    device: str,
    tokens_text: str,
    software: str | None,
    skew: float,
    timing: str,
    out: str | None,
    dry_run: bool,
    as_json: bool,
) -> None:
    """Measure MODEL's MoE layers on this GPU: every fused variant and non-fused path the oracle finds eligible,
    each layer group's distinct expert shape once, at full size with random weights, one GPU (EP 1).

    Timed as benchmarks/ time (CUDA graphs, L2 flushed, paths interleaved, median of 7 rounds x 5 replays, SM clock
    and board power recorded), or with --timing steady each path alone after 2 s of its own replays (median of 20,
    the clock and instant power read after each), each output checked against the FP32 reference first. A build,
    compile or launch failure is recorded as a limit of that path and token count. The file is stamped with device,
    driver, builds, timing basis, clocks and date; select, plan, compare, matrix and both plug-ins then cost with it
    where device and builds match ("measured on this machine (date)"). Exit 2: no GPU, no eligible path, or bad input.
    """
    from moe_oracle.inputs import resolve_software
    from moe_oracle.model.resolve import resolve_model
    from moe_oracle.tune.plan import make_plan, parse_tokens

    try:
        tokens = parse_tokens(tokens_text)
    except ValueError as exc:
        raise BadInputError(f"--tokens {excerpt(tokens_text)}: {exc}", fix="e.g. --tokens 1,8,64,512,4096") from None
    local = device.strip().lower() == "local"
    if not local and not dry_run:
        raise BadInputError(
            f"--device {excerpt(device)}: tune measures this machine's GPU", fix="use --device local, or add --dry-run"
        )
    sw, _ = resolve_software(software, device)
    plan = make_plan(resolve_model(model), device, sw, tokens, TimingBasis(timing))
    if plan.measurements == 0:
        why = "; ".join(f"{p.label}: {r}" for g in plan.groups for p in g.paths for r in p.refused.values())
        raise BadInputError(
            f"{plan.model} on {plan.device}: no eligible path to measure" + (f" ({excerpt(why)})" if why else ""),
            fix="check moe-oracle select for this model and device; install the kernel library a path needs",
        )
    if dry_run:
        click.echo(json.dumps(plan.to_json(), indent=1) if as_json else plan.text())
        return
    _run(plan, skew, out, as_json)


def _run(plan: Any, skew: float, out: str | None, as_json: bool) -> None:
    from moe_oracle.cli.progress import progress
    from moe_oracle.cost import local

    try:
        from moe_oracle.tune.measure import NoGpuError, measure
    except ImportError as exc:  # torch missing
        raise BadInputError(f"tune needs torch with CUDA: {exc}", fix="pip install torch (a CUDA build)") from None
    try:
        with progress(f"tune {plan.model}: {plan.measurements} measurements") as shown:
            cal, rows = measure(plan, skew=skew, on_step=shown.update)
    except NoGpuError as exc:
        raise BadInputError(str(exc), fix="run tune on the machine with the GPU") from None
    target = out or str(local.default_path(plan.device))
    older = None
    try:
        older = local.read(target)
    except (BadInputError, OSError):
        older = None
    merged = cal.merged_with(older) if out is None else cal
    why = cal.cannot_merge(older) if out is None and older is not None else None
    if why is not None:
        click.echo(f"note: {target} held a calibration not merged into this one ({why}): replaced", err=True)
    written = local.write(merged, target)
    if as_json:
        doc = {**merged.to_json(), "file": str(written), "plan": plan.to_json()}
        doc["rows"] = {g: [r.__dict__ for r in rs] for g, rs in rows.items()}
        click.echo(json.dumps(doc, indent=1))
        return
    click.echo(_table(plan, cal, rows))
    click.echo(f"wrote {written} ({len(merged.entries)} entries, {len(merged.limits)} limits)")


def _table(plan: Any, cal: Any, rows: dict[str, list[Any]]) -> str:
    stamp = cal.stamp
    lines = [
        f"{plan.model} on {cal.device_name} ({cal.device}), driver {stamp.get('driver')}, "
        f"{', '.join(f'{k} {v}' for k, v in cal.builds.items()) or 'no kernel build recognised'}, "
        f"torch {stamp.get('torch')}, {cal.date}; copy {stamp.get('copy_tb_s')} TB/s; us per layer call, median "
        "(per-round spread)",
    ]
    for g, rs in rows.items():
        labels = sorted({k for r in rs for k in r.us})
        lines.append(f"  group {g}: " + " | ".join(labels))
        for r in rs:
            best = min(r.us, key=r.us.__getitem__) if r.us else None
            cells = [f"{r.us[k]:9.1f} ({r.spread[k]:.0%})" if k in r.us else f"{'-':>15}" for k in labels]
            clk = r.condition.get("sm_clock_mhz") or []
            cond = f" {min(clk):.0f}-{max(clk):.0f} MHz" if clk else ""
            lines.append(f"    T {r.tokens:5d}: " + " ".join(cells) + f"  best {best}{cond}")
    for lim in cal.limits:
        lines.append(f"  limit: {lim.path} at T {lim.tokens}: {lim.reason}")
    return "\n".join(lines)
