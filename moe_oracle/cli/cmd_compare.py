"""``moe-oracle compare``: two or more deployments of one model side by side, each planned as ``plan`` plans it.

Every column is ``moe-oracle plan MODEL <shared flags> <the column's flags>``: the same options, defaults
and decision, so each column's fingerprint is the one ``plan`` (and ``select`` with the same flags)
prints. The rows: engine, device, layout, software profile, the chosen path per layer group and how it
was validated, the expected cost of the main layer group at the same token points for every column
(with the basis of each figure), the memory fit and KV-cache headroom, and the fingerprint.
"""

from __future__ import annotations

import json
import re
import shlex
from dataclasses import dataclass
from typing import Any

import click

from moe_oracle.cli.command import FlagsValue, command
from moe_oracle.errors import BadInputError, DeploymentDoesNotFitError, OverrideRefusedError, excerpt

#: Tokens per rank at which every column's cost is given (decode-sized and prefill-sized steps).
DEFAULT_POINTS = (32, 256, 2048, 8192)


@dataclass
class Column:
    """One deployment: its flags and its plan, or the one-line reason it has none."""

    label: str
    args: list[str]
    plan: Any = None
    error: str | None = None
    #: why there is no plan, in a word for the table: ``DOES NOT FIT`` or ``OVERRIDE REFUSED``
    refused: str | None = None


#: ``plan`` options that choose what ``plan`` prints or writes, not the deployment: compare prints its own table
#: (``--json`` for the whole comparison), so inside a column they would be dropped or would print help instead.
_NOT_COLUMN_FLAGS = {
    "as_json": "compare --json prints the whole comparison (every column's plan included) as one JSON document",
    "examples_dir": "--examples writes the generated example plans; run moe-oracle plan --examples DIR for that",
    "check": "--check goes with plan --examples",
}
_HELP_WORDS = ("--help", "-h")


def _refuse_output_flags(args: list[str], where: str) -> None:
    """Exit 2 for a word in a column's flags (or the shared flags) that is about output, not the deployment."""
    from moe_oracle.cli.cmd_plan import plan as plan_command

    spellings = {
        name: param.name for param in plan_command.params if param.name in _NOT_COLUMN_FLAGS for name in param.opts
    }
    for word in args:
        if word == "--":
            break
        name = word.split("=", 1)[0]
        if name in _HELP_WORDS:
            raise BadInputError(
                f"{where} has {word}: a column's flags are planned, and help is not a deployment",
                fix="see moe-oracle plan --help for the flags a column takes, and drop --help from the column",
            )
        if name in spellings:
            raise BadInputError(
                f"{where} has {name}, which a column cannot take: {_NOT_COLUMN_FLAGS[spellings[name]]}",
                fix=f"drop {name} from the column" + (" and pass --json to compare" if name == "--json" else ""),
            )


def _plan_for(model: str, args: list[str]) -> Any:
    """The :class:`LaunchPlan` ``moe-oracle plan MODEL *args`` builds (same parser, same defaults)."""
    from moe_oracle.cli.cmd_plan import plan as plan_command
    from moe_oracle.cli.cmd_plan import request_from
    from moe_oracle.launch.build import build_plan

    try:
        from moe_oracle.cli.site_defaults import default_map

        site = default_map().get("plan", {})
        ctx = plan_command.make_context("plan", [model, *args], resilient_parsing=False, default_map=site)
    except click.UsageError as exc:
        message = f"compare column {shlex.join(args)!r}: {exc.format_message()}"
        raise BadInputError(message, fix="see plan --help") from None
    with ctx:
        kw = dict(ctx.params)
        kw.pop("model", None)
        for key in ("as_json", "examples_dir", "check", "output"):
            kw.pop(key, None)
        return build_plan(request_from(model, kw))


def parse_points(points: str) -> tuple[int, ...]:
    """``--points 32,256,8192``: distinct positive token counts in ASCII digits (exit 2 otherwise)."""
    words = [p.strip() for p in points.split(",") if p.strip()]
    bad = [w for w in words if not re.fullmatch(r"[0-9]{1,9}", w)]
    if bad or not words:
        raise BadInputError(
            f"--points {excerpt(points)} is not a comma list of token counts"
            + (f" ({excerpt(bad[0])} is not written in the digits 0-9, at most 9 of them)" if bad else ""),
            fix="e.g. --points 32,256,8192",
        )
    pts = tuple(int(w) for w in words)
    if any(p < 1 for p in pts):
        raise BadInputError(f"--points {excerpt(points)} needs positive token counts", fix="e.g. --points 32,256,8192")
    twice = sorted({p for p in pts if pts.count(p) > 1})
    if twice:
        raise BadInputError(
            f"--points {excerpt(points)} names {', '.join(map(str, twice))} more than once (one row per point)",
            fix=f"name each point once: --points {','.join(map(str, dict.fromkeys(pts)))}",
        )
    return pts


@dataclass(frozen=True)
class Cost:
    """One column's expected cost at one point: microseconds (None: no figure), its basis kind and why none."""

    us: float | None
    kind: str = ""
    text: str = "-"
    #: estimated from other shapes' fit (or a roofline): a near tie with it is the model's guess
    transferred: bool = False
    #: the path costed (a variant or non-fused key): two columns on one path are never a near tie
    path: str = ""


def _default_path_estimate(g: Any, dep: Any, engine: Any, t: int) -> tuple[Any, str, str] | None:
    """The engine's own (non-fused) path where no fused one is chosen: a non-fused path moe-oracle measured for
    this GPU family and weight format (at another EP the cost model's fit carries it over, as for the fused
    paths), marked as a stand-in when it was not measured inside this engine, and its key; None when none was
    measured."""
    from moe_oracle.cost.model import estimate_us
    from moe_oracle.cost.nonfused import declared_paths

    paths = [
        p for p in declared_paths() if p.arch_family == dep.device.arch.family and g.group.weight_format in p.formats
    ]
    if not paths:
        return None
    path = next((p for p in paths if engine in p.engines), paths[0])
    stand_in = "" if engine in path.engines else f", outside {engine.value} (a stand-in)"
    return estimate_us(path.key, g.group, dep, t), stand_in, path.key


def _costs(plan: Any, points: tuple[int, ...]) -> tuple[list[Cost], set[str], set[str]]:
    """The main layer group's expected microseconds per MoE layer call at each point (the chosen fused path, or
    the engine's own non-fused path where one was measured), the kinds of basis and the bases themselves. A basis
    whose source cannot be verified is marked so."""
    from moe_oracle.cost.model import estimate_us
    from moe_oracle.decide.selection import Decision

    decision: Decision = plan.decision_obj
    g = decision.main
    dep = decision.deployment
    out: list[Cost] = []
    bases, details = set(), set()
    for t in points:
        if t > dep.parallel.tokens_per_rank:
            out.append(Cost(None, text="-"))
            continue
        extra = ""
        if g.chosen is not None:
            group = g.group
            if g.chosen.conversion is not None:
                group = group.model_copy(update={"weight_quant": g.chosen.conversion.target})
            est, key = estimate_us(g.chosen.spec, group, dep, t), g.chosen.key
        elif g.nonfused is not None:
            est, key = estimate_us(g.nonfused.key, g.group, dep, t), g.nonfused.key
        else:
            found = _default_path_estimate(g, dep, decision.engine, t)
            if found is None:
                fmt = g.group.weight_format.value
                out.append(Cost(None, text=f"not measured (no non-fused {fmt} run on {dep.device.arch.family})"))
                continue
            est, extra, key = found
        kind = basis_kind(est.basis) + extra
        if not verifiable(est.basis):
            kind += ", not verifiable"
        bases.add(kind)
        details.add(est.basis)
        out.append(Cost(est.us, kind, f"{est.us:,.0f} us ({kind})", est.transferred, key))
    return out, bases, details


def verifiable(basis: str) -> bool:
    """False for a figure whose own source says it cannot be checked (a table not publicly located)."""
    text = basis.lower()
    return "not verifiable" not in text and "not publicly located" not in text


#: Marks a "faster" verdict between figures of different bases or an unverifiable source.
INDICATIVE = "(indicative*)"
#: Marks a "faster" verdict inside the cost model's transfer error (:mod:`moe_oracle.cost.near_tie`).
NEAR_TIE_MARK = "(near tie)"


def faster_row(labels: list[str], costs: list[list[Cost]], points: tuple[int, ...]) -> list[str]:
    """Per point, the column with the lower expected cost and by how much; where the two figures differ in basis
    (or one cannot be verified) it says so, and where fewer than two columns have a figure, that no comparison
    is made; a margin inside the cost model's transfer error is marked a near tie."""
    from moe_oracle.cost.model import CostEstimate
    from moe_oracle.cost.near_tie import is_near_tie

    out = []
    for n, _ in enumerate(points):
        have = [(c[n], label) for c, label in zip(costs, labels, strict=True) if c and c[n].us is not None]
        if len(have) < 2:
            out.append("no comparison (" + (f"only {have[0][1]} has a figure" if have else "no figures") + ")")
            continue
        have.sort(key=lambda item: item[0].us or 0.0)
        (best, best_label), (second, second_label) = have[0], have[1]
        ratio = (second.us or 0.0) / max(best.us or 0.0, 1e-9)
        text = f"{best_label} by {ratio:.2f}x over {second_label}"
        kinds = {c.kind for c, _ in have}
        if len(kinds) > 1 or any("not verifiable" in k for k in kinds):
            text += f" {INDICATIVE}"
        fast, slow = (CostEstimate(c.us or 0.0, c.kind, True, c.transferred) for c in (best, second))
        if best.path != second.path and is_near_tie(fast, slow):
            text += f" {NEAR_TIE_MARK}"
        out.append(text)
    return out


def basis_kind(basis: str) -> str:
    """``measured EP1``, ``published EP8``, ``roofline``: how a cost was obtained and at which EP size."""
    word = basis.split(",", 1)[0].split()[0] if basis.strip() else "unknown"
    ep = re.search(r"\bEP(\d+)\b", basis)
    return f"{word} EP{ep.group(1)}" if ep and word in ("measured", "published") else word


def _rows(columns: list[Column], points: tuple[int, ...]) -> tuple[list[tuple[str, list[str]]], list[str]]:
    rows: dict[str, list[str]] = {}
    notes: list[str] = []
    all_bases: set[str] = set()

    def put(name: str, values: list[str]) -> None:
        rows[name] = values

    plans = [c.plan for c in columns]
    put("flags", [shlex.join(c.args) or "(shared flags only)" for c in columns])
    put("engine", [f"{p.engine} {p.engine_version}" if p else "-" for p in plans])
    put("device", [f"{p.device} ({p.arch})" if p else "-" for p in plans])
    layouts = []
    for p in plans:
        if p is None:
            layouts.append("-")
        elif p.replicas is not None and p.replicas.adopted:
            layouts.append(f"{p.replicas.count} x {p.layout.label()}")
        else:
            layouts.append(f"{p.layout.label()} on {p.layout.nodes} node(s)")
    put("layout", layouts)
    put("software", [p.software if p else "-" for p in plans])
    put(
        "chosen path (main group)",
        [f"{c.refused} (see {c.label} below)" if c.refused else _chosen(c.plan) for c in columns],
    )
    put("validated", [_validated(p) for p in plans])
    put("accuracy class", [_accuracy(p) for p in plans])
    put("advisories", [_advisories(p) for p in plans])
    for t in points:
        put(f"cost, T={t} tokens/rank", [])
    all_costs: list[list[Cost]] = []
    for col, p in zip(columns, plans, strict=True):
        if p is None:
            all_costs.append([])
            for t in points:
                rows[f"cost, T={t} tokens/rank"].append("-")
            continue
        values, bases, details = _costs(p, points)
        all_costs.append(values)
        all_bases |= bases
        if details:
            notes.append(f"{col.label} cost basis: {'; '.join(sorted(details))}")
        for t, v in zip(points, values, strict=True):
            rows[f"cost, T={t} tokens/rank"].append(v.text)
    put(
        "memory fit",
        [
            p.fit.verdict if p and p.fit else ("DOES NOT FIT" if c.refused == "DOES NOT FIT" else "-")
            for c, p in zip(columns, plans, strict=True)
        ],
    )
    put(
        "per rank: weights+buffers / KV",
        [
            (
                f"{p.fit.needed_bytes / (1 << 30):.1f} / {p.fit.kv_bytes / (1 << 30):.1f} GiB"
                if p.fit.weighed_all
                else f"{p.fit.needed_bytes / (1 << 30):.1f} (routed experts, buffers) / not weighed"
            )
            if p and p.fit
            else "-"
            for p in plans
        ],
    )
    put(
        "longest sequence (KV)",
        [f"{p.fit.max_context:,} tokens" if p and p.fit and p.fit.max_context is not None else "-" for p in plans],
    )
    put("fingerprint", [p.fingerprint.removeprefix("sha256:")[:16] if p else "-" for p in plans])
    for t, verdict in zip(points, faster_row([c.label for c in columns], all_costs, points), strict=True):
        put(f"faster at T={t}", [verdict] + [""] * (len(columns) - 1))
    notes.append(
        "cost: expected microseconds per call of one MoE layer of the main layer group at T tokens per rank "
        "(the same T for every column)"
    )
    if len(all_bases) > 1:
        notes.append(
            f"the costs differ in basis ({', '.join(sorted(all_bases))}): 'measured' figures come from moe-oracle's "
            "runs, 'published' from a third party's table, 'roofline' from a model of the device; at another EP "
            "size or by another method they are comparable only as an order of magnitude"
        )
    if any(INDICATIVE in values[0] for name, values in rows.items() if name.startswith("faster at")):
        notes.append(
            f"{INDICATIVE}: the two figures differ in basis ({', '.join(sorted(all_bases))}) or one cannot be "
            "verified; the faster column is named from them, but the margin is indicative only"
        )
    if any(NEAR_TIE_MARK in values[0] for name, values in rows.items() if name.startswith("faster at")):
        from moe_oracle.cost.near_tie import NEAR_TIE

        notes.append(
            f"{NEAR_TIE_MARK}: the two figures are within {NEAR_TIE:.0%} and at least one is estimated from other "
            "shapes' fit, inside the cost model's transfer error: which is faster there is a guess (moe-oracle tune "
            "on the GPU measures it; docs/performance.md §16)"
        )
    for c in columns:
        if c.error:
            notes.append(f"{c.label}: {c.error}")
    advisories = dict.fromkeys(note for p in plans if p is not None for note in p.decision_obj.advisory_notes())
    notes += list(advisories)
    return list(rows.items()), notes


def _chosen(plan: Any) -> str:
    if plan is None:
        return "-"
    g = plan.decision_obj.main
    if g.chosen is None:
        return "non-fused (engine default)"
    conv = g.chosen.conversion
    return g.chosen.spec.key + (f" after {conv.label}" if conv else "")


def _validated(plan: Any) -> str:
    if plan is None:
        return "-"
    g = plan.decision_obj.main
    if g.chosen is None:
        return "-"
    return g.chosen.validation.short


def _accuracy(plan: Any) -> str:
    if plan is None or plan.decision_obj.main.chosen is None:
        return "-"
    return plan.decision_obj.main.chosen.accuracy_class


def _advisories(plan: Any) -> str:
    """The ids of the advisories about the chosen path (their notes follow the table)."""
    if plan is None:
        return "-"
    ids = dict.fromkeys(adv.id for adv, _ in plan.decision_obj.nearby_advisories())
    return ", ".join(ids) or "none"


def render(model: str, columns: list[Column], points: tuple[int, ...]) -> str:
    rows, notes = _rows(columns, points)
    heads = ["", *(c.label for c in columns)]
    table = [heads, *([name, *values] for name, values in rows)]
    widths = [max(len(r[i]) for r in table) for i in range(len(heads))]
    lines = [f"# moe-oracle compare: {model}", ""]
    for r in table:
        lines.append("  ".join(cell.ljust(w) for cell, w in zip(r, widths, strict=True)).rstrip())
    lines.append("")
    lines += [f"- {n}" for n in notes]
    return "\n".join(lines) + "\n"


def to_json(model: str, columns: list[Column], points: tuple[int, ...]) -> dict[str, Any]:
    rows, notes = _rows(columns, points)
    return {
        "model": model,
        "points_tokens_per_rank": list(points),
        "columns": [
            {
                "label": c.label,
                "flags": c.args,
                "error": c.error,
                "refused": c.refused,
                "plan": c.plan.to_json() if c.plan is not None else None,
            }
            for c in columns
        ],
        "table": {name: values for name, values in rows},
        "notes": notes,
    }


@command("compare")
@click.argument("model")
@click.option(
    "--vs",
    "columns",
    type=FlagsValue(),
    multiple=True,
    required=True,
    metavar="FLAGS",
    help="One deployment's plan flags (quoted), e.g. --vs '--engine vllm' --vs '--engine sglang'; give two or more.",
)
@click.option(
    "--points",
    default=",".join(str(p) for p in DEFAULT_POINTS),
    show_default=True,
    help="Tokens per rank at which every column's cost is given.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the comparison (and every column's plan) as JSON.")
@click.argument("shared", nargs=-1, type=click.UNPROCESSED)
def compare(model: str, columns: tuple[str, ...], points: str, as_json: bool, shared: tuple[str, ...]) -> None:
    """Put two or more deployments of MODEL side by side, each planned exactly as 'plan' plans it.

    Flags after '--' apply to every column (e.g. -- --device h200); each --vs adds one column's own flags. A
    column that cannot be planned (a deployment that does not fit, a refused override) shows why in its own
    column, and the comparison still exits 0; bad input anywhere (a column's flags included) is exit 2. A
    column's flags are a deployment: --json, --examples, --check and --help are refused there. The last rows
    name the faster column at each token point, with the margin, marked indicative where the two figures differ
    in basis or one cannot be verified.
    """
    if len(columns) < 2:
        raise BadInputError(
            f"compare needs two or more --vs columns (got {len(columns)})",
            fix="e.g. moe-oracle compare MODEL --vs '--engine vllm' --vs '--engine sglang' -- --device h200",
        )
    pts = parse_points(points)
    _refuse_output_flags(list(shared), "the shared flags after --")
    cols = []
    for i, text in enumerate(columns):
        try:
            args = shlex.split(text)
        except ValueError as exc:
            raise BadInputError(
                f"--vs {excerpt(text)} is not shell words ({exc})", fix="quote each column's flags"
            ) from None
        _refuse_output_flags(args, f"--vs {excerpt(text)}")
        col = Column(label=f"[{i + 1}]", args=args)
        try:
            col.plan = _plan_for(model, [*shared, *args])
        except (DeploymentDoesNotFitError, OverrideRefusedError) as exc:
            # the column shows why (exit 0: the comparison itself was made); bad input stays exit 2
            col.error = exc.one_line()
            col.refused = "DOES NOT FIT" if isinstance(exc, DeploymentDoesNotFitError) else "OVERRIDE REFUSED"
        cols.append(col)
    if as_json:
        click.echo(json.dumps(to_json(model, cols, pts), indent=2))
    else:
        click.echo(render(model, cols, pts), nl=False)
