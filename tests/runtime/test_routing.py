"""Reference routing: hand-computed small cases and properties."""

from __future__ import annotations

import math

import pytest
import torch

from moe_oracle.errors import BadInputError
from moe_oracle.model.types import Routing, Scoring
from moe_oracle.runtime.routing import random_hash_table, route

from .conftest import small_group


def _group(scoring: Scoring, *, e=8, k=2, bias=False, hash_=False, renorm=True, rsf=1.0, groups=1, topk_groups=1):
    routing = Routing(
        scoring=scoring,
        hash=hash_,
        correction_bias=bias,
        renormalize=renorm,
        num_groups=groups,
        topk_groups=topk_groups,
        routed_scaling_factor=rsf,
    )
    return small_group().model_copy(update={"num_experts": e, "top_k": k, "routing": routing})


def test_sqrtsoftplus_bias_steers_choice_but_not_weights():
    g = _group(Scoring.SQRTSOFTPLUS, e=4, k=2, bias=True, rsf=1.5)
    logits = torch.tensor([[2.0, 1.0, 0.0, -1.0]])
    bias = torch.tensor([0.0, 0.0, 5.0, 0.0])
    ids, w = route(g, logits, bias=bias)
    s = [math.sqrt(math.log1p(math.exp(v))) for v in (2.0, 1.0, 0.0, -1.0)]
    # selection by s + bias: expert 2 (0.83 + 5) then expert 0 (1.46)
    assert ids.tolist() == [[2, 0]]
    expected = [s[2] / (s[2] + s[0]) * 1.5, s[0] / (s[2] + s[0]) * 1.5]
    assert w.dtype == torch.float32 and ids.dtype == torch.int64
    assert w[0].tolist() == pytest.approx(expected, rel=1e-6)


def test_hash_layer_uses_table_and_sqrtsoftplus_weights():
    g = _group(Scoring.SQRTSOFTPLUS, e=4, k=2, hash_=True, rsf=2.0)
    table = torch.tensor([[3, 1], [0, 2]])
    logits = torch.tensor([[0.5, -0.5, 1.0, 2.0], [0.0, 0.0, 0.0, 0.0]])
    ids, w = route(g, logits, token_ids=torch.tensor([0, 1]), hash_table=table)
    assert ids.tolist() == [[3, 1], [0, 2]]
    sp = lambda v: math.sqrt(math.log1p(math.exp(v)))  # noqa: E731
    assert w[0].tolist() == pytest.approx([2 * sp(2.0) / (sp(2.0) + sp(-0.5)), 2 * sp(-0.5) / (sp(2.0) + sp(-0.5))])
    assert w[1].tolist() == pytest.approx([1.0, 1.0])
    with pytest.raises(BadInputError, match="hash-routed"):
        route(g, logits)


def test_grouped_sigmoid_top2_group_score():
    # 8 experts in 4 groups of 2; keep 2 groups by the sum of the top-2 biased scores
    g = _group(Scoring.SIGMOID, e=8, k=2, bias=True, groups=4, topk_groups=2, rsf=2.5)
    logits = torch.tensor([[3.0, -3.0, 1.0, 1.0, 2.9, -9.0, -0.1, -0.1]])
    bias = torch.zeros(8)
    ids, w = route(g, logits, bias=bias)
    s = torch.sigmoid(logits[0])
    gs = [float(s[0] + s[1]), float(s[2] + s[3]), float(s[4] + s[5]), float(s[6] + s[7])]
    kept = sorted(range(4), key=lambda i: -gs[i])[:2]
    assert kept == [1, 0]  # group of expert 4 (2.9 but -9 beside it) loses to the balanced group 1
    assert sorted(ids[0].tolist()) == [0, 2] or sorted(ids[0].tolist()) == [0, 3]
    picked = ids[0].tolist()
    ref = s[picked] / s[picked].sum() * 2.5
    assert torch.allclose(w[0], ref)


def test_sigmoid_weights_unbiased_and_renormalize_flag():
    g = _group(Scoring.SIGMOID, e=6, k=3, bias=True, renorm=False, rsf=1.0)
    logits = torch.randn(5, 6, generator=torch.Generator().manual_seed(0))
    bias = torch.randn(6, generator=torch.Generator().manual_seed(1))
    ids, w = route(g, logits, bias=bias)
    # unbiased, not renormalized: the scores themselves (computed in fp64, rounded once: within an fp32 ulp of
    # torch's fp32 sigmoid)
    assert torch.equal(w, torch.gather(torch.sigmoid(logits.double()).float(), 1, ids))
    torch.testing.assert_close(w, torch.gather(torch.sigmoid(logits), 1, ids), rtol=2.4e-7, atol=0)
    sel = torch.sigmoid(logits) + bias
    assert torch.equal(torch.sort(ids, dim=1).values, torch.sort(torch.topk(sel, 3, dim=1).indices, dim=1).values)


def test_softmax_routing():
    g = _group(Scoring.SOFTMAX, e=5, k=2)
    logits = torch.tensor([[1.0, 3.0, 2.0, 0.0, -1.0]])
    ids, w = route(g, logits)
    assert ids.tolist() == [[1, 2]]
    p = torch.softmax(logits, dim=-1)[0]
    assert w[0].tolist() == pytest.approx([float(p[1] / (p[1] + p[2])), float(p[2] / (p[1] + p[2]))])


@pytest.mark.parametrize("scoring", list(Scoring))
def test_properties(scoring):
    gen = torch.Generator().manual_seed(7)
    g = _group(scoring, e=16, k=4, bias=True, rsf=2.5, groups=4, topk_groups=2)
    logits = torch.randn(64, 16, generator=gen) * 3
    ids, w = route(g, logits, bias=0.1 * torch.randn(16, generator=gen))
    assert ids.shape == (64, 4) and w.shape == (64, 4)
    assert ((ids >= 0) & (ids < 16)).all()
    assert all(len(set(r)) == 4 for r in ids.tolist())  # distinct experts per token
    assert torch.allclose(w.sum(dim=1), torch.full((64,), 2.5), atol=1e-5)  # renormalized * rsf
    assert (w > 0).all()
    # all chosen experts lie in at most topk_groups groups
    assert all(len({e // 4 for e in r}) <= 2 for r in ids.tolist())


def test_missing_bias_and_bad_shapes():
    g = _group(Scoring.SIGMOID, e=8, k=2, bias=True)
    with pytest.raises(BadInputError, match="e_score_correction_bias"):
        route(g, torch.zeros(2, 8))
    with pytest.raises(BadInputError, match=r"\[T, 8\]"):
        route(g, torch.zeros(2, 7), bias=torch.zeros(8))


def test_random_hash_table_rows_distinct():
    t = random_hash_table(100, 16, 6, generator=torch.Generator().manual_seed(0))
    assert t.shape == (100, 6) and t.dtype == torch.int64
    assert all(len(set(r)) == 6 for r in t.tolist())


@pytest.mark.parametrize("scoring", list(Scoring))
def test_scores_in_fp64_rounded_once_and_renormalized_in_selection_order(scoring):
    """route()'s numerics (module docstring): what the fused router kernel reproduces bit for bit."""
    g = _group(scoring, e=32, k=5, bias=True, rsf=2.5)
    gen = torch.Generator().manual_seed(3)
    logits = torch.randn(40, 32, generator=gen) * 4
    bias = 0.1 * torch.randn(32, generator=gen)
    ids, w = route(g, logits, bias=bias)
    x = logits.double()
    if scoring is Scoring.SIGMOID:
        s = torch.sigmoid(x)
    elif scoring is Scoring.SOFTMAX:
        s = torch.softmax(x, dim=-1)
    else:
        s = torch.sqrt(torch.nn.functional.softplus(x))
    s = s.float()
    assert torch.equal(ids, torch.sort(s + bias, dim=-1, descending=True, stable=True).indices[:, :5])
    picked = torch.gather(s, 1, ids)
    denom = picked.double()[:, 0]
    for j in range(1, 5):
        denom = denom + picked.double()[:, j]
    assert torch.equal(w, picked / denom.float()[:, None] * torch.tensor(2.5))
