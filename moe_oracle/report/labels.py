"""Short labels shared by the renderers: verdict marks, reason-code abbreviations, column names."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from moe_oracle.report.matrix import Cell, Matrix, Verdict
from moe_oracle.rules import ReasonCode, VariantSpec
from moe_oracle.spec.device import DeviceSpec

CHOSEN = "★"
SUPPORTED = "✓"
UNVERIFIABLE = "?"
REJECTED = "✗"
NO_FIT = "⊘"

#: Abbreviations for the 120-column terminal table (markdown and HTML show full codes).
_SHORT: dict[str, str] = {
    "ARCH_UNSUPPORTED": "ARCH",
    "KERNEL_MISSING": "KERNEL",
    "LIBRARY_VERSION": "LIB_VER",
    "QUANT_UNSUPPORTED": "QUANT",
    "SHAPE_UNSUPPORTED": "SHAPE",
    "TOPK_UNSUPPORTED": "TOPK",
    "EXPERTS_NOT_DIVISIBLE": "EXP_DIV",
    "EXPERTS_EXCEED_LIMIT": "EXP_MAX",
    "TP_UNSUPPORTED": "TP",
    "PP_UNSUPPORTED": "PP",
    "EP_REQUIRED": "EP_REQ",
    "EP_EXCEEDS_DOMAIN": "EP_DOMAIN",
    "EP_SIZE_UNSUPPORTED": "EP_SIZE",
    "EPLB_UNSUPPORTED": "EPLB",
    "ALL2ALL_UNSUPPORTED": "ALL2ALL",
    "ACTIVATION_UNSUPPORTED": "ACT",
    "ROUTING_UNSUPPORTED": "ROUTING",
    "TOKENS_UNSUPPORTED": "TOKENS",
    "HEAP_TOO_SMALL": "HEAP",
    "ENGINE_UNSUPPORTED": "ENGINE",
    "MODEL_CLASS_UNSUPPORTED": "MODEL_CLASS",
    "KNOWN_BAD": "KNOWN_BAD",
}


def short_code(code: ReasonCode | str) -> str:
    value = code.value if isinstance(code, ReasonCode) else code
    return _SHORT.get(value) or value.removesuffix("_UNSUPPORTED")


def cell_mark(cell: Cell, *, short: bool = False) -> str:
    """``★`` chosen, ``✓`` supported, ``? CODE`` unverifiable, ``✗ CODE +N`` rejected."""
    lower = "" if cell.accuracy_class == "standard" else f" {cell.accuracy_class}"
    if cell.no_fit:  # eligible, but the deployment does not fit: the need per rank, not a supported mark
        need = cell.scenario.need_gib
        figure = "" if need is None else f" {need:.0f}G" if short else f" {need:.1f} GiB/rank"
        return f"{NO_FIT} {'MEM' if short else 'NO FIT'}{figure}"
    if cell.verdict is Verdict.SUPPORTED:
        if cell.chosen:
            return (f"{CHOSEN} convert" if cell.conversion else f"{CHOSEN} chosen") + lower
        return SUPPORTED + lower
    shown = cell.shown
    code = shown[0].code
    text = short_code(code) if short else code.value
    more = f" +{len(shown) - 1}" if len(shown) > 1 else ""
    if cell.verdict is Verdict.UNVERIFIABLE:
        return f"{CHOSEN if cell.chosen else ''}{UNVERIFIABLE} {text}{more}{lower}"
    return f"{REJECTED} {text}{more}"


def backend_label(backend: str) -> str:
    """``deep_gemm_mega_moe`` -> ``deep_gemm``."""
    return backend.removesuffix("_mega_moe") or backend


def column_labels(variants: Sequence[VariantSpec]) -> dict[str, str]:
    """A short column label per variant key: the variant name, prefixed by the backend if ambiguous."""
    counts: dict[str, int] = {}
    for v in variants:
        counts[v.variant] = counts.get(v.variant, 0) + 1
    return {v.key: v.variant if counts[v.variant] == 1 else f"{backend_label(v.backend)}:{v.variant}" for v in variants}


def hidden_other_arch(matrix: Matrix, rows: Sequence[int]) -> tuple[list[int], list[int]]:
    """Split variant indices into (shown, hidden): hidden ones are ARCH_UNSUPPORTED in every row."""
    shown, hidden = [], []
    for j in range(len(matrix.variants)):
        if rows and all(matrix.cells[i][j].other_arch for i in rows):
            hidden.append(j)
        else:
            shown.append(j)
    return shown, hidden


LEGEND: tuple[tuple[str, str], ...] = (
    (f"{CHOSEN} chosen", "supported, and the oracle's choice for the scenario (what `moe-oracle select` picks)"),
    (f"{CHOSEN} convert", "the oracle's choice after converting the routed experts at load (e.g. MXFP4 to FP8)"),
    (SUPPORTED, "supported: eligible, not chosen (higher expected cost); the deployment fits in memory"),
    (
        f"{NO_FIT} NO FIT N GiB/rank",
        "eligible, but the deployment does not fit in memory: one rank needs N GiB (weights, symmetric buffers "
        "and reserve) against the engine's share of the GPU (`moe-oracle select` exits 7 with the fix)",
    ),
    (f"{UNVERIFIABLE} CODE", "unverifiable: eligible except for rules not verifiable from declarations"),
    (f"{CHOSEN}{UNVERIFIABLE} CODE", "unverifiable, yet the oracle's choice (select notes the unverifiable rules)"),
    (f"{REJECTED} CODE +N", "rejected: the first failing rule's reason code, and how many more rules fail"),
    (
        f"{SUPPORTED} a4",
        "accuracy class below standard (a4: activations quantized to 4 bits; lossy: weights converted lossily); "
        "chosen automatically only when the checkpoint already has that precision (NVFP4), else with "
        "--allow-low-precision-activations",
    ),
)


@dataclass(frozen=True)
class Page:
    """One table of the terminal and markdown views: a device, under one engine and software profile."""

    device: DeviceSpec
    engine: str
    software: str
    rows: list[int]

    def title(self, extra: Sequence[str]) -> str:
        text = f"{self.device.name} ({self.device.arch.value}; {domain_text(self.device)})"
        if "engine" in extra:
            text += f", engine {self.engine}"
        if "software" in extra:
            text += f", software {self.software}"
        return text


def pages(matrix: Matrix) -> list[Page]:
    """Scenario indices grouped by (device, engine, software), in scenario order; rows are model x topology."""
    groups: dict[tuple[str, str, str], Page] = {}
    for i, sc in enumerate(matrix.scenarios):
        spec = sc.spec
        key = (spec.device.name, spec.engine.value, spec.software.name)
        if key not in groups:
            groups[key] = Page(spec.device, spec.engine.value, spec.software.name, [])
        groups[key].rows.append(i)
    return list(groups.values())


def varying(matrix: Matrix) -> list[str]:
    """Scenario dimensions besides model and topology that take more than one value (engine, software)."""
    out = []
    if len({sc.spec.engine for sc in matrix.scenarios}) > 1:
        out.append("engine")
    if len({sc.spec.software.name for sc in matrix.scenarios}) > 1:
        out.append("software")
    return out


def hidden_summary(variants: Sequence[VariantSpec]) -> str:
    """``deep_gemm_mega_moe: sm100_bf16, sm100_nvfp4; aiter_mega_moe: gfx950_a8w4``."""
    by_backend: dict[str, list[str]] = {}
    for v in variants:
        by_backend.setdefault(v.backend, []).append(v.variant)
    return "; ".join(f"{b}: {', '.join(vs)}" for b, vs in by_backend.items())


def domain_text(device: DeviceSpec) -> str:
    link = "XGMI" if device.vendor.value == "amd" else "NVLink"
    return f"{device.gpus_per_node} GPUs/node, {link} domain {device.domain_size}"


def validation_groups(variants: Sequence[VariantSpec]) -> list[tuple[str, list[str]]]:
    """The variants grouped by how far their path was run (strongest first), for a legend line each."""
    from moe_oracle.rules.variant import Validation

    out = []
    for status in Validation:
        keys = [v.key for v in variants if v.validation is status]
        if keys:
            out.append((status.text, keys))
    return out


def page_advisories(matrix: Matrix, rows: Sequence[int]) -> list[str]:
    """The advisory notes about the starred choices of ``rows`` (each once), as select and plan print them."""
    return list(dict.fromkeys(note for i in rows for note in matrix.scenarios[i].advisory_notes))
