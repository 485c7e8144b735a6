"""On a GPU with the SM90 kernels: layers of several shapes give their symmetric buffers back, and staging that
leaves the top-k rows past T untouched (the SM90 staging declaration, ``pad_rows=False``) is safe because the
kernels never read them. Skipped without a GPU or without a DeepGEMM build that has the SM90 kernels."""

from __future__ import annotations

import gc

import pytest
import torch

from moe_oracle.model.resolve import resolve_model
from moe_oracle.model.types import MoELayerGroup, QuantSpec, Routing, Scoring
from moe_oracle.runtime import LayerConfig, RoutingPath, build_layer, calc_diff, reference_moe, route
from moe_oracle.runtime.accuracy import random_masters
from moe_oracle.runtime.errors import BackendUnavailableError
from moe_oracle.runtime.quantize import quantize_experts

pytestmark = pytest.mark.gpu

FP8 = QuantSpec(format="fp8_block", block=(128, 128), scale_format="fp32")
KEY = "deep_gemm_mega_moe:sm90_fp8xfp8"


def _group(hidden: int, inter: int, experts: int, top_k: int) -> MoELayerGroup:
    return MoELayerGroup(
        name="moe",
        layers=(0,),
        hidden_size=hidden,
        moe_intermediate_size=inter,
        num_experts=experts,
        top_k=top_k,
        weight_quant=FP8,
        routing=Routing(scoring=Scoring.SOFTMAX),
    )


def _build(group: MoELayerGroup, tokens: int = 4096):
    try:
        return build_layer(KEY, LayerConfig(group=group, max_tokens_per_rank=tokens, device="cuda"))
    except BackendUnavailableError as exc:
        pytest.skip(str(exc))


def _used() -> int:
    """Device memory in use (bytes): the symmetric buffers come from torch's symmetric-memory allocator, which
    ``torch.cuda.memory_allocated`` does not count, so this reads the device's own free-memory figure."""
    gc.collect()
    torch.cuda.synchronize()
    torch.cuda.empty_cache()
    free, total = torch.cuda.mem_get_info()
    return total - free


def test_layers_of_several_shapes_keep_memory_flat():
    if not torch.cuda.is_available():
        pytest.skip("needs a GPU")
    from moe_oracle_backends._deep_gemm_layer import BUFFERS

    shapes = [_group(4096, 2048, 256, 6), _group(6144, 2048, 256, 8), _group(2048, 768, 128, 8)]
    after: list[list[int]] = []
    for _ in range(3):  # memory after dropping each shape must not grow from one round to the next
        row = []
        for g in shapes:
            before = _used()
            a = _build(g)
            b = _build(g)
            assert a.buffer is b.buffer, "two layers of one shape share one symmetric buffer"
            held = _used() - before
            assert held > 32 << 20, f"{g.num_experts}x{g.hidden_size}: the layers should hold memory ({held} B)"
            a.close()
            assert b.buffer is not None and len(BUFFERS) == 1, "the second layer still holds the buffer"
            del a, b  # the second one is released by garbage collection, not by close()
            assert len(BUFFERS) == 0
            row.append(_used())
        after.append(row)
    grown = [(r, i, after[r][i] - after[0][i]) for r in (1, 2) for i in range(len(shapes))]
    assert all(d < 16 << 20 for _, _, d in grown), f"memory grew across rounds (round, shape, bytes): {grown}"


def test_rows_past_t_are_never_read_by_the_sm90_kernel():
    """Garbage ids and weights in the buffer's rows at or past T change nothing: T=64, then T=1 over a poisoned tail."""
    if not torch.cuda.is_available():
        pytest.skip("needs a GPU")
    g = resolve_model("deepseek-ai/DeepSeek-V4-Flash").main_group.model_copy(update={"weight_quant": FP8})
    layer = _build(g, tokens=512)
    assert not layer.STAGING.pad_rows
    w13, w2 = random_masters(g, torch.Generator(device="cuda").manual_seed(0))
    experts = quantize_experts(w13, w2, FP8)
    del w13, w2
    layer.load(experts)
    twin = build_layer("emulation:sm90_fp8xfp8", layer.config, experts)
    gen = torch.Generator(device="cuda").manual_seed(7)
    for t in (64, 1, 3):
        x = torch.randn(t, g.hidden_size, device="cuda", generator=gen).bfloat16()
        logits = torch.randn(t, g.num_experts, device="cuda", generator=gen)
        ids, w = route(g, logits, bias=torch.zeros(g.num_experts, device="cuda"))
        buf = layer.buffer
        buf.topk_idx[t:].random_(0, g.num_experts, generator=gen)  # valid expert ids: read, they would count
        buf.topk_weights[t:].fill_(1.0)
        y = layer(x, ids, w).float()
        ref = reference_moe(twin.quantized_input(x), ids, w, experts, g.activation)
        assert calc_diff(y, ref) < 1e-3, t
        assert calc_diff(y, twin(x, ids, w).float()) < 3e-4, t
    layer.close()


def _replays_with_pdl(layer, on: bool, x0, scale, x, ids, w, logits=None) -> list[torch.Tensor]:
    """Capture producer + layer with DeepGEMM's PDL switch ``on``; replay 50 times, a new x0 sign each time.

    With ``logits`` = ``(l0, out, bias, one)`` the step is ``forward_logits`` and the producer also writes the logits
    (``out = l0 * 1``, the launch right before the fused router, like the router GEMM); else ``forward``."""
    layer.dg.set_pdl(on)
    assert layer.pdl_enabled() is on

    def step() -> torch.Tensor:
        torch.mul(x0, scale, out=x)  # the producer: staging must not read x before it is written
        if logits is None:
            return layer(x, ids, w)
        l0, out, bias, one = logits
        torch.mul(l0, one, out=out)  # the router must not read the logits before they are written
        return layer.forward_logits(x, out, bias=bias)

    for _ in range(3):
        step()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        y = step()
    runs = []
    for i in range(50):
        x0.mul_(-1)  # a new x every replay: a stale read would show as a sign flip
        if logits is not None:
            logits[0].mul_(-1)  # and new logits: a stale read would route to other experts
        graph.replay()
        if i >= 48:
            runs.append(y.clone())
    return runs


@pytest.mark.parametrize("fused_router", [False, True], ids=["forward", "forward_logits"])
def test_pdl_staging_gives_the_same_output_after_a_producer(fused_router: bool):
    """With DeepGEMM's PDL switch on, the staging launch (or the fused router + staging launch) is a PDL secondary
    that waits for the kernel that wrote its inputs, and the SM90 mega kernel, which does not wait, starts after it
    completes: graph-captured behind a producer (x = x0 * s, and the logits for forward_logits: the steps before
    the layer in an engine), 50 replays per T give the outputs of the same graph captured with the switch off (a
    stale read of x, which changes sign every replay, or of the logits, would differ by ~2)."""
    if not torch.cuda.is_available():
        pytest.skip("needs a GPU")
    g = resolve_model("deepseek-ai/DeepSeek-V4-Flash").main_group.model_copy(update={"weight_quant": FP8})
    layer = _build(g, tokens=512)
    if not callable(getattr(layer.dg, "set_pdl", None)):
        pytest.skip("this DeepGEMM build has no set_pdl")
    w13, w2 = random_masters(g, torch.Generator(device="cuda").manual_seed(0))
    experts = quantize_experts(w13, w2, FP8)
    del w13, w2
    layer.load(experts)
    gen = torch.Generator(device="cuda").manual_seed(11)
    before = bool(layer.dg.get_pdl())
    try:
        for t in (1, 7, 64, 512):
            x0 = torch.randn(t, g.hidden_size, device="cuda", generator=gen).bfloat16()
            scale = torch.ones((), device="cuda", dtype=torch.bfloat16)
            x = torch.empty_like(x0)
            logits = torch.randn(t, g.num_experts, device="cuda", generator=gen)
            ids, w = route(g, logits, bias=torch.zeros(g.num_experts, device="cuda"))
            lg = None
            if fused_router:
                l0 = logits.clone()
                one = torch.ones((), device="cuda")
                lg = (l0, torch.empty_like(l0), torch.zeros(g.num_experts, device="cuda"), one)
                assert layer.routing_path(x, l0, lg[2]) is RoutingPath.FUSED
            outs = {on: _replays_with_pdl(layer, on, x0, scale, x, ids, w, lg) for on in (False, True)}
            for a, b in zip(outs[False], outs[True], strict=True):  # a stale x (other sign) would differ by ~2
                assert calc_diff(a.float(), b.float()) < 1e-3, t  # run-to-run noise of the kernel is far below
    finally:
        layer.dg.set_pdl(before)
    layer.close()
