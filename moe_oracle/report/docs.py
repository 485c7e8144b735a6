"""The report's pages of ``docs/``, from the declarations: the capability matrix, variants, reason codes.

:mod:`moe_oracle.cli.docs` adds the CLI page and writes them all (``moe-oracle matrix --docs docs``). The
files cover moe-oracle's own backends only (third-party plug-ins installed here are left out),
judge the default scenarios with the bundled advisories and no environment, and hold no date
or version, so they change only when a declaration, a preset or the oracle's rules change.
Tests fail when a committed file differs from what is generated.
"""

from __future__ import annotations

from moe_oracle.registry import Registry
from moe_oracle.report.markdown import generated_header, md_table
from moe_oracle.report.matrix import Matrix
from moe_oracle.rules import Check, Engine, ReasonCode
from moe_oracle.rules.build import BuildSpec, builds_named_by
from moe_oracle.rules.engine import EngineProfile, EngineSupport

DOCS_COMMAND = "moe-oracle matrix --docs docs"
MATRIX_MD = "capability-matrix.md"
MATRIX_HTML = "capability-matrix.html"
VARIANTS_MD = "variants.md"
REASONS_MD = "reason-codes.md"
FAMILIES_MD = "families.md"
REPORT_FILES = (MATRIX_MD, MATRIX_HTML, VARIANTS_MD, REASONS_MD, FAMILIES_MD)


def docs_registry() -> Registry:
    from moe_oracle.report.matrix import builtin_registry

    return builtin_registry()


def docs_matrix() -> Matrix:
    """The default matrix over moe-oracle's own variants, with no shell environment."""
    from moe_oracle.report.matrix import build_matrix
    from moe_oracle.report.scenarios import build_scenarios

    return build_matrix(build_scenarios(env={}), registry=docs_registry(), command=DOCS_COMMAND, fingerprints=False)


def engine_profiles() -> list[EngineProfile]:
    from moe_oracle.releases import engine_profile

    return [p for p in (engine_profile(e) for e in Engine) if p is not None]


def _sources(sources: tuple[str, ...]) -> str:
    return "; ".join(sources) if sources else "-"


def _check_rows(checks: tuple[Check, ...]) -> list[list[str]]:
    return [
        [f"`{c.code.value}`", c.rule, c.remediation or "(given per case in the message)", _sources(c.sources)]
        for c in checks
    ]


_CHECK_HEADER = ["reason code", "rule", "remediation", "sources"]


def render_variants(registry: Registry, profiles: list[EngineProfile], command: str = DOCS_COMMAND) -> str:
    lines = generated_header(command, "Backend variants")
    lines += [
        "Each variant's declaration (`VariantSpec`): what it runs and every requirement it checks, in the order "
        "the checks run. A rejected candidate carries one reason per failed requirement, with the actual values "
        "in its message. The engine gates below apply on top when `--engine vllm` or `--engine sglang` is given.",
        "",
        "## Contents",
        "",
    ]
    lines += [f"- [`{v.key}`](#{_anchor(v.key)})" for v in registry.variants]
    lines += [f"- [Engine gates: {p.engine} {p.version}](#{_anchor(f'engine-{p.engine}')})" for p in profiles]
    lines += ["- [Library builds](#library-builds)"]
    for v in registry.variants:
        lines += ["", f'<a id="{_anchor(v.key)}"></a>', "", f"## `{v.key}`", "", v.summary, ""]
        lines += md_table(
            ["field", "value"],
            [
                ["backend", f"`{v.backend}`"],
                ["variant", f"`{v.variant}`"],
                ["target", f"`{v.target}`"],
                ["weights", v.weights],
                ["activations", v.activations],
                ["kernel", f"`{v.kernel}`"],
                ["validated", v.validation_text],
                ["runtime", f"`{v.runtime}`" if v.runtime else "-"],
                ["priority", str(v.priority)],
                ["sources", _sources(v.sources)],
            ],
        )
        lines += ["", "### Requirements", ""]
        lines += md_table(_CHECK_HEADER, _check_rows(v.checks))
    for p in profiles:
        lines += ["", f'<a id="{_anchor(f"engine-{p.engine}")}"></a>', ""]
        lines += [f"## Engine gates: {p.engine} {p.version}", ""]
        lines += [
            f"Backend flag: `{p.moe_backend_flag}`. A backend this engine does not know is rejected with "
            "`ENGINE_UNSUPPORTED`.",
        ]
        for s in p.supports:
            lines += _gate_section(s)
    lines += _builds_section(registry)
    return "\n".join(lines) + "\n"


def _builds_section(registry: Registry) -> list[str]:
    """Every library build the variants' entry-point checks name: provenance, recognition, extra limits."""
    builds: dict[str, BuildSpec] = {}
    for b in builds_named_by(registry.variants):
        builds.setdefault(b.name, b)
    if not builds:
        return []
    lines = ["", '<a id="library-builds"></a>', "", "## Library builds", ""]
    lines += [
        "The builds of each kernel library that exist, as declared (`BuildSpec`). A variant's entry-point check "
        "passes when a build present in the software profile exports its kernel and meets that build's limits "
        "below (limits every build shares are the variant's own checks). `--software <build>` describes one build "
        "alone; `--software installed` recognises the installed one as shown. A limit read from a branch or an "
        "unmerged pull request is marked so: no release has promised it.",
    ]
    for b in builds.values():
        lines += ["", f"### `{b.name}`", "", b.title, ""]
        lines += md_table(
            ["field", "value"],
            [
                ["library", f"`{b.library}`"],
                ["provenance", f"{b.provenance.value}: {b.provenance.caveat}"],
                ["source", b.ref],
                ["recognised by", b.recognised_by or "-"],
                ["token alignment", b.alignment_text],
                ["notes", b.note or "-"],
            ],
        )
        rows = [
            [f"`{ep}`", f"`{c.code.value}`", c.rule, c.remediation or "-", _sources(c.sources)]
            for ep, checks in b.limits.items()
            for c in checks
        ]
        if rows:
            lines += ["", *md_table(["entry point", "reason code", "rule", "remediation", "sources"], rows)]
    return lines


def _gate_section(s: EngineSupport) -> list[str]:
    lines = ["", f"### {s.engine} {s.version}: `{s.backend}`", ""]
    lines += [
        f"Wires {', '.join(f'`{v}`' for v in s.variants)} only. Any other variant of `{s.backend}` is "
        f"rejected with `ENGINE_UNSUPPORTED`: {s.unsupported}. Fix: {s.remediation}",
        "",
        f"Sources: {_sources(s.sources)}.",
        "",
    ]
    if s.checks:
        lines += md_table(_CHECK_HEADER, _check_rows(s.checks))
    else:
        lines.append("No further checks.")
    return lines


def _anchor(text: str) -> str:
    return "".join(ch if ch.isalnum() else "-" for ch in text.lower()).strip("-")


def emitters(registry: Registry, profiles: list[EngineProfile]) -> dict[ReasonCode, list[str]]:
    """Who can emit each reason code: variants (by their checks), engine gates, advisories."""
    from moe_oracle.decide.advisories import bundled_advisories

    found: dict[ReasonCode, list[str]] = {code: [] for code in ReasonCode}

    def add(code: ReasonCode, who: str) -> None:
        if who not in found[code]:
            found[code].append(who)

    for v in registry.variants:
        for c in v.checks:
            add(c.code, f"variant [`{v.key}`]({VARIANTS_MD}#{_anchor(v.key)})")
    for p in profiles:
        for s in p.supports:
            for c in s.checks:
                add(c.code, f"{p.engine} {p.version} gate for `{s.backend}`")
            add(
                ReasonCode.ENGINE_UNSUPPORTED,
                f"{p.engine} {p.version} gate for `{s.backend}` (variants it does not wire)",
            )
        add(ReasonCode.ENGINE_UNSUPPORTED, f"{p.engine} {p.version} (backends it does not know)")
    for adv in bundled_advisories():
        target = f"`{adv.backend}:{adv.variant}`" if adv.variant else f"`{adv.backend}`"
        add(ReasonCode.KNOWN_BAD, f"advisory {adv.id} ({target})")
    add(ReasonCode.KNOWN_BAD, "any advisory in a site file passed with `--advisories FILE`")
    return found


def render_reason_codes(registry: Registry, profiles: list[EngineProfile], command: str = DOCS_COMMAND) -> str:
    lines = generated_header(command, "Reason codes")
    lines += [
        "Every rejection carries one stable reason code (`moe_oracle.rules.ReasonCode`), plus a message with the "
        "actual values, a remediation, the rule and its sources. A reason's status is `fail` (the candidate is "
        "rejected) or `unknown` (the rule cannot be verified from declarations; the candidate stays eligible and "
        "the matrix shows it as unverifiable). `moe-oracle list reasons` prints the same table.",
        "",
    ]
    found = emitters(registry, profiles)
    lines += md_table(["code", "meaning"], [[f"[`{c.value}`](#{_anchor(c.value)})", c.meaning] for c in ReasonCode])
    for code in ReasonCode:
        lines += ["", f'<a id="{_anchor(code.value)}"></a>', "", f"## `{code.value}`", "", code.meaning, ""]
        who = found[code]
        if who:
            lines.append("Emitted by:")
            lines.append("")
            lines += [f"- {w}" for w in who]
        else:
            lines.append("Emitted by no registered declaration (reserved for backends and gates that need it).")
    return "\n".join(lines) + "\n"


def generate_report_docs() -> dict[str, str]:
    """File name -> generated text, for the report's pages (:data:`REPORT_FILES`)."""
    from moe_oracle.report.html import render_html
    from moe_oracle.report.markdown import render_markdown

    registry = docs_registry()
    profiles = engine_profiles()
    matrix = docs_matrix()
    from moe_oracle.report import families

    docs = {
        MATRIX_MD: render_markdown(matrix),
        MATRIX_HTML: render_html(matrix),
        VARIANTS_MD: render_variants(registry, profiles),
        REASONS_MD: render_reason_codes(registry, profiles),
    }
    if families.available():  # a source checkout: the family configs are test fixtures, not shipped
        docs[FAMILIES_MD] = families.render_families(DOCS_COMMAND)
    return docs


__all__ = ["DOCS_COMMAND", "REPORT_FILES", "generate_report_docs"]
