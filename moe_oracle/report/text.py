"""The terminal view: one table per device, scenarios as rows, variants as columns, as wide as the terminal.

The variant columns are split over as many tables as the terminal's width needs (at 80 columns, two or
three variants a table), each keeping the model, weights and topology columns, so that no identifier is
cut and every cell stays under its own variant's header.

Variants built for another architecture (``ARCH_UNSUPPORTED`` in every row of a device) are
left out of that device's table and named on one line below it, the way ``select`` summarises
them; the JSON and HTML views carry every cell with all its reasons.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from moe_oracle.report import labels as L
from moe_oracle.report.matrix import Cell, Matrix, Verdict
from moe_oracle.report.scenarios import TOPOLOGIES

if TYPE_CHECKING:
    from rich.console import Console

WIDTH = 120  #: the width of the documented (piped) output
_STYLE = {Verdict.SUPPORTED: "green", Verdict.UNVERIFIABLE: "yellow", Verdict.REJECTED: "red"}


def _cell_text(cell: Cell) -> Any:
    from rich.text import Text

    mark = L.cell_mark(cell, short=True)
    if cell.no_fit:
        return Text(mark, style="magenta")
    if cell.verdict is Verdict.SUPPORTED and cell.chosen:
        return Text(mark, style="bold green")
    return Text(mark, style=_STYLE[cell.verdict] if not cell.other_arch else "dim")


def _wrap(text: str, width: int = WIDTH) -> Any:
    """Plain text wrapped to ``width`` (less one column) with a two-space hanging indent."""
    import textwrap

    from rich.text import Text

    return Text(
        textwrap.fill(text, width=width - 1, subsequent_indent="  ", break_on_hyphens=False, break_long_words=False)
    )


def _label_width(matrix: Matrix, rows: list[int]) -> int:
    specs = [matrix.scenarios[i].spec for i in rows]
    model = max(len("model"), *(len(s.model.model) for s in specs))
    weights = max(len("weights"), *(len(s.model.main_group.weight_format.value) for s in specs))
    return model + weights + len("topology") + 6


def _cell_width(matrix: Matrix, rows: list[int], j: int, cols: dict[str, str]) -> int:
    v = matrix.variants[j]
    marks = [len(L.cell_mark(matrix.cells[i][j], short=True)) for i in rows]
    return max(len(cols[v.key]), len(L.backend_label(v.backend)), *marks) + 3


def _chunks(
    matrix: Matrix, rows: list[int], shown: list[int], cols: dict[str, str], width: int = WIDTH
) -> list[list[int]]:
    """Split the variant columns so that each table fits in ``width`` columns (one table at 120 in the usual
    case); a chunk holds at least one column."""
    budget = width - _label_width(matrix, rows)
    chunks: list[list[int]] = [[]]
    used = 0
    for j in shown:
        w = _cell_width(matrix, rows, j, cols)
        if chunks[-1] and used + w > budget:
            chunks.append([])
            used = 0
        chunks[-1].append(j)
        used += w
    return chunks


def _table(matrix: Matrix, rows: list[int], chunk: list[int], cols: dict[str, str]) -> Any:
    from rich import box
    from rich.markup import escape
    from rich.table import Table

    table = Table(box=box.MINIMAL, show_edge=False, header_style="bold", pad_edge=False)
    table.add_column("model", no_wrap=True)
    table.add_column("weights", no_wrap=True)
    table.add_column("topology", no_wrap=True)
    for j in chunk:
        v = matrix.variants[j]
        table.add_column(f"{escape(cols[v.key])}\n[dim]{escape(L.backend_label(v.backend))}[/dim]", no_wrap=True)
    prev_model = None
    for n, i in enumerate(rows):
        spec = matrix.scenarios[i].spec
        first = spec.model.model != prev_model
        prev_model = spec.model.model
        nxt = matrix.scenarios[rows[n + 1]].spec.model.model if n + 1 < len(rows) else None
        table.add_row(
            escape(spec.model.model) if first else "",
            spec.model.main_group.weight_format.value if first else "",
            spec.topology.name,
            *(_cell_text(matrix.cells[i][j]) for j in chunk),
            end_section=nxt != spec.model.model,
        )
    return table


def render_table(matrix: Matrix, con: Console) -> None:
    """Print the matrix on a rich console (see :func:`moe_oracle.cli.console.console`)."""
    from rich.markup import escape
    from rich.text import Text

    extra = L.varying(matrix)
    cols = L.column_labels(matrix.variants)
    engines = sorted({sc.spec.engine.value for sc in matrix.scenarios})
    softwares = sorted({sc.spec.software.name for sc in matrix.scenarios})
    width = con.width
    con.print(
        _wrap(
            f"Capability matrix: {len(matrix.variants)} variants x {len(matrix.scenarios)} scenarios "
            f"(engine {', '.join(engines)}; software {', '.join(softwares)}), judged on each model's main layer group",
            width,
        )
    )
    con.print(
        _wrap(
            f"{L.CHOSEN} oracle's choice   {L.SUPPORTED} supported (and fits)   {L.NO_FIT} MEM NG eligible, but one "
            f"rank needs N GiB, more than the engine's share   {L.UNVERIFIABLE} CODE unverifiable   "
            f"{L.REJECTED} CODE +N rejected (first reason's code; N more)",
            width,
        )
    )
    if any(c.accuracy_class != "standard" and c.verdict is not Verdict.REJECTED for c in matrix.all_cells()):
        con.print(
            _wrap(
                "a4: accuracy class below standard (activations quantized to 4 bits), never chosen automatically "
                "for a checkpoint without 4-bit activations (--allow-low-precision-activations allows it)",
                width,
            )
        )
    used_topos = list(dict.fromkeys(sc.spec.topology.name for sc in matrix.scenarios))
    for name in used_topos:
        con.print(_wrap(f"{name}: {TOPOLOGIES[name].summary}", width))
    for status, keys in L.validation_groups(matrix.variants):
        con.print(_wrap(f"validation: {status}: {', '.join(keys)}", width))
    no_fit = [sc.id for sc in matrix.scenarios if not sc.fits]
    if no_fit:
        con.print(
            _wrap(
                f"memory: {len(no_fit)} scenario(s) cannot hold their weights, so nothing is the oracle's choice there "
                f"and no variant is marked supported (select shows the fit and its fix): {', '.join(no_fit)}",
                width,
            )
        )
    used_codes: dict[str, str] = {}
    for page in L.pages(matrix):
        con.print()
        device = page.device
        con.print(Text(page.title(extra), style="bold"))
        shown, hidden = L.hidden_other_arch(matrix, page.rows)
        if not shown:
            con.print(
                _wrap(
                    f"no registered variant runs on {device.arch.value}: all {len(hidden)} are ARCH_UNSUPPORTED; "
                    "every scenario uses the engine's non-fused MoE path",
                    width,
                )
            )
            used_codes["ARCH"] = "ARCH_UNSUPPORTED"
            continue
        for chunk in _chunks(matrix, page.rows, shown, cols, width):
            for c in (matrix.cells[i][j] for i in page.rows for j in chunk):
                if c.code is not None:
                    used_codes[L.short_code(c.code)] = c.code.value
            con.print(_table(matrix, page.rows, chunk, cols))
        if hidden:
            names = L.hidden_summary([matrix.variants[j] for j in hidden])
            con.print(_wrap(f"not shown (ARCH_UNSUPPORTED on {device.arch.value}): {names}", width))
            used_codes["ARCH"] = "ARCH_UNSUPPORTED"
        for note in L.page_advisories(matrix, page.rows):
            con.print(_wrap(f"{L.CHOSEN} {note}", width))
    con.print()
    if used_codes:
        codes = ", ".join(f"{short}={full}" for short, full in sorted(used_codes.items()) if short != full)
        if codes:
            con.print(_wrap(f"codes: {codes}", width))
    con.print("every reason of every cell: --format json or html; one scenario in full: select ... --all-reasons")
    for ep, err in matrix.broken:
        con.print(f"[yellow]warning[/yellow]: backend entry point {escape(ep)} failed to load: {escape(err)}")
