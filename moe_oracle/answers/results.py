"""The public API's results: frozen, typed values over one decision.

:class:`Selection` (``moe_oracle.select``), :class:`Verdict` (``moe_oracle.check``) and :class:`Plan`
(``moe_oracle.plan``) each carry ``.fingerprint``, ``.groups`` (one :class:`Group` per layer group the launch
builds: what was chosen, every rejected candidate with its reasons), ``.fit``, ``.advisories`` and
``.to_dict()``, which is the document the CLI prints with ``--json`` for the same question (a fresh copy on
every call, so a caller cannot change the result). A reason is :class:`moe_oracle.rules.Reason`: its ``code``
is the closed :class:`~moe_oracle.rules.ReasonCode` enum, ``message`` states the actual values, ``rule`` the
requirement, ``fix`` (``remediation``) what to change.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from moe_oracle.cost.held_out import HeldOutError
from moe_oracle.cost.near_tie import NearTie
from moe_oracle.rules import Reason, ReasonCode

if TYPE_CHECKING:
    from moe_oracle.decide.candidates import Candidate
    from moe_oracle.decide.fit import Fit
    from moe_oracle.decide.selection import Decision, GroupDecision
    from moe_oracle.fit.server import Command
    from moe_oracle.launch.model import LaunchPlan


@dataclass(frozen=True)
class Rejected:
    """A candidate that cannot run a layer group, with every reason (each with its code, values, rule and fix)."""

    candidate: str
    reasons: tuple[Reason, ...]

    @property
    def codes(self) -> tuple[ReasonCode, ...]:
        """The reason codes, in order, each once."""
        return tuple(dict.fromkeys(r.code for r in self.reasons))


@dataclass(frozen=True)
class Group:
    """One layer group's answer. ``chosen``: ``backend:variant`` (None: no fused backend, ``fallback`` says what
    runs); ``chosen_label`` adds a load-time conversion; ``rejected``: every candidate that cannot run it;
    ``near_ties``: the paths the cost model ranks within its transfer error on this unmeasured shape (the workload's
    or a span of batch sizes), which ``moe-oracle tune`` settles on the GPU. ``expected_us``: the chosen path's (with
    no fused path chosen, the measured non-fused fallback's) expected microseconds per layer call over the workload,
    on ``cost_basis``; ``held_out_error``: where that cost was estimated from other shapes, how far the same fit was
    off on measured shapes it was not given (:mod:`moe_oracle.cost.held_out`; None for this shape's own
    measurements, or where nothing was scored)."""

    name: str
    layers: tuple[int, ...]
    chosen: str | None
    chosen_label: str | None
    accuracy_class: str | None
    fallback: str | None
    rejected: tuple[Rejected, ...]
    notes: tuple[str, ...] = ()
    near_ties: tuple[NearTie, ...] = ()
    expected_us: float | None = None
    cost_basis: str | None = None
    held_out_error: HeldOutError | None = None

    @classmethod
    def of(cls, gd: GroupDecision) -> Group:
        c = gd.chosen
        # what runs: the chosen fused path, else the measured non-fused path the fallback names
        cost = c.cost if c is not None else gd.nonfused.cost if gd.nonfused is not None else None
        return cls(
            name=gd.group.name,
            layers=tuple(gd.group.layers),
            chosen=None if c is None else c.spec.key,
            chosen_label=None if c is None else c.label,
            accuracy_class=None if c is None else c.accuracy_class,
            fallback=gd.fallback,
            rejected=tuple(_rejected(r) for r in gd.rejected),
            notes=tuple(gd.notes),
            near_ties=gd.near_ties,
            expected_us=None if cost is None else cost.us,
            cost_basis=None if cost is None else cost.basis,
            held_out_error=None if cost is None else cost.held_out,
        )


def _rejected(c: Candidate) -> Rejected:
    return Rejected(c.label, tuple(c.failures))


@dataclass(frozen=True)
class AdvisoryHit:
    """A known-bad advisory this answer met: ``applies`` when it rejects a candidate here (``KNOWN_BAD``), else it
    concerns a chosen variant under other software (a note every output shows); ``variants`` it names here."""

    id: str
    title: str
    link: str
    applies: bool
    variants: tuple[str, ...]


def advisory_hits(decision: Decision) -> tuple[AdvisoryHit, ...]:
    """The advisories that reject a candidate of ``decision``, then those noted next to a chosen variant."""
    found: dict[tuple[str, bool], list[str]] = {}
    by_id = {adv.id: adv for adv in decision.question.advisories}
    for gd in decision.groups:
        for cand in (*gd.candidates, *gd.conversions):
            for r in cand.reasons:
                if r.code is ReasonCode.KNOWN_BAD:
                    adv_id = r.message.split(":", 1)[0]
                    if adv_id in by_id:
                        _add(found, (adv_id, True), cand.spec.key)
    for adv, spec in decision.nearby_advisories():
        _add(found, (adv.id, False), spec.key)
    return tuple(
        AdvisoryHit(adv_id, by_id[adv_id].title, by_id[adv_id].link, applies, tuple(variants))
        for (adv_id, applies), variants in found.items()
        if adv_id in by_id
    )


def _add(found: dict[tuple[str, bool], list[str]], key: tuple[str, bool], variant: str) -> None:
    names = found.setdefault(key, [])
    if variant not in names:
        names.append(variant)


@dataclass(frozen=True)
class Selection:
    """The answer of ``moe_oracle.select``: the backend of every layer group, the memory fit (None where the
    question was asked without one: an engine plug-in's, whose engine sizes its own memory), the advisories met.
    ``decision`` is the full internal decision (every candidate, costs, notes) for callers that render it."""

    decision: Decision
    fit: Fit | None
    _document: dict[str, Any] = field(repr=False, compare=False)

    @property
    def fingerprint(self) -> str:
        """The decision record's fingerprint (paste it into a bug report; ``select --replay`` checks it)."""
        return str(self._document["fingerprint"])

    @property
    def groups(self) -> tuple[Group, ...]:
        return tuple(Group.of(gd) for gd in self.decision.groups)

    @property
    def chosen(self) -> str | None:
        """The first layer group's ``backend:variant`` (None: no fused backend)."""
        return self.groups[0].chosen

    @property
    def advisories(self) -> tuple[AdvisoryHit, ...]:
        return advisory_hits(self.decision)

    @property
    def warnings(self) -> tuple[str, ...]:
        return tuple(self._document.get("warnings", ()))

    def to_dict(self) -> dict[str, Any]:
        """The ``moe-oracle select --json`` document of the same question."""
        return copy.deepcopy(self._document)


@dataclass(frozen=True)
class GroupVerdict:
    """Whether the named backend can run one layer group: the candidates of that backend that cannot, with every
    reason, and the one chosen when it can."""

    name: str
    layers: tuple[int, ...]
    chosen: str | None
    rejected: tuple[Rejected, ...]

    @property
    def eligible(self) -> bool:
        return self.chosen is not None


@dataclass(frozen=True)
class Verdict:
    """The answer of ``moe_oracle.check``: can ``backend`` (``NAME`` or ``NAME:VARIANT``) run every layer group?
    ``selection`` is the decision with it chosen (None when it cannot run); ``refusal`` the one-line error
    ``select --moe-backend`` exits 3 with (None when it can). The fingerprint is the decision's with the backend
    chosen, else the automatic decision's."""

    backend: str
    groups: tuple[GroupVerdict, ...]
    selection: Selection | None
    automatic: Selection
    refusal: str | None = None
    trail: tuple[str, ...] = ()

    @property
    def eligible(self) -> bool:
        return self.selection is not None

    @property
    def fingerprint(self) -> str:
        return (self.selection or self.automatic).fingerprint

    @property
    def fit(self) -> Fit | None:
        return (self.selection or self.automatic).fit

    @property
    def advisories(self) -> tuple[AdvisoryHit, ...]:
        return (self.selection or self.automatic).advisories

    @property
    def reasons(self) -> tuple[Reason, ...]:
        """Every reason of every refused candidate of the backend, in group order."""
        return tuple(r for g in self.groups for rej in g.rejected for r in rej.reasons)

    @property
    def codes(self) -> tuple[ReasonCode, ...]:
        return tuple(dict.fromkeys(r.code for r in self.reasons))

    def to_dict(self) -> dict[str, Any]:
        """The ``select --moe-backend B --json`` document when the backend can run; otherwise the refusal that
        command exits 3 with, as a document (every reason with its code, values, rule and fix)."""
        if self.selection is not None:
            return self.selection.to_dict()
        return {
            "backend": self.backend,
            "eligible": False,
            "error": self.refusal,
            "exit_code": 3,
            "fingerprint": self.automatic.fingerprint,
            "groups": [
                {
                    "name": g.name,
                    "eligible": g.eligible,
                    "rejected": [
                        {"candidate": rej.candidate, "reasons": [r.to_json() for r in rej.reasons]}
                        for rej in g.rejected
                    ],
                }
                for g in self.groups
            ],
        }


@dataclass(frozen=True)
class Plan:
    """The answer of ``moe_oracle.plan``: the serve command(s), their environment, the derived sizes with their
    inputs and formulas, the memory fit, and the decision they launch (the one ``select`` makes)."""

    launch: LaunchPlan = field(repr=False)

    @property
    def fingerprint(self) -> str:
        return self.launch.fingerprint

    @property
    def selection(self) -> Selection:
        return Selection(self.launch.decision_obj, self.launch.fit, self.launch.decision)

    @property
    def groups(self) -> tuple[Group, ...]:
        return self.selection.groups

    @property
    def fit(self) -> Fit:
        return self.launch.fit

    @property
    def advisories(self) -> tuple[AdvisoryHit, ...]:
        return self.selection.advisories

    @property
    def argv(self) -> tuple[str, ...]:
        """The (first) serve command's words."""
        return tuple(self.launch.argv)

    @property
    def env(self) -> dict[str, str]:
        """The (first) serve command's environment."""
        return dict(self.launch.env)

    @property
    def commands(self) -> tuple[Command, ...]:
        """Every process to start (one per node of each replica), each with its argv, environment, replica and
        node rank."""
        return tuple(self.launch.commands)

    @property
    def warnings(self) -> tuple[str, ...]:
        return tuple(self.launch.warnings)

    def to_dict(self) -> dict[str, Any]:
        """The ``moe-oracle plan --json`` document of the same question."""
        return copy.deepcopy(self.launch.to_json())
