"""Derived-resource formulas against hand computations.

Every expected number below is worked out by hand in the comment next to it, from the DeepGEMM
sources the formulas were ported from (deepseek-ai/DeepGEMM 8ddf7f96 csrc/apis/mega.hpp,
csrc/apis/sm90_mega.hpp, layout/mega_moe.cuh; vLLM 0.33.0's vendored DeepGEMM 2.8.1
layout/mega_moe.cuh), vLLM 0.33 / SGLang 0.5.23 sources, and the InferenceX measurement.
"""

from __future__ import annotations

import pytest
from moe_oracle_backends import _deep_gemm_buffer as B
from moe_oracle_backends import _deep_gemm_layout as L
from moe_oracle_backends import _sgl_deep_gemm_layout as SGL
from moe_oracle_backends.rocm_mi355 import heap as H

from moe_oracle.engines.sglang.budget import derive_sglang_token_cap as cap_of
from moe_oracle.engines.sglang.budget import startup_check_tokens
from moe_oracle.fit.derived import Shape

GiB = 1 << 30


def test_lineage_constants() -> None:
    assert L.PR323.lcm_block_m == 384  # kLCMCandidateBlockM (8ddf7f96)
    assert L.PR323.max_block_m == 192
    assert L.VLLM_281.lcm_block_m == 1920  # lcm(..., 192, 240) in the vLLM 0.33 wheel's header
    assert L.VLLM_281.max_block_m == 240


def test_pool_and_ring_small_case() -> None:
    # ranks 2, E 4 (2 per rank), T 384, top-2:
    # pool = align(2*384*min(2,2) + 2*(192-1), 384) = align(1536 + 382, 384) = 1920
    assert L.pool_tokens(L.PR323, 2, 384, 2, 2) == 1920
    # ring limits: lo = T*ranks = 768; hi = min(768*2, align(768*2 + 2*383, 384)) = min(1536, 2304) = 1536
    assert L.ring_limits(L.PR323, 384, 2, 2, 2) == (768, 1536)
    # T < 6144: decode budget ring_limit(4224, 6, 6, 72).max = min(4224*72*6, align(1824768 + 2298, 384))
    #   = min(1824768, 1827072) = 1824768, clamped to [768, 1536] -> 1536
    ring, rule = L.ring_tokens(L.PR323, 2, 4, 384, 2)
    assert ring == 1536 and "clamped" in rule


def test_ring_prefill_is_full_pool() -> None:
    # DSv4-Flash EP8, T = align(8192, 384) = 8448, top-6, 32 experts per rank:
    # ring = align(8*8448*6 + 32*191, 384) = align(405504 + 6112, 384) = 411648 (= the full pool)
    ring, rule = L.ring_tokens(L.PR323, 8, 256, 8448, 6)
    assert ring == 411648 == L.pool_tokens(L.PR323, 8, 8448, 6, 32)
    assert rule.startswith("tokens >= 6144")


def test_sm100_buffer_bytes_pr323_small_case() -> None:
    terms = dict(L.sm100_buffer_terms_pr323(2, 4, 384, 2, 256, 128, 1536))
    # workspace = 32 + 4*16 + 2*8 + 4*(1536/8)*4 + 2*2*(2*384)*4 + 1920*12
    #           = 32 + 64 + 16 + 3072 + 12288 + 23040 = 38512 (already 16-aligned)
    assert terms["workspace"] == 38512
    # sf ring = max_bm (1536 // bm) * align(bm, 128) = 192 * 128 = 24576 (bm = 8)
    assert L.sf_ring_tokens(L.PR323, 1536) == 24576
    expected = {
        "x": 384 * 256,  # 98304 (fp8)
        "x_sf": 384 * 8,  # H/32 UE8M0 bytes
        "topk_idx": 384 * 2 * 8,
        "topk_weights": 384 * 2 * 4,
        "l1_acts (ring)": 1536 * 256,
        "l1_acts_sf (sf ring)": 24576 * 8,
        "l1_topk_weights (ring)": 1536 * 4,
        "l2_acts (ring)": 1536 * 128,
        "l2_acts_sf (sf ring)": 24576 * 4,
        "combine": 2 * 384 * 256 * 2,  # bf16
        "combine_sf": 0,
    }
    for k, v in expected.items():
        assert terms[k] == v, k
    assert sum(terms.values()) == 1_433_200


def test_sm100_buffer_env_switches() -> None:
    base = dict(L.sm100_buffer_terms_pr323(2, 4, 384, 2, 256, 128, 1536))
    fp4 = dict(L.sm100_buffer_terms_pr323(2, 4, 384, 2, 256, 128, 1536, fp4_acts=True))
    assert fp4["x"] == base["x"] // 2 and fp4["l1_acts (ring)"] == base["l1_acts (ring)"] // 2
    comb = dict(L.sm100_buffer_terms_pr323(2, 4, 384, 2, 256, 128, 1536, fp8_combine=True))
    assert comb["combine"] == base["combine"] // 2
    assert comb["combine_sf"] == 2 * 384 * (256 // 128)


def test_sm90_buffer_bytes_pr323_small_case() -> None:
    terms = dict(L.sm90_buffer_terms_pr323(2, 4, 384, 2, 256, 128))
    # SM90Workspace: pool 1920, pool_blocks 240:
    # 32 + 64 + 16 + align(240,2)*4 + 240*8 + 2*2*768*4 + 1920*12 = 32+64+16+960+1920+12288+23040 = 38320
    assert terms["workspace"] == 38320
    # padded sf pool = (1920 // 8) * 128 = 30720; l2 sf is fp32 per 64 columns: 128*4/64 = 8 bytes per row
    assert terms["l1_acts_sf (padded sf pool)"] == 30720 * 8
    assert terms["l2_acts_sf (padded sf pool, fp32 per 64)"] == 30720 * 8
    assert terms["l1_acts (pool)"] == 1920 * 256
    assert terms["combine (bf16)"] == 2 * 384 * 512
    assert sum(terms.values()) == 1_778_608


def test_mega_moe_signals_size_by_hand() -> None:
    # 28 bytes of barrier words + 4 task counters x 2 locality domains (32) = 60 -> align 128 = 128
    # + 72*8 combine_ready (704) -> align 128 = 768 + 72*8 peer_grid_idx = 1344 -> align 128 = 1408
    # + 2048*8 send + 2048*8 recv + 512*8 recv_sum = 1408 + 36864 = 38272
    # + 4 MiB l1_full + 4 MiB l1_empty + 8 MiB l2_full_mask + 4 MiB l2_empty = 38272 + 20971520 = 21009792
    # + 32768*4 shared_l2_full_count = 21140864 (a multiple of 128)
    assert L.mega_moe_signals_bytes_v281() == 21_140_864


def test_v281_buffer_small_case_with_shared_expert() -> None:
    # ranks 2, E 4, T 1920 (aligned to 1920), top-2, H 256, I 128, one fused shared expert.
    # ring: decode budget clamped to hi = min(3840*2, align(3840*2 + 2*1919, 1920)) = min(7680, 13440) = 7680
    ring, _ = L.ring_tokens(L.VLLM_281, 2, 4, 1920, 2)
    assert ring == 7680
    terms = dict(L.sm100_buffer_terms_v281(2, 4, 1920, 2, 256, 128, ring, num_shared_experts=1))
    # pool = align(2*1920*2 + 2*239, 1920) = align(8158, 1920) = 9600
    # workspace = align(21140864 + 4*1920*4 + 9600*12, 16) = 21140864 + 30720 + 115200 = 21286784
    assert terms["workspace (signals + source indices + combine metadata)"] == 21_286_784
    # shared SF rows = ceil(1920/8)*128 = 30720
    assert terms["shared_l1_acts_sf"] == 30720 * 8
    assert terms["shared_l2_acts"] == 1920 * 128
    assert terms["shared_l2_acts_sf"] == 30720 * 4
    # sf ring = max((7680//8)*128, ..., (7680//240)*256) = 122880
    assert terms["l1_acts_sf (sf ring)"] == 122880 * 8
    assert terms["combine (bf16, top-k + shared slot)"] == 3 * 1920 * 512
    assert sum(terms.values()) == 29_857_664


def test_deepgemm_derivation_dsv4_flash_vllm() -> None:
    shape = Shape(256, 6, 4096, 2048, 1, ("moe",))
    out = {
        d.key: d
        for d in B.derive_deepgemm(
            flavour="vllm-sm100", shape=shape, ranks=8, tokens_per_rank=8192, tokens_origin="test", fuse_shared=True
        )
    }
    assert out["deepgemm_num_max_tokens_per_rank"].value == 9600  # align(8192, 1920)
    # ring = align(8*9600*6 + 32*239, 1920) = align(468448, 1920) = 468480
    assert out["deepgemm_ring_tokens"].value == 468480
    buf = out["deepgemm_symm_buffer_bytes"]
    assert buf.value == sum(v for _, v in buf.terms) == 4_996_874_624
    assert buf.assumption and "compiled" in buf.assumption
    assert buf.inputs["num_shared_experts (fused)"] == 1


def test_deepgemm_rejects_uneven_experts() -> None:
    with pytest.raises(ValueError):
        L.sm90_buffer_terms_pr323(3, 256, 384, 6, 4096, 2048)


@pytest.mark.parametrize(("tokens", "mtpr"), [(8192, 8192), (6000, 8192), (16384, 16384), (16385, 32768), (1, 1)])
def test_aiter_max_tok_per_rank_is_next_power_of_two(tokens: int, mtpr: int) -> None:
    d = H.derive_aiter_mtpr(tokens, "test", engine="vllm")
    assert d.value == mtpr
    assert f"next_power_of_2({tokens})" in d.formula


def test_aiter_capacities() -> None:
    # vLLM builds prev_power_of_2(FIXED_SLOT_MAX_MTPR=255) = 128 below the main capacity (<= 64 experts/rank)
    assert H.aiter_capacities(8192, 32, engine="vllm") == [128, 8192]
    assert H.aiter_capacities(8192, 96, engine="vllm") == [8192]
    assert H.aiter_capacities(128, 32, engine="vllm") == [128]
    assert H.aiter_capacities(8192, 32, engine="sglang") == [8192]


def test_mori_heap_reproduces_inferencex_reference() -> None:
    # The reference itself: 7.73 GiB at EP8 / 16384 tokens, x1.25 = 9.66 GiB -> 10 GiB (the script's value)
    shape = Shape(256, 6, 4096, 2048)
    d = H.derive_mori_heap(runtimes=[(shape, [16384])], ep=8)
    assert d.value == 10 * GiB
    assert d.env == "MORI_SHMEM_HEAP_SIZE" and "estimate" in (d.assumption or "")


def test_mori_heap_floor_and_scaling() -> None:
    shape = Shape(256, 6, 4096, 2048)
    # 8192 tokens: 7.73/2 * 1.25 = 4.83 GiB -> below vLLM's 8 GiB default -> 8 GiB
    assert H.derive_mori_heap(runtimes=[(shape, [8192])], ep=8).value == 8 * GiB
    # DSv4-Pro width (H 7168) at 16384: 7.73 * 7168/4096 * 1.25 = 16.9 GiB -> 17 GiB
    pro = Shape(384, 6, 7168, 3072)
    assert H.derive_mori_heap(runtimes=[(pro, [16384])], ep=8).value == 17 * GiB
    # two runtimes add up: 16384 + 128 tokens: 7.73*(1 + 1/128)*1.25 = 9.74 GiB -> 10 GiB
    assert H.derive_mori_heap(runtimes=[(shape, [128, 16384])], ep=8).value == 10 * GiB


def test_sglang_token_cap() -> None:
    kw = {"build": "sgl-deep-gemm 0.2.3.post2", "architecture": "DeepseekV4ForCausalLM", "nvfp4_experts": False}
    # attention DP 8: per-rank chunk 65536 // 8 = 8192, alignment tp/dp = 1 -> 8192 -> build alignment 1920 -> 9600
    d = cap_of(chunked_prefill_size=65536, tp_size=8, attn_dp_size=8, alignment=1920, **kw)
    assert d.value == 9600 and d.env == "SGLANG_OPT_DEEPGEMM_MEGA_MOE_NUM_MAX_TOKENS_PER_RANK"
    # SGLang's start-up check divides once more: 8192 // 8 = 1024
    assert d.inputs["SGLang start-up check (required_per_rank)"] == 1024
    # pure TP 8: the whole chunk on every rank, aligned to tp: ceil_align(8000, 8) = 8000
    assert cap_of(chunked_prefill_size=8000, tp_size=8, attn_dp_size=1, alignment=1, **kw).value == 8000
    assert startup_check_tokens(8000, 8, 1) == 8000
    # odd split: 10000 // 4 = 2500, alignment 8 // 4 = 2 -> 2500; the check: 2500 // 4 = 625 -> align 2 -> 626
    assert cap_of(chunked_prefill_size=10000, tp_size=8, attn_dp_size=4, alignment=1, **kw).value == 2500
    assert startup_check_tokens(10000, 8, 4) == 626
    glm = cap_of(chunked_prefill_size=65536, tp_size=8, attn_dp_size=8, alignment=1920, **(kw | {"architecture": "X"}))
    assert "silently runs" in glm.source


def test_derived_json_shape() -> None:
    d = H.derive_aiter_mtpr(8192, "flag", engine="sglang")
    doc = d.to_json()
    assert doc["value"] == 8192 and doc["env"] == "SGLANG_AMD_FLYDSL_MEGA_MOE_MTPR"
    assert set(doc) >= {"key", "label", "value", "unit", "display", "formula", "inputs", "source"}


def test_sgl_0232_constants() -> None:
    # sgl-deep-gemm 0.2.3.post2 layout/mega_moe.cuh:13-17: BLOCK_M candidates add 240, LCM 1920
    assert SGL.SGL_0232.lcm_block_m == 1920 and SGL.SGL_0232.max_block_m == 240
    assert B.token_alignment("sgl-0.2.3.post2") == 1920 and B.token_alignment("sm90") == 384


def test_sgl_0232_sm90_buffer_matches_its_c_on_a_cpu() -> None:
    # values sgl-deep-gemm 0.2.3.post2's _C.get_symm_buffer_size_for_sm90_mega_moe returns on a CPU
    # (EP8, 9600 rows); tests/engines/test_real_sglang.py compares every SGLang plan the same way
    glm = L.sm90_buffer_terms_pr323(8, 256, 9600, 8, 6144, 2048, lineage=SGL.SGL_0232)
    assert L.sum_terms(glm) == 9_376_128_544  # 8.73 GiB (GLM-5, E256 top-8 H6144 I2048)
    dsv4 = L.sm90_buffer_terms_pr323(8, 256, 9600, 6, 4096, 2048, lineage=SGL.SGL_0232)
    assert L.sum_terms(dsv4) == 5_397_181_984


def test_sgl_0232_sm100_shared_expert_regions() -> None:
    base = dict(SGL.sm100_buffer_terms_0232(2, 4, 1920, 2, 512, 256, 3840))
    shared = dict(SGL.sm100_buffer_terms_0232(2, 4, 1920, 2, 512, 256, 3840, num_shared_experts=1))
    # shared L1 SF rows: ceil(1920 / 8) * 128 = 30720 rows x H/32 = 16 bytes
    assert shared["shared_l1_acts_sf"] == 30720 * 16 and base["shared_l1_acts_sf"] == 0
    # shared L2 activations: T x (I x 1) FP8 bytes; one more bf16 combine slot per token
    assert shared["shared_l2_acts"] == 1920 * 256
    assert shared["combine (bf16, top-k + shared slot)"] == 3 * 1920 * 512 * 2
    assert base["combine (bf16, top-k + shared slot)"] == 2 * 1920 * 512 * 2
    # NVFP4: 4-bit activations, one E4M3 scale per 16
    nv = dict(SGL.sm100_buffer_terms_0232(2, 4, 1920, 2, 512, 256, 3840, mma_type="nvfp4xnvfp4"))
    assert nv["x"] == 1920 * 256 and nv["x_sf"] == 1920 * 32


def test_plans_find_the_formulas_through_the_declarations() -> None:
    from moe_oracle.fit.resources import SizingMissingError, formula
    from moe_oracle.registry import load_registry

    assert formula("derive_deepgemm") is B.derive_deepgemm
    assert formula("derive_mori_heap") is H.derive_mori_heap
    declared = {v.key for v in load_registry().variants if v.sizing}
    assert "deep_gemm_mega_moe:sm90_fp8xfp8" in declared and "aiter_mega_moe:gfx950_a8w4" in declared
    with pytest.raises(SizingMissingError) as exc:
        formula("no_such_formula")
    assert "'no_such_formula'" in exc.value.one_line()
