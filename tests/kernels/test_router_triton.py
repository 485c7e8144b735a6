"""The fused router (top-k + SM90 staging in one Triton launch) on the GPU: bit-identical to route() + stage().

Also on the GPU: route() gives the same ids and weights on CUDA as on the CPU (scores in fp64, rounded once), and
an SM90 DeepGEMM layer's ``forward_logits`` takes the fused path and leaves the kernel's buffer exactly as
``forward(route(...))`` does (skips without DeepGEMM PR #323).
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

pytestmark = pytest.mark.gpu

#: (experts, top-k, hidden): DeepSeek-V4-Flash and GLM-5
SHAPES = {"v4flash": (256, 6, 4096), "glm5": (256, 8, 6144)}


def _group(shape: str, scoring, groups=(1, 1), bias=True, renorm=True, rsf=2.5):
    from moe_oracle.model.resolve import resolve_model
    from moe_oracle.model.types import Routing

    e, k, h = SHAPES[shape]
    r = Routing(scoring=scoring, correction_bias=bias, renormalize=renorm, num_groups=groups[0],
                topk_groups=groups[1], routed_scaling_factor=rsf)  # fmt: skip
    base = resolve_model("deepseek-ai/DeepSeek-V4-Flash").main_group
    return base.model_copy(update={"num_experts": e, "top_k": k, "hidden_size": h, "routing": r})


@pytest.mark.parametrize("tokens", [1, 64, 2048])
@pytest.mark.parametrize("groups", [(1, 1), (8, 4)])
@pytest.mark.parametrize("scoring", ["softmax", "sigmoid", "sqrtsoftplus"])
@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_fused_router_bit_identical_to_route_and_stage(shape, scoring, groups, tokens):
    if not torch.cuda.is_available():
        pytest.skip("needs a GPU")
    from moe_oracle.kernels.router_triton import route_and_stage, route_topk
    from moe_oracle.kernels.staging_triton import stage
    from moe_oracle.model.types import Scoring
    from moe_oracle.runtime.routing import route

    g = _group(shape, Scoring(scoring), groups)
    e, k, h = SHAPES[shape]
    gen = torch.Generator(device="cuda").manual_seed(tokens * 7 + len(scoring))
    logits = torch.randn(tokens, e, device="cuda", generator=gen) * 2
    logits[0, 5] = logits[0, 3]  # a tie
    bias = 0.1 * torch.randn(e, device="cuda", generator=gen)
    x = torch.randn(tokens, h, device="cuda", generator=gen).bfloat16()
    ids, w = route(g, logits, bias=bias)
    cpu_ids, cpu_w = route(g, logits.cpu(), bias=bias.cpu())
    assert torch.equal(ids.cpu(), cpu_ids) and torch.equal(w.cpu(), cpu_w)  # the reference is device-independent
    cap = tokens + 5
    ox = torch.full((cap, h), float("nan"), device="cuda").to(torch.float8_e4m3fn)  # poisoned
    osf = torch.full((cap, h // 128), -7.0, device="cuda")
    oi = torch.full((cap, k), 12345, device="cuda", dtype=torch.int64)
    ow = torch.full((cap, k), float("nan"), device="cuda")
    route_and_stage(g.routing, k, logits, x, ox[:tokens], osf[:tokens], oi, ow, bias=bias, pad_to=cap)
    rx, rs = torch.empty_like(ox), torch.empty_like(osf)
    ri, rw = torch.empty_like(oi), torch.empty_like(ow)
    stage(x, ids, w, rx[:tokens], rs[:tokens], ri, rw, recipe="fp8_g128", pad_to=cap)
    assert torch.equal(oi, ri) and torch.equal(ow, rw)
    assert torch.equal(ox[:tokens].view(torch.uint8), rx[:tokens].view(torch.uint8))
    assert torch.equal(osf[:tokens], rs[:tokens])
    ti = torch.empty(tokens, k, device="cuda", dtype=torch.int32)
    tw = torch.empty(tokens, k, device="cuda")
    route_topk(g.routing, k, logits, ti, tw, bias=bias)
    assert torch.equal(ti.long(), ids) and torch.equal(tw, w)


def test_routing_path_reasons_on_the_gpu():
    if not torch.cuda.is_available():
        pytest.skip("needs a GPU")
    from dataclasses import replace

    from moe_oracle.model.types import Scoring
    from moe_oracle.rules.recipe import ActQuant
    from moe_oracle.runtime.routing_path import RoutingPath, fused_routing_path
    from moe_oracle.runtime.staging import StagingSpec

    sm90 = StagingSpec(ActQuant.FP8_G128_FP32, "fp32", triton_recipe="fp8_g128", pad_rows=False)
    g = _group("glm5", Scoring.SIGMOID)
    x = torch.zeros(4, g.hidden_size, device="cuda", dtype=torch.bfloat16)
    logits = torch.zeros(4, g.num_experts, device="cuda")
    assert fused_routing_path(g, sm90, x, logits) is RoutingPath.FUSED
    assert fused_routing_path(g, replace(sm90, triton_recipe="mxfp8"), x, logits) is RoutingPath.FALLBACK_STAGING
    big = g.model_copy(update={"num_experts": 2048})
    assert fused_routing_path(big, sm90, x, torch.zeros(4, 2048, device="cuda")) is RoutingPath.FALLBACK_SHAPE
    assert fused_routing_path(g, sm90, x.cpu(), logits.cpu()) is RoutingPath.FALLBACK_CPU


@pytest.mark.parametrize(
    ("model", "variant"), [("deepseek-ai/DeepSeek-V4-Flash", "sm90_fp8xfp4"), ("zai-org/GLM-5-FP8", "sm90_fp8xfp8")]
)
def test_forward_logits_fuses_and_stages_what_forward_of_route_stages(model, variant):
    if not torch.cuda.is_available():
        pytest.skip("needs a GPU")
    from moe_oracle.model.resolve import resolve_model
    from moe_oracle.registry import load_registry
    from moe_oracle.runtime import LayerConfig, build_layer, calc_diff, route
    from moe_oracle.runtime.accuracy import random_masters, variant_weight_quant
    from moe_oracle.runtime.errors import BackendUnavailableError
    from moe_oracle.runtime.quantize import quantize_experts
    from moe_oracle.runtime.routing_path import RoutingPath
    from moe_oracle.runtime.tolerance import RUN_TO_RUN

    spec = next(s for s in load_registry().variants if s.variant == variant)
    quant, conv = variant_weight_quant(spec)
    g = resolve_model(model).main_group.model_copy(update={"weight_quant": quant})
    try:
        layer = build_layer(spec.key, LayerConfig(group=g, max_tokens_per_rank=8192, device="cuda"))
    except BackendUnavailableError as exc:
        pytest.skip(str(exc))
    w13, w2 = random_masters(g, torch.Generator(device="cuda").manual_seed(0))
    layer.load(quantize_experts(w13, w2, quant, convention=conv))
    del w13, w2
    buf = layer.buffer
    gen = torch.Generator(device="cuda").manual_seed(3)
    for t in (1, 8, 64):
        x = torch.randn(t, g.hidden_size, device="cuda", generator=gen).bfloat16()
        logits = torch.randn(t, g.num_experts, device="cuda", generator=gen)
        bias = 0.1 * torch.randn(g.num_experts, device="cuda", generator=gen)
        assert layer.routing_path(x, logits, bias) is RoutingPath.FUSED
        y_ref = layer(x, *route(g, logits, bias=bias)).float().clone()
        staged = [v[:t].clone() for v in (buf.x.view(torch.uint8), buf.x_sf, buf.topk_idx, buf.topk_weights)]
        for v in (buf.x, buf.x_sf, buf.topk_idx, buf.topk_weights):
            v[:t].fill_(0)
        y = layer.forward_logits(x, logits, bias=bias).float()
        now = [v[:t] for v in (buf.x.view(torch.uint8), buf.x_sf, buf.topk_idx, buf.topk_weights)]
        assert all(torch.equal(a, b) for a, b in zip(staged, now, strict=True)), t
        bound = RUN_TO_RUN.get(variant, (1e-4, ""))[0]
        assert torch.equal(y, y_ref) if bound == 0.0 else calc_diff(y, y_ref) <= bound
    layer.close()
