"""Build the capability matrix through the door ``select`` goes through (:mod:`moe_oracle.answers`), one call per
scenario.

A cell is (variant, scenario), judged on the model's main layer group (``layer_groups[0]``);
it also keeps the variant's verdict on every other layer group. A cell is ``supported``
(eligible; maybe the oracle's choice), ``unverifiable`` (eligible, but some rule is UNKNOWN:
not verifiable from declarations) or ``rejected`` (at least one rule fails).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Any

from moe_oracle.answers.door import settle
from moe_oracle.decide.fit import GIB, Fit
from moe_oracle.decide.record import decision_fingerprint
from moe_oracle.decide.selection import Candidate, Decision
from moe_oracle.model.spans import layer_span
from moe_oracle.model.types import MoELayerGroup
from moe_oracle.registry import Registry, load_registry
from moe_oracle.report.scenarios import ScenarioSpec
from moe_oracle.rules import Reason, ReasonCode, Status, VariantSpec

MATRIX_SCHEMA = 1


class Verdict(str, Enum):
    SUPPORTED = "supported"
    UNVERIFIABLE = "unverifiable"
    REJECTED = "rejected"


def verdict_of(candidate: Candidate) -> Verdict:
    if not candidate.eligible:
        return Verdict.REJECTED
    if candidate.unverified:
        return Verdict.UNVERIFIABLE
    return Verdict.SUPPORTED


@dataclass(frozen=True)
class GroupVerdict:
    """One variant's verdict on one layer group of the scenario's model."""

    group: MoELayerGroup
    verdict: Verdict
    chosen: bool
    reasons: tuple[Reason, ...]
    expected_us: float | None
    conversion: str | None = None  # "mxfp4->fp8_block" when served after a load-time conversion
    accuracy_class: str = "standard"  # see moe_oracle.decide.accuracy_class
    validated: str = ""  # the candidate's validation for this scenario (Candidate.validation_text)
    unreleased_build: str | None = None  # Candidate.unreleased_build: which unreleased build serves it, from where

    def to_json(self) -> dict[str, Any]:
        return {
            "group": self.group.name,
            "layers": layer_span(self.group.layers),
            "weight_format": self.group.weight_format.value,
            "weights": self.group.weight_quant.label(),
            "verdict": self.verdict.value,
            "chosen": self.chosen,
            "conversion": self.conversion,
            "accuracy_class": self.accuracy_class,
            "expected_us": self.expected_us,
            "validated": self.validated,
            "unreleased_build": self.unreleased_build,
            "reasons": [r.to_json() for r in self.reasons],
        }


@dataclass(frozen=True)
class MatrixScenario:
    """A scenario and the decision ``decide`` made for it."""

    spec: ScenarioSpec
    decision: Decision
    memory: str = "FITS"
    fingerprint: str = ""  # the fingerprint of `select --json` for this scenario's question
    #: What one rank needs against the engine's share (GiB), from the scenario's fit; None when not measured.
    need_gib: float | None = None
    usable_gib: float | None = None

    @property
    def need_text(self) -> str:
        """``133.4 GiB per rank against 128.6 GiB`` (the fit's figures, each with its unit), or "" when not
        measured."""
        if self.need_gib is None or self.usable_gib is None:
            return ""
        return f"{self.need_gib:.1f} GiB per rank against {self.usable_gib:.1f} GiB"

    @property
    def id(self) -> str:
        return self.spec.id

    @property
    def fits(self) -> bool:
        """Whether the deployment holds its weights (no choice is starred where it cannot)."""
        return self.memory != "DOES NOT FIT"

    @property
    def chosen(self) -> str | None:
        """The oracle's choice for the main layer group (``backend:variant``), or None (also where the deployment
        cannot hold its weights)."""
        c = self.decision.main.chosen
        return c.key if c is not None and self.fits else None

    @property
    def fallback(self) -> str | None:
        return self.decision.main.fallback

    @property
    def advisory_notes(self) -> tuple[str, ...]:
        """The advisories about the starred choice that do not reject it here (as select and plan print them)."""
        return self.decision.advisory_notes() if self.chosen is not None else ()

    def fields(self) -> dict[str, Any]:
        """The scenario's fields as JSON values (repeated in every cell record)."""
        spec = self.spec
        dep = spec.deployment
        main = spec.model.main_group
        return {
            "scenario": spec.id,
            "model": spec.model.model,
            "architecture": spec.model.architecture,
            "weight_format": main.weight_format.value,
            "weights": main.weight_quant.label(),
            "device": spec.device.name,
            "arch": spec.device.arch.value,
            "topology": spec.topology.name,
            "nodes": dep.topology.nodes,
            "gpus_per_node": dep.topology.gpus_per_node,
            "domain_size": dep.topology.domain_size,
            "tp": dep.parallel.tp,
            "dp": dep.parallel.dp,
            "ep": dep.parallel.ep,
            "engine": spec.engine.value,
            "software": spec.software.name,
            "scenario_choice": self.chosen,
            "fallback": self.fallback,
            "memory_fit": self.memory,
            "memory_need": self.need_text,
            "advisory_notes": list(self.advisory_notes),
            **({"fingerprint": self.fingerprint} if self.fingerprint else {}),
            "select_command": spec.select_command(),
        }


@dataclass(frozen=True)
class Cell:
    """One variant in one scenario, judged on the main layer group."""

    variant: VariantSpec
    scenario: MatrixScenario
    groups: tuple[GroupVerdict, ...]

    @property
    def main(self) -> GroupVerdict:
        return self.groups[0]

    @property
    def verdict(self) -> Verdict:
        return self.main.verdict

    @property
    def chosen(self) -> bool:
        return self.main.chosen

    @property
    def conversion(self) -> str | None:
        return self.main.conversion

    @property
    def accuracy_class(self) -> str:
        return self.main.accuracy_class

    @property
    def reasons(self) -> tuple[Reason, ...]:
        return self.main.reasons

    @property
    def failures(self) -> tuple[Reason, ...]:
        return tuple(r for r in self.reasons if r.status is Status.FAIL)

    @property
    def shown(self) -> tuple[Reason, ...]:
        """The reasons that make the verdict: failures if rejected, else the unverifiable rules."""
        if self.verdict is Verdict.REJECTED:
            return self.failures
        return tuple(r for r in self.reasons if r.status is Status.UNKNOWN)

    @property
    def code(self) -> ReasonCode | None:
        """The first reason code shown for the cell (None when supported)."""
        shown = self.shown
        return shown[0].code if shown else None

    @property
    def other_arch(self) -> bool:
        """Rejected for the GPU architecture (by any of its failing rules): the variant is built for another
        device, whatever else it would refuse."""
        return self.verdict is Verdict.REJECTED and any(r.code is ReasonCode.ARCH_UNSUPPORTED for r in self.failures)

    @property
    def no_fit(self) -> bool:
        """Eligible (supported or unverifiable), but the scenario's deployment does not fit in memory: not a
        deployment that serves, so not marked supported."""
        return self.verdict is not Verdict.REJECTED and not self.scenario.fits

    @property
    def id(self) -> str:
        return f"{self.scenario.id}|{self.variant.key}"

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            **self.scenario.fields(),
            "backend": self.variant.backend,
            "variant": self.variant.variant,
            "key": self.variant.key,
            "target": self.variant.target,
            "verdict": self.verdict.value,
            "fits_in_memory": not self.no_fit,
            "chosen": self.chosen,
            "accuracy_class": self.accuracy_class,
            "code": None if self.code is None else self.code.value,
            "expected_us": self.main.expected_us,
            "reasons": [r.to_json() for r in self.reasons],
            "groups": [g.to_json() for g in self.groups],
        }


@dataclass(frozen=True)
class Matrix:
    """Rows are variants and columns scenarios; stored scenario-major: ``cells[i][j]`` is scenario i, variant j."""

    variants: tuple[VariantSpec, ...]
    scenarios: tuple[MatrixScenario, ...]
    cells: tuple[tuple[Cell, ...], ...]
    command: str
    broken: tuple[tuple[str, str], ...] = ()

    def all_cells(self) -> list[Cell]:
        return [c for row in self.cells for c in row]

    def cell(self, scenario_id: str, key: str) -> Cell:
        for sc, row in zip(self.scenarios, self.cells, strict=True):
            if sc.id == scenario_id:
                for c in row:
                    if c.variant.key == key:
                        return c
        raise KeyError((scenario_id, key))

    def to_json(self) -> dict[str, Any]:
        from moe_oracle.report.advisory_refs import compact
        from moe_oracle.version import __version__

        advisories = {adv.id: adv for sc in self.scenarios for adv in sc.spec.question.advisories}
        return compact(self._to_json(__version__), advisories.values())

    def _to_json(self, __version__: str) -> dict[str, Any]:
        return {
            "schema": MATRIX_SCHEMA,
            "oracle_version": __version__,
            "command": self.command,
            "judged_on": "layer_groups[0] (the main layer group); 'groups' holds every group's verdict",
            "verdicts": {
                "supported": "eligible (the oracle's choice when 'chosen' is true)",
                "unverifiable": "eligible except for rules whose status is unknown (not verifiable from declarations)",
                "rejected": "at least one rule fails; 'code' is the first failing rule's reason code",
            },
            "variants": [
                {
                    "key": v.key,
                    "backend": v.backend,
                    "variant": v.variant,
                    "target": v.target,
                    "summary": v.summary,
                    "validation": v.validation.value,
                    "validated": v.validation_text,
                }
                for v in self.variants
            ],
            "broken_entry_points": [{"entry_point": ep, "error": err} for ep, err in self.broken],
            "scenarios": [sc.fields() for sc in self.scenarios],
            "cells": [c.to_json() for c in self.all_cells()],
        }


def builtin_registry(registry: Registry | None = None) -> Registry:
    """Only moe-oracle's own variants (for committed docs, which must not depend on plug-ins)."""
    reg = registry or load_registry()
    own = tuple(v for v in reg.variants if reg.origin(v).builtin)
    return Registry(own, libraries=reg.libraries, origins=reg.origins)


def _group_verdicts(decision: Decision, spec: VariantSpec, fits: bool = True) -> tuple[GroupVerdict, ...]:
    """``fits``: False when the deployment cannot hold its weights; then nothing is the oracle's choice."""
    out = []
    for g in decision.groups:
        cand = next(c for c in g.candidates if c.spec.key == spec.key)
        if g.chosen is not None and g.chosen.spec.key == spec.key:
            cand = g.chosen  # possibly the variant after a load-time conversion (its key says so)
        chosen = fits and g.chosen is cand
        us = None if cand.cost is None else round(cand.cost.us, 1)
        conv = cand.conversion.label if cand.conversion else None
        out.append(
            GroupVerdict(
                g.group,
                verdict_of(cand),
                chosen,
                cand.reasons,
                us,
                conv,
                cand.accuracy_class,
                cand.validation_text if cand.eligible else "",
                cand.unreleased_build,
            )
        )
    return tuple(out)


def _decide_and_fit(spec: ScenarioSpec, reg: Registry) -> tuple[Decision, Fit]:
    """The scenario's decision and memory fit exactly as ``select`` gives them for its question
    (:func:`moe_oracle.answers.door.settle`, the door ``select`` goes through: the plan's symmetric buffers counted,
    engine settings that fit adopted, decided again at the per-rank budget they imply)."""
    decision, fit, _ = settle(spec.question, spec.model_source, registry=reg)
    return decision, fit


def build_matrix(
    scenarios: Sequence[ScenarioSpec],
    *,
    registry: Registry | None = None,
    command: str = "moe-oracle matrix",
    fingerprints: bool = True,
) -> Matrix:
    """Decide every scenario once, as ``select`` decides its question (same resolution, same :func:`decide`,
    same fit), and read every candidate's verdict. ``fingerprints``: carry each scenario's ``select`` fingerprint
    (left out of the committed docs: it covers the software profile, which an installed plug-in extends)."""
    reg = registry or load_registry()
    rows: list[tuple[Cell, ...]] = []
    decided: list[MatrixScenario] = []
    for spec in scenarios:
        decision, fit = _decide_and_fit(spec, reg)
        fingerprint = decision_fingerprint(decision) if fingerprints else ""
        msc = MatrixScenario(spec, decision, fit.verdict, fingerprint, fit.needed_bytes / GIB, fit.usable_bytes / GIB)
        decided.append(msc)
        rows.append(tuple(Cell(v, msc, _group_verdicts(decision, v, msc.fits)) for v in reg.variants))
    return Matrix(reg.variants, tuple(decided), tuple(rows), command, reg.broken)
