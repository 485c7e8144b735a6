"""Both sides of PR #323's SM90 FP8 combine-stage limit on the GPU (issue #31 item 2; skipped without an SM90 build).

ERNIE-4.5-300B-A47B's experts (I 3584, E 64, top-8, one rank) at H 8192 and at H 7168, T = 64, 512 and 4096 (8, 64
and 512 tokens per expert). ``moe_oracle_backends._sm90_fp8_kernel`` predicts, from the host heuristics and the
kernel's static assertions, which calls compile; the layer is built with the token-dependent limit taken out (the
declared limit is what is being compared with the kernel), and each call either runs and matches the FP32
reference, or fails to compile with DeepGEMM's own "Hidden is too large". The declared limit then refuses exactly
the budgets whose calls fail.
"""

from __future__ import annotations

import dataclasses

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


def _group(hidden: int) -> MoELayerGroup:
    return MoELayerGroup(
        name="moe",
        layers=(0,),
        hidden_size=hidden,
        moe_intermediate_size=3584,
        num_experts=64,
        top_k=8,
        weight_quant=FP8,
        routing=Routing(scoring=Scoring.SOFTMAX, renormalize=True),
    )


@pytest.fixture(scope="module", params=(7168, 8192), ids=lambda h: f"H{h}")
def layer(request):
    if not torch.cuda.is_available():
        pytest.skip("needs a GPU")
    import moe_oracle_backends._deep_gemm_layer as dgl

    g = _group(request.param)
    orig = dgl.require_build_limits

    def without_token_limit(declared, sc, key):  # every other declared limit still applies
        return orig(declared, dataclasses.replace(sc, tokens_per_rank=1), key=key)

    mp = pytest.MonkeyPatch()
    mp.setattr(dgl, "require_build_limits", without_token_limit)
    try:
        real = build_layer(KEY, LayerConfig(group=g, max_tokens_per_rank=max(TOKENS), device="cuda"))
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
        "emulation:sm90_fp8xfp8", LayerConfig(group=g, max_tokens_per_rank=max(TOKENS), device="cuda"), ex
    )
    yield g, ex, real, twin
    real.close()
    torch.cuda.empty_cache()


@pytest.mark.parametrize("tokens", TOKENS)
def test_the_kernel_compiles_exactly_where_the_declared_limit_says(layer, tokens, capfd):
    from moe_oracle_backends import _sm90_fp8_kernel as k

    g, ex, real, twin = layer
    cfg = k.config(tokens, hidden=g.hidden_size, inter=3584, num_experts=64, top_k=8)
    predicted = k.failures(cfg, 8)
    gen = torch.Generator(device="cuda").manual_seed(tokens)
    x = torch.randn(tokens, g.hidden_size, device="cuda", generator=gen).bfloat16()
    ids, w = route(g, torch.randn(tokens, 64, device="cuda", generator=gen))
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
        assert 'sm90_fp8_mega_moe.cuh(2183): error: static assertion failed with "Hidden is too large"' in log
        return
    y = real(x, ids, w).float()
    rows = torch.arange(tokens, device="cuda")[:256]
    ref = reference_moe(twin.quantized_input(x)[rows], ids[rows], w[rows], ex, g.activation)
    d = calc_diff(y[rows], ref)
    print(f"   kernel ran: calc_diff {d:.2e} against the FP32 reference")
    assert d < 1e-3


def test_the_declared_limit_refuses_the_budgets_whose_calls_fail(layer):
    g = layer[0]
    if g.hidden_size == 8192:
        build_layer(KEY, LayerConfig(group=g, max_tokens_per_rank=511, device="cuda")).close()
        with pytest.raises(LayerInputError, match="Hidden is too large"):
            build_layer(KEY, LayerConfig(group=g, max_tokens_per_rank=512, device="cuda"))
    else:
        build_layer(KEY, LayerConfig(group=g, max_tokens_per_rank=4096, device="cuda")).close()
