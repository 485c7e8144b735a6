"""The question object and the two halves of decide(): the automatic choice and the override."""

from __future__ import annotations

import dataclasses

import pytest

from moe_oracle.cost.model import Workload
from moe_oracle.decide.question import ConversionOptions, Question
from moe_oracle.decide.record import decision_to_json
from moe_oracle.decide.selection import Override, decide, decide_automatically, decide_with_override
from moe_oracle.errors import OverrideRefusedError
from moe_oracle.inputs import DeploymentFlags, build_deployment, resolve_software
from moe_oracle.model.resolve import resolve_model
from moe_oracle.rules import Engine
from tests.oracle.helpers import V4_FLASH


def _question(device: str = "h200", engine: Engine = Engine.NONE, **flags: object) -> Question:
    deployment, _ = build_deployment(DeploymentFlags(device=device, dp=8, ep=8, **flags))  # type: ignore[arg-type]
    software, _ = resolve_software(None, device)
    return Question.of(resolve_model(V4_FLASH), deployment, software, engine=engine)


def test_question_is_frozen_and_fills_the_defaults():
    q = _question()
    assert q.workload == Workload.default(q.deployment.parallel.tokens_per_rank)
    assert q.conversion == ConversionOptions()
    assert q.engine_version is None and _question(engine=Engine.VLLM).engine_version == "0.33.0"
    with pytest.raises(dataclasses.FrozenInstanceError):
        q.engine = Engine.VLLM  # type: ignore[misc]
    group = q.model.main_group
    scenario = q.scenario(group)
    assert (scenario.group, scenario.deployment, scenario.architecture) == (group, q.deployment, q.model.architecture)


def test_decide_is_the_automatic_choice_of_its_question():
    q = _question()
    via_decide = decide(q.model, q.deployment, q.software)
    direct = decide_automatically(q)
    assert direct.question == via_decide.question == q
    assert decision_to_json(direct) == decision_to_json(via_decide)
    assert direct.override is None and direct.main.chosen is not None


def test_decide_with_override_puts_the_override_first_and_keeps_the_rest():
    q = _question()
    auto = decide_automatically(q)
    wanted = next(c for c in auto.main.candidates if c.eligible and c is not auto.main.chosen)
    d = decide_with_override(q, Override(wanted.spec.backend, wanted.spec.variant))
    assert d.main.chosen is not None and d.main.chosen.key == wanted.key
    assert d.main.candidates[0].key == wanted.key
    assert sorted(c.key for c in d.main.candidates) == sorted(c.key for c in auto.main.candidates)
    assert (d.main.notes, d.main.conversions, d.main.fallback) == (auto.main.notes, auto.main.conversions, None)
    assert d == decide(q.model, q.deployment, q.software, override=Override(wanted.spec.backend, wanted.spec.variant))


def test_a_refused_override_raises_or_falls_back_with_a_warning():
    q = _question()
    refused = Override("aiter_mega_moe")
    with pytest.raises(OverrideRefusedError):
        decide_with_override(q, refused)
    d = decide_with_override(q, refused, allow_fallback=True)
    assert d.groups == decide_automatically(q).groups
    assert d.warnings and all("--moe-backend aiter_mega_moe cannot run" in w for w in d.warnings)
