"""Routing skew as a workload option (issue #31 item 4): ``--workload ...@skew=S``.

The skew is the routing ``moe-oracle tune --skew S`` measures (logits offset by -S ln(rank) over a random expert
ranking); the cost of a call is the busiest rank's (its active experts, its share of the token-expert pairs).
benchmarks/skew_check.py compares the model with the skewed H200 runs.
"""

from __future__ import annotations

import pytest

from moe_oracle.cost.active_experts import expected_active_experts, pick_probabilities, skewed_rank
from moe_oracle.cost.model import Workload
from moe_oracle.decide.advisories import load_advisories
from moe_oracle.decide.record import decision_to_json, replay_inputs
from moe_oracle.decide.selection import decide
from moe_oracle.inputs import DeploymentFlags, build_deployment, resolve_software
from moe_oracle.model.resolve import resolve_model
from tests.oracle.helpers import GLM5_FP8


def _decide(workload: str):
    dep, _ = build_deployment(DeploymentFlags(device="h200", dp=8, ep=8))
    sw, _ = resolve_software(None, "h200")
    return decide(
        resolve_model(GLM5_FP8), dep, sw, advisories=load_advisories(), workload=Workload.parse(workload, 8192)
    )


def test_no_skew_is_uniform_routing():
    assert skewed_rank(256, 8, 64, 8, 0.0) == (expected_active_experts(256, 8, 64, 8), 1.0)


def test_pick_probabilities_sum_to_top_k_and_fall_with_rank():
    q = pick_probabilities(256, 8, 1.2)
    assert sum(q) == pytest.approx(8.0)
    assert q[0] > q[10] > q[200]


def test_the_busiest_rank_takes_more_pairs_as_ep_grows_and_none_more_at_ep1():
    assert skewed_rank(256, 8, 512, 1, 1.2)[1] == 1.0
    m8, m16 = skewed_rank(256, 8, 512, 8, 1.2)[1], skewed_rank(256, 8, 512, 16, 1.2)[1]
    assert 1.5 < m8 < m16
    # the H200 run at EP 1 saw 49 and 81 active experts at T = 64 and 512 (tune_skew_zipf1.2_glm5.json)
    assert skewed_rank(256, 8, 64, 1, 1.2)[0] == pytest.approx(49, rel=0.1)
    assert skewed_rank(256, 8, 512, 1, 1.2)[0] == pytest.approx(81, rel=0.1)


@pytest.mark.parametrize("text", ["mixed@skew=1.2", "decode@skew=0.5", "1:1,64:1@skew=2"])
def test_parse(text):
    w = Workload.parse(text, 8192)
    assert w.skew > 0 and "routing skew" in w.label


@pytest.mark.parametrize("text", ["mixed@skew=5", "mixed@zipf=1", "mixed@skew=", "mixed@skew=nan", "mixed@"])
def test_bad_skew_is_refused(text):
    with pytest.raises(ValueError, match="skew"):
        Workload.parse(text, 8192)


def test_skew_changes_the_cost_names_itself_and_replays():
    flat, hot = _decide("mixed"), _decide("mixed@skew=1.2")
    a, b = flat.main.chosen.cost, hot.main.chosen.cost
    assert a.us != b.us and "routing skew 1.2" in b.basis and "skew" not in a.basis
    rec = decision_to_json(hot)
    assert rec["inputs"]["workload"]["skew"] == 1.2
    assert "skew" not in decision_to_json(flat)["inputs"]["workload"]  # balanced records are unchanged
    assert replay_inputs(rec)["workload"].skew == 1.2
