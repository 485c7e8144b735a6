"""The HTML view: one self-contained page (inline CSS and JS; no network, no external fonts).

One table row per cell (variant x scenario). The rows are built by the inline script from a
compact JSON block (reasons stored once, one record per line so a regenerated file diffs
readably). The script adds sorting (click a column header), filtering (a text filter and one
select per column, plus hiding variants built for another architecture), the reasons on hover
(each row's ``title``) and a detail panel (click a row, or Enter on it) with every reason, the
verdict on every layer group and the ``select`` command that reproduces the scenario. The view
state lives in the URL fragment (``#device=b200&verdict=chosen&sort=verdict&cell=12``) so a view
can be linked; the script marks ``<body data-ready="1" data-sorted=... data-visible=...>``.
"""

from __future__ import annotations

import json
from html import escape
from typing import Any

from moe_oracle.model.spans import layer_span
from moe_oracle.report import labels as L
from moe_oracle.report._assets import CSS, JS
from moe_oracle.report.cost_curves import cost_curves
from moe_oracle.report.matrix import Matrix, Verdict
from moe_oracle.report.scenarios import TOPOLOGIES

_V = {Verdict.SUPPORTED: "s", Verdict.UNVERIFIABLE: "u", Verdict.REJECTED: "r"}


def _a(value: object) -> str:
    return escape(str(value), quote=True)


def _j(value: Any) -> str:
    """JSON safe inside ``<script>`` (no ``<``, ``>`` or ``&`` characters)."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return text.replace("&", "\\u0026").replace("<", "\\u003c").replace(">", "\\u003e")


def _data_block(matrix: Matrix, extra: list[str]) -> str:
    """The page's data: one JSON object, one scenario, reason or cell per line."""
    reasons: dict[tuple[Any, ...], int] = {}

    def rid(r: Any) -> int:
        key = (r.code.value, r.status.value, r.message, r.remediation, r.rule, tuple(r.sources))
        return reasons.setdefault(key, len(reasons))

    vindex = {v.key: n for n, v in enumerate(matrix.variants)}
    scenarios = []
    for sc in matrix.scenarios:
        fields = sc.fields()
        fields["groups"] = [[g.name, layer_span(g.layers), g.weight_quant.label()] for g in sc.spec.model.layer_groups]
        fields["curves"] = cost_curves(sc.decision) if sc.fits else []
        scenarios.append(fields)
    cells = []
    for i, row in enumerate(matrix.cells):
        for c in row:
            others = [[_V[g.verdict], int(g.chosen), [rid(r) for r in g.reasons]] for g in c.groups[1:]]
            cells.append(
                [
                    i,
                    vindex[c.variant.key],
                    "m" if c.no_fit else _V[c.verdict],
                    int(c.chosen),
                    c.main.expected_us,
                    [rid(r) for r in c.reasons],
                    others,
                ]
            )
    variants = [
        {"key": v.key, "variant": v.variant, "label": L.backend_label(v.backend), "summary": v.summary}
        for v in matrix.variants
    ]
    reason_rows = [[k[0], k[1], k[2], k[3], k[4], list(k[5])] for k in reasons]

    def lines(items: list[Any]) -> str:
        return "[\n" + ",\n".join(_j(x) for x in items) + "\n]"

    return (
        "{\n"
        f'"extra":{_j(extra)},\n'
        f'"variants":{lines(variants)},\n'
        f'"scenarios":{lines(scenarios)},\n'
        f'"reasons":{lines(reason_rows)},\n'
        f'"cells":{lines(cells)}\n'
        "}"
    )


def _select(name: str, label: str, values: list[tuple[str, str]]) -> str:
    opts = "".join(f'<option value="{_a(v)}">{escape(t)}</option>' for v, t in values)
    return (
        f'<label for="f-{name}">{escape(label)}<select id="f-{name}" data-filter="{name}">'
        f'<option value="">all</option>{opts}</select></label>'
    )


def render_html(matrix: Matrix) -> str:
    extra = L.varying(matrix)
    scen = matrix.scenarios
    devices = list(dict.fromkeys(sc.spec.device.name for sc in scen))
    arch_of = {sc.spec.device.name: sc.spec.device.arch.value for sc in scen}
    models = list(dict.fromkeys(sc.spec.model.model for sc in scen))
    topos = list(dict.fromkeys(sc.spec.topology.name for sc in scen))
    engines = list(dict.fromkeys(sc.spec.engine.value for sc in scen))
    softwares = list(dict.fromkeys(sc.spec.software.name for sc in scen))
    cells = matrix.all_cells()
    n_supported = sum(c.verdict is Verdict.SUPPORTED and not c.no_fit for c in cells)
    n_unverifiable = sum(c.verdict is Verdict.UNVERIFIABLE and not c.no_fit for c in cells)
    n_no_fit = sum(c.no_fit for c in cells)
    n_chosen = sum(sc.chosen is not None for sc in scen)

    columns = [("device", "Device"), ("model", "Model"), ("weights", "Weights"), ("topology", "Topology")]
    columns += [(k, k.capitalize()) for k in extra]
    columns += [
        ("variant", "Variant"),
        ("verdict", "Verdict"),
        ("reason", "First reason"),
        ("choice", "Oracle's choice"),
    ]
    head = "".join(
        f'<th scope="col" data-k="{k}" aria-sort="none"><button type="button">{escape(t)}'
        f'<span class="arrow" aria-hidden="true"></span></button></th>'
        for k, t in columns
    )
    filters = [
        _select("device", "Device", [(d, f"{d} ({arch_of[d]})") for d in devices]),
        _select("model", "Model", [(m, m) for m in models]),
        _select("topology", "Topology", [(t, t) for t in topos]),
    ]
    if "engine" in extra:
        filters.append(_select("engine", "Engine", [(e, e) for e in engines]))
    if "software" in extra:
        filters.append(_select("software", "Software", [(s, s) for s in softwares]))
    filters.append(_select("variant", "Variant", [(v.key, v.key) for v in matrix.variants]))
    filters.append(
        _select(
            "verdict",
            "Verdict",
            [
                ("chosen", f"{L.CHOSEN} oracle's choice"),
                ("supported", "supported"),
                ("no fit", "eligible, does not fit in memory"),
                ("unverifiable", "unverifiable"),
                ("rejected", "rejected"),
            ],
        )
    )
    legend = (
        (f"{L.CHOSEN} supported", "eligible, and the oracle's choice for the scenario (what moe-oracle select picks)"),
        (f"{L.SUPPORTED} supported", "eligible, not chosen (higher expected cost); the deployment fits in memory"),
        (
            f"{L.NO_FIT} no fit",
            "eligible, but the deployment does not fit in memory: the reason column gives what one rank needs "
            "against the engine's share of the GPU (moe-oracle select exits 7 with the fix)",
        ),
        (f"{L.UNVERIFIABLE} unverifiable", "eligible except for rules not verifiable from declarations"),
        (f"{L.REJECTED} rejected", "at least one rule fails; the first failing rule's code is shown"),
    )
    legend_rows = "".join(f"<tr><td>{escape(m)}</td><td>{escape(t)}</td></tr>" for m, t in legend)
    topo_rows = "".join(
        f"<tr><td><code>{escape(t)}</code></td><td>{escape(TOPOLOGIES[t].summary)}</td></tr>" for t in topos
    )
    broken = "".join(
        f'<p class="note">Warning: backend entry point <code>{escape(ep)}</code> failed to load: {escape(err)}</p>'
        for ep, err in matrix.broken
    )
    summary = (
        f"{len(matrix.variants)} variants x {len(scen)} scenarios = {len(cells)} cells "
        f"(engine {', '.join(engines)}; software {', '.join(softwares)}): {n_supported} supported, "
        f"{n_no_fit} eligible but not fitting in memory, {n_unverifiable} unverifiable, "
        f"{len(cells) - n_supported - n_unverifiable - n_no_fit} rejected; "
        f"a fused backend is chosen in {n_chosen} of {len(scen)} scenarios."
    )
    th = '<th scope="col">'
    return f"""<!doctype html>
<!-- Generated by moe-oracle: do not edit. The generator meta tag names the command that regenerates it. -->
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="generator" content="moe-oracle; do not edit; regenerate with: {_a(matrix.command)}">
<title>moe-oracle capability matrix</title>
<style>{CSS}</style>
</head>
<body>
<header>
<h1>Capability matrix: fused mega-MoE backends</h1>
<p class="muted note">Generated by moe-oracle: do not edit; regenerate with <code>{escape(matrix.command)}</code>.</p>
<p class="note">{escape(summary)} Each scenario is one <code>decide()</code> call, the one
<code>moe-oracle select</code> makes, memory fit included; each row is one variant's verdict on the model's main
layer group, and a deployment that does not fit in memory is never marked supported.
Hover a row for its reasons; click it (or press Enter) for every reason, every layer group and the command that
reproduces it.</p>
{broken}
<details class="legend"><summary>Legend and topologies</summary>
<table><thead><tr>{th}verdict</th>{th}meaning</th></tr></thead><tbody>{legend_rows}</tbody></table>
<table><thead><tr>{th}topology</th>{th}layout</th></tr></thead><tbody>{topo_rows}</tbody></table>
</details>
<noscript><p class="note"><strong>This page builds its table with JavaScript, which is off.</strong> The same
matrix is in capability-matrix.md, or run <code>moe-oracle matrix</code>.</p></noscript>
</header>
<section class="controls" aria-label="Filters">
<label for="q">Filter text<input type="search" id="q" placeholder="e.g. b200 QUANT" autocomplete="off"></label>
{"".join(filters)}
<label class="check" for="hide-arch"><input type="checkbox" id="hide-arch" checked>Hide variants built for another
GPU architecture</label>
<button type="button" id="reset">Reset</button>
<span id="count" role="status" aria-live="polite"></span>
</section>
<div class="layout">
<div class="tablewrap">
<table class="matrix" id="matrix">
<caption class="muted note">One row per (variant, scenario). Click a column header to sort; click a row for
details.</caption>
<thead><tr>{head}</tr></thead>
<tbody></tbody>
</table>
<p class="empty" id="empty" hidden>No cell matches these filters.</p>
</div>
<aside id="detail" aria-labelledby="detail-title" hidden></aside>
</div>
<script type="application/json" id="matrix-data">
{_data_block(matrix, extra)}
</script>
<script>{JS}</script>
</body>
</html>
"""
