"""A candidate's fix never sends the operator to a variant the same answer refuses unmarked (issue 32, Why 7).

The rules' remediations are written once per rule (``On SM90 use --moe-backend deep_gemm_mega_moe:sm90_fp8xfp8``,
``or an MXFP4 one with sm90_fp8xfp4``), before any candidate is judged; for one group some of the variants they name
are refused too (a shape, a bias, another GPU). After every candidate of a group is judged, each remediation naming
such a variant says so in a closing clause (``here sm90_fp8xfp4 is refused too: see its row``), so that the list
reads as one answer.
"""

from __future__ import annotations

import re
from dataclasses import replace

from moe_oracle.decide.candidates import Candidate

#: The closing clause's opening words (the audit test finds them).
REFUSED_TOO = "here"


def _refused(cands: list[Candidate]) -> dict[str, str]:
    """Variant name -> its first refusal code, for the variants no candidate of the group (as stored or
    converted) runs."""
    runs = {c.spec.variant for c in cands if c.eligible}
    out: dict[str, str] = {}
    for c in cands:
        if c.spec.variant not in runs and c.failures:
            out.setdefault(c.spec.variant, c.failures[0].code.value)
    return out


def refused_named(remediation: str, refused: dict[str, str], own: str) -> list[str]:
    """The variants of ``refused`` (other than ``own``) that ``remediation`` names, in the order it names them."""
    found = []
    for variant in refused:
        if variant != own:
            m = re.search(rf"(?<![\w-]){re.escape(variant)}(?![\w-])", remediation)
            if m:
                found.append((m.start(), variant))
    return [v for _, v in sorted(found)]


def mark_refused(ranked: list[Candidate], converted: list[Candidate]) -> tuple[list[Candidate], list[Candidate]]:
    """``ranked`` and ``converted`` with each failing reason's remediation closing on the variants it names that
    the group refuses (with their codes)."""
    refused = _refused(ranked + converted)
    if not refused:
        return ranked, converted

    def marked(c: Candidate) -> Candidate:
        reasons = []
        changed = False
        for r in c.reasons:
            names = refused_named(r.remediation, refused, c.spec.variant) if r.remediation else []
            if names:
                said = ", ".join(f"{n} ({refused[n]})" for n in names)
                verb = "is" if len(names) == 1 else "are"
                whose = "its row" if len(names) == 1 else "their rows"
                r = replace(
                    r, remediation=f"{r.remediation.rstrip('. ')}; {REFUSED_TOO} {said} {verb} refused too: see {whose}"
                )
                changed = True
            reasons.append(r)
        return replace(c, reasons=tuple(reasons)) if changed else c

    return [marked(c) for c in ranked], [marked(c) for c in converted]
