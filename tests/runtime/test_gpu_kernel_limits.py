"""Both sides of PR #323's SM90 FP8 combine-stage limits on the GPU (issue #31 item 2; skipped without an SM90 build).

Three expert shapes on one rank: ERNIE-4.5-300B-A47B's (I 3584, E 64, top-8) at H 8192, where the combine stage's
shared memory does not fit from 64 tokens per expert ("Hidden is too large", K:2183), and at H 7168, where it fits;
and ERNIE-4.5-21B-A3B's (H 2560, I 1536, E 64, top-6), whose combine chunk at BLOCK_M 128 (4 chunks of 1280 bytes) is
not the multiple of 32 x 16 bytes the sibling assertion asks (K:2184-2186). Each is called at T = 64, 512 and 4096
and on both sides of the first failing T the declared limit names (511 and 512 at H 8192, 682 and 683 at H 2560).
``moe_oracle_backends._sm90_fp8_kernel`` predicts, from the host heuristics and the kernel's static assertions,
which calls compile; the layer is built with the token-dependent limit taken out (the declared limit is what is being
compared with the kernel), and each call either runs and matches the FP32 reference, or fails to compile with the
static assertion the prediction cites. The declared limit then refuses exactly the budgets whose calls fail.
"""

from __future__ import annotations

import dataclasses
import re

import pytest
import torch

from moe_oracle.model.types import MoELayerGroup, QuantSpec, Routing, Scoring
from moe_oracle.runtime import LayerConfig, build_layer, calc_diff, reference_moe, route
from moe_oracle.runtime.accuracy import random_masters
from moe_oracle.runtime.errors import BackendUnavailableError, LayerInputError
from moe_oracle.runtime.quantize import quantize_experts

pytestmark = pytest.mark.gpu

KEY = "deep_gemm_mega_moe:sm90_fp8xfp8"
FP8 = QuantSpec(format="fp8_block", block=(128, 128), scale_format="fp32")
TOKENS = (64, 512, 4096)
#: (H, I, E, top-k, scoring): two sides of 'Hidden is too large', and the chunk-multiple assertion
SHAPES = {
    "H7168": (7168, 3584, 64, 8, Scoring.SOFTMAX),
    "H8192": (8192, 3584, 64, 8, Scoring.SOFTMAX),
    "ernie21b-H2560": (2560, 1536, 64, 6, Scoring.SOFTMAX),
}


def _group(hidden: int, inter: int, experts: int, top_k: int, scoring: Scoring) -> MoELayerGroup:
    return MoELayerGroup(
        name="moe",
        layers=(0,),
        hidden_size=hidden,
        moe_intermediate_size=inter,
        num_experts=experts,
        top_k=top_k,
        weight_quant=FP8,
        routing=Routing(scoring=scoring, renormalize=True),
    )


def _first_failure(g: MoELayerGroup):
    from moe_oracle_backends import _sm90_fp8_kernel as k

    shape = {"hidden": g.hidden_size, "inter": g.moe_intermediate_size, "num_experts": g.num_experts}
    return k.first_failure(**shape, top_k=g.top_k, num_ranks=1, max_tokens=max(TOKENS))


def _points(g: MoELayerGroup) -> tuple[int, ...]:
    """T = 64, 512, 4096 and, where the declared limit names a first failing T, it and the T before it."""
    first = _first_failure(g)
    edge = {first.first_failing_tokens - 1, first.first_failing_tokens} if first else set()
    return tuple(sorted(set(TOKENS) | edge))


@pytest.fixture(scope="module", params=sorted(SHAPES))
def layer(request):
    if not torch.cuda.is_available():
        pytest.skip("needs a GPU")
    import moe_oracle_backends._deep_gemm_layer as dgl

    g = _group(*SHAPES[request.param])
    orig = dgl.require_build_limits

    def without_token_limit(declared, sc, key):  # every other declared limit still applies
        return orig(declared, dataclasses.replace(sc, tokens_per_rank=1), key=key)

    mp = pytest.MonkeyPatch()
    mp.setattr(dgl, "require_build_limits", without_token_limit)
    try:
        real = build_layer(KEY, LayerConfig(group=g, max_tokens_per_rank=max(_points(g)), device="cuda"))
    except BackendUnavailableError as exc:
        pytest.skip(str(exc))
    finally:
        mp.undo()
    if getattr(real, "build", None) != "deepgemm-pr323":
        pytest.skip(f"not the DeepGEMM PR #323 build: {getattr(real, 'build', None)}")
    w13, w2 = random_masters(g, torch.Generator(device="cuda").manual_seed(0))
    ex = quantize_experts(w13, w2, FP8)
    del w13, w2
    real.load(ex)
    twin = build_layer(
        "emulation:sm90_fp8xfp8", LayerConfig(group=g, max_tokens_per_rank=max(_points(g)), device="cuda"), ex
    )
    yield g, ex, real, twin
    real.close()
    torch.cuda.empty_cache()


@pytest.mark.parametrize("point", range(5))
def test_the_kernel_compiles_exactly_where_the_declared_limit_says(layer, point, capfd):
    from moe_oracle_backends import _sm90_fp8_kernel as k

    g, ex, real, twin = layer
    points = _points(g)
    if point >= len(points):
        pytest.skip(f"H {g.hidden_size}: {len(points)} points ({points})")
    tokens, e = points[point], g.num_experts
    cfg = k.config(tokens, hidden=g.hidden_size, inter=g.moe_intermediate_size, num_experts=e, top_k=g.top_k)
    predicted = k.failures(cfg, g.top_k)
    gen = torch.Generator(device="cuda").manual_seed(tokens)
    x = torch.randn(tokens, g.hidden_size, device="cuda", generator=gen).bfloat16()
    ids, w = route(g, torch.randn(tokens, e, device="cuda", generator=gen))
    print(f"H {g.hidden_size} T {tokens}: {cfg.label()}; predicted {'fails: ' + predicted[0] if predicted else 'ok'}")
    if predicted:
        with pytest.raises(Exception) as info:
            real(x, ids, w)
            torch.cuda.synchronize()
        # DeepGEMM raises "NVCC compilation failed"; nvcc's own log (on the process's stdout) names the assertion
        out, err = capfd.readouterr()
        log = "\n".join((str(info.value), out, err))
        print(f"   kernel: {type(info.value).__name__}: {str(info.value)[-300:]}")
        assert "NVCC compilation failed" in str(info.value)
        cited = re.search(r"sm90_fp8_mega_moe\.cuh:(\d+)(?:-(\d+))?\)", predicted[0])
        assert cited is not None
        lo, hi = int(cited.group(1)), int(cited.group(2) or cited.group(1))
        seen = [int(n) for n in re.findall(r"sm90_fp8_mega_moe\.cuh\((\d+)\): error: static assertion failed", log)]
        print(f"   nvcc: static assertion failed at line(s) {seen}; predicted {lo}-{hi}")
        assert seen and all(lo <= n <= hi for n in seen)
        if "Hidden is too large" in predicted[0]:
            assert 'static assertion failed with "Hidden is too large"' in log
        return
    y = real(x, ids, w).float()
    rows = torch.arange(tokens, device="cuda")[:256]
    ref = reference_moe(twin.quantized_input(x)[rows], ids[rows], w[rows], ex, g.activation)
    d = calc_diff(y[rows], ref)
    print(f"   kernel ran: calc_diff {d:.2e} against the FP32 reference")
    assert d < 1e-3


def test_the_declared_limit_refuses_the_budgets_whose_calls_fail(layer):
    g = layer[0]
    first = _first_failure(g)
    if first is None:
        build_layer(KEY, LayerConfig(group=g, max_tokens_per_rank=max(TOKENS), device="cuda")).close()
        return
    t = first.first_failing_tokens
    build_layer(KEY, LayerConfig(group=g, max_tokens_per_rank=t - 1, device="cuda")).close()
    with pytest.raises(LayerInputError, match=re.escape(first.failed[0][:40])):
        build_layer(KEY, LayerConfig(group=g, max_tokens_per_rank=t, device="cuda"))
