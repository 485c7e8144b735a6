"""Reference routing (torch): router logits -> ``(topk_ids int64, topk_weights fp32)``.

The fused kernels take routing from the caller; this is the caller's reference. Methods, selected
from the layer group's :class:`~moe_oracle.model.types.Routing`:

* **sqrtsoftplus** (DeepSeek V4 score layers, vLLM ``RoutingMethodType.DeepseekV4``):
  ``s = sqrt(softplus(logit))``; experts = top-k of ``s + e_score_correction_bias`` (the bias
  steers the choice only); weights = ``s`` at those experts, renormalized to sum 1, times
  ``routed_scaling_factor``.
* **hash** (DeepSeek V4's first ``num_hash_layers``): experts = ``tid2eid[token_id]`` (a
  ``[vocab, k]`` table); weights = ``sqrt(softplus(logit))`` at those experts (no bias),
  renormalized, times rsf.
* **sigmoid** (GLM 4.x/5.x, DeepSeek V3, ``RoutingMethodType.DeepSeekV3``): ``s = sigmoid(logit)``;
  with groups, group score = sum of the top-2 biased scores per group, keep ``topk_groups``
  groups, top-k of the biased scores inside them; weights = unbiased ``s`` (renormalized if
  ``renormalize``) times rsf. Without groups (``num_groups == 1``) it is top-k of ``s + bias``.
* **softmax**: ``p = softmax(logits)``; experts = top-k of ``p`` (+ bias, grouped as above when
  ``num_groups > 1``, group score = max); weights ``p`` (renormalized if ``renormalize``) * rsf.

Ties between equal selection scores are broken towards the lower expert index (``torch.topk`` on
CPU and CUDA agree for distinct values; exact ties are resolved by a stable sort here).

Numerics (issue 31): the scores are computed in **fp64** from the fp32 logits and rounded **once** to
fp32; everything after that is fp32 and exactly specified: ``sel = s + bias`` (one IEEE add), the
top-2 group score ``a + b`` of two fp32 values, the stable top-k, the renormalisation denominator as
the sum of the chosen scores in selection order accumulated in fp64 and rounded once to fp32, one
IEEE division and one multiplication by rsf. Why: an fp32 ``exp``/``log1p``/``softmax`` differs by an
ulp or two between implementations (torch's CPU and CUDA kernels, libdevice, numpy, a reduction
order), so an fp32 reference is reproducible only by re-implementing one library's kernels. A score
computed in fp64 is within a few fp64 ulps of the exact value, so every implementation that computes
in fp64 and rounds once gets the same fp32 score except when the exact value lies within a few fp64
ulps of an fp32 rounding midpoint (probability about 2^-28 per score). That makes the reference the
same on CPU and GPU, and lets :mod:`moe_oracle.kernels.router_triton` (the router top-k fused with
the SM90 staging) match it bit for bit, under Triton's interpreter on the CPU too. The fp32 scores
are also closer to exact than fp32 arithmetic gave (at most half an ulp off instead of one or two);
the choice of experts changes only where two selection scores lay within an ulp of each other.
"""

from __future__ import annotations

import torch

from moe_oracle.errors import BadInputError
from moe_oracle.model.types import MoELayerGroup, Scoring


def _topk_stable(scores: torch.Tensor, k: int) -> torch.Tensor:
    """Indices of the k largest entries per row, ties to the lower index (deterministic)."""
    order = torch.sort(scores, dim=-1, descending=True, stable=True).indices
    return order[..., :k]


def _finish(
    scores: torch.Tensor, ids: torch.Tensor, renormalize: bool, rsf: float
) -> tuple[torch.Tensor, torch.Tensor]:
    """Weights at ``ids`` (fp32 scores): renormalised by their fp64 sum in selection order, times rsf."""
    w = torch.gather(scores, 1, ids)
    if renormalize:
        acc = torch.zeros(w.shape[0], 1, dtype=torch.float64, device=w.device)
        for j in range(w.shape[1]):  # selection order, in fp64: the fused kernel accumulates the same way
            acc = acc + w[:, j : j + 1].double()
        w = w / acc.float()
    return ids.to(torch.int64), (w * torch.tensor(rsf, dtype=torch.float32)).to(torch.float32)


def _grouped_select(sel: torch.Tensor, k: int, num_groups: int, topk_groups: int, top2_sum: bool) -> torch.Tensor:
    t, e = sel.shape
    if num_groups <= 1:
        return _topk_stable(sel, k)
    g = sel.view(t, num_groups, e // num_groups)
    group_scores = torch.sort(g, dim=-1, descending=True).values[..., :2].sum(dim=-1) if top2_sum else g.amax(dim=-1)
    keep = _topk_stable(group_scores, topk_groups)
    mask = torch.zeros(t, num_groups, dtype=torch.bool, device=sel.device)
    mask.scatter_(1, keep, True)
    masked = sel.masked_fill(~mask.repeat_interleave(e // num_groups, dim=1), float("-inf"))
    return _topk_stable(masked, k)


def sqrt_softplus(logits: torch.Tensor) -> torch.Tensor:
    """``sqrt(softplus(logit))`` computed in fp64 and rounded once to fp32 (module docstring)."""
    return torch.sqrt(torch.nn.functional.softplus(logits.double())).float()


def route(
    group: MoELayerGroup,
    logits: torch.Tensor,
    bias: torch.Tensor | None = None,
    token_ids: torch.Tensor | None = None,
    hash_table: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Route ``[T, E]`` router logits (any float dtype, taken as fp32; scores in fp64, see the module) for ``group``.

    ``bias`` is the ``e_score_correction_bias [E]`` (required when the group has one, ignored on
    hash layers); ``token_ids [T]`` and ``hash_table [vocab, k]`` are required on hash layers.
    Returns ``topk_ids [T, k] int64`` and ``topk_weights [T, k] fp32`` (renormalized, times the
    routed scaling factor), ready for :meth:`MegaMoELayer.forward`.
    """
    r = group.routing
    k = group.top_k
    if logits.dim() != 2 or logits.shape[1] != group.num_experts:
        raise BadInputError(f"router logits must be [T, {group.num_experts}], got {tuple(logits.shape)}")
    logits = logits.float()
    rsf = float(r.routed_scaling_factor)
    if r.hash:
        if token_ids is None or hash_table is None:
            raise BadInputError(
                f"layer group '{group.name}' is hash-routed: route() needs token_ids and hash_table",
                fix="pass the input token ids and the gate's tid2eid [vocab, top_k] table",
            )
        if hash_table.dim() != 2 or hash_table.shape[1] != k:
            raise BadInputError(f"hash_table must be [vocab, {k}], got {tuple(hash_table.shape)}")
        ids = hash_table.to(logits.device)[token_ids.to(torch.int64).to(logits.device)].to(torch.int64)
        scores = sqrt_softplus(logits) if r.scoring is Scoring.SQRTSOFTPLUS else _score(logits, r.scoring)
        return _finish(scores, ids, r.renormalize, rsf)
    scores = _score(logits, r.scoring)
    sel = scores
    if r.correction_bias:
        if bias is None:
            raise BadInputError(
                f"layer group '{group.name}' has an e_score_correction_bias: route() needs bias [E]",
                fix="pass the gate's e_score_correction_bias",
            )
        sel = scores + bias.float().to(scores.device).reshape(1, -1)
    elif bias is not None:
        sel = scores + bias.float().to(scores.device).reshape(1, -1)
    top2 = r.scoring is not Scoring.SOFTMAX
    ids = _grouped_select(sel, k, r.num_groups, r.topk_groups, top2_sum=top2)
    return _finish(scores, ids, r.renormalize, rsf)


def _score(logits: torch.Tensor, scoring: Scoring) -> torch.Tensor:
    """fp32 scores of fp32 ``logits``, computed in fp64 and rounded once (module docstring)."""
    if scoring is Scoring.SQRTSOFTPLUS:
        return sqrt_softplus(logits)
    if scoring is Scoring.SIGMOID:
        return torch.sigmoid(logits.double()).float()
    if scoring is Scoring.SOFTMAX:
        return torch.softmax(logits.double(), dim=-1).float()
    raise BadInputError(f"unknown scoring function {scoring}")


def random_hash_table(
    vocab: int, num_experts: int, top_k: int, *, generator: torch.Generator | None = None
) -> torch.Tensor:
    """A ``[vocab, k]`` table of distinct expert ids per row (stand-in for ``gate.tid2eid``)."""
    keys = torch.rand(vocab, num_experts, generator=generator)
    return keys.argsort(dim=1)[:, :top_k].to(torch.int64)
