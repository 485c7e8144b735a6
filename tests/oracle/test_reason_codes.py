"""Every reason code, produced by a real preset or a manual description through the real declarations."""

from __future__ import annotations

import json

from moe_oracle.model.resolve import resolve_model
from moe_oracle.model.types import Activation
from moe_oracle.rules import ReasonCode
from tests.model.model_test_helpers import FIXTURES
from tests.oracle.helpers import GLM5_FP8, V4_FLASH, codes, manual, run

SM90_FP4 = "deep_gemm_mega_moe:sm90_fp8xfp4"
SM90_FP8 = "deep_gemm_mega_moe:sm90_fp8xfp8"
SM100_FP4 = "deep_gemm_mega_moe:sm100_fp8xfp4"
A8W4 = "aiter_mega_moe:gfx950_a8w4"
A4W4 = "aiter_mega_moe:gfx950_a4w4"


def has(decision, key, code, group=0):
    found = codes(decision, key, group)
    assert code in found, (key, code, found)
    return [
        r for c in decision.groups[group].candidates if c.spec.key == key for r in c.failures if r.code.value == code
    ]


def test_arch_unsupported():
    (r,) = has(run(V4_FLASH, "b200", dp=8, ep=8), SM90_FP4, "ARCH_UNSUPPORTED")
    assert "b200 is sm100" in r.message


def test_kernel_missing_names_the_build():
    (r,) = has(run(V4_FLASH, "h200", dp=8, ep=8, software="vllm-0.33.0"), SM90_FP4, "KERNEL_MISSING")
    assert "2.8.1" in r.message and "_C.fp8_fp4_mega_moe_sm90" in r.message
    rs = has(run(V4_FLASH, "h200", dp=8, ep=8, software="none"), SM90_FP4, "KERNEL_MISSING")
    assert {r.message for r in rs} == {
        "deep_gemm is not present in software profile 'none'",
        "torch is not present in software profile 'none'",
    }


def test_library_version():
    from moe_oracle.decide.selection import decide
    from moe_oracle.inputs import DeploymentFlags, build_deployment
    from moe_oracle.releases.profiles import named_profile
    from moe_oracle.software.types import LibraryBuild

    base = named_profile("all")
    assert base is not None
    old = base.model_copy(
        update={
            "libraries": {
                **base.libraries,
                "torch": LibraryBuild(
                    name="torch", version="2.4.0", symbols=frozenset({"distributed._symmetric_memory"})
                ),
            }
        }
    )
    dep, _ = build_deployment(DeploymentFlags(device="b200", dp=8, ep=8))
    from moe_oracle.model.resolve import resolve_model

    d = decide(resolve_model(V4_FLASH), dep, old)
    (r,) = has(d, SM100_FP4, "LIBRARY_VERSION")
    assert "torch 2.4.0 does not satisfy >=2.9" in r.message


def test_quant_unsupported():
    (r,) = has(run(GLM5_FP8, "h200", dp=8, ep=8), SM90_FP4, "QUANT_UNSUPPORTED")
    assert "fp8_block 128x128 fp32" in r.message


def test_shape_unsupported_cites_both_sources():
    d = run(manual(hidden=2816, inter=1376), "h200", dp=8, ep=8)
    rs = has(d, SM90_FP4, "SHAPE_UNSUPPORTED")
    assert any("hidden_size=2816 is not a multiple of 512" in r.message and "128" in r.message for r in rs)
    assert any("moe_intermediate_size=1376 is not a multiple of 128" in r.message for r in rs)


def test_intermediate_limit_of_sm90_fp4():
    (r,) = has(run(manual(inter=6144), "h200", dp=8, ep=8), SM90_FP4, "EXPERT_WIDTH_EXCEEDS")
    assert "exceeds 4096" in r.message
    # Mixtral on SM90 with SGLang's DeepGEMM: the expert width, on both SM90 variants
    mixtral = str(FIXTURES / "mistralai--Mixtral-8x7B-v0.1")
    d = run(mixtral, "h200", dp=8, ep=8, software="sgl-deep-gemm-0.2.3.post2")
    for key in (SM90_FP8, SM90_FP4):
        (r,) = has(d, key, "EXPERT_WIDTH_EXCEEDS")
        assert "moe_intermediate_size=14336 exceeds 4096" in r.message


def test_expert_bias_gpt_oss_on_every_kernel():
    """gpt-oss: the true blocker is the expert bias, on every mega kernel of every vendor."""
    gpt_oss = str(FIXTURES / "openai--gpt-oss-120b")
    for device, keys in (("h200", (SM90_FP8, SM90_FP4)), ("b200", (SM100_FP4,)), ("mi355x", (A8W4, A4W4))):
        d = run(gpt_oss, device, dp=8, ep=8)
        assert d.groups[0].chosen is None
        for key in keys:
            (r,) = has(d, key, "EXPERT_BIAS_UNSUPPORTED")
            assert "biases" in r.message and "engine's own MoE" in r.remediation
    (act,) = has(run(gpt_oss, "h200", dp=8, ep=8), SM90_FP8, "ACTIVATION_UNSUPPORTED")
    assert "swigluoai" in act.message and "SM100" in act.remediation


def test_router_weight_on_input_llama4():
    d = run(str(FIXTURES / "meta-llama--Llama-4-Scout-17B-16E-Instruct"), "b200", dp=8, ep=8)
    (r,) = has(d, SM100_FP4, "ROUTER_WEIGHT_ON_INPUT")
    assert "top-1" in r.message and "engine's own MoE" in r.remediation


def test_quant_integer_kimi_k25_int4():
    """Kimi-K2.5 INT4 W4A16 (compressed-tensors): no INT4 mega kernel; no QUANT_UNSUPPORTED duplicate."""
    d = run(str(FIXTURES / "moonshotai--Kimi-K2.5"), "b200", dp=8, ep=8)
    assert d.groups[0].chosen is None
    (r,) = has(d, SM100_FP4, "QUANT_INTEGER")
    assert "int4 g32 bf16" in r.message and "NVFP4" in r.remediation
    assert "QUANT_UNSUPPORTED" not in codes(d, SM100_FP4)


def test_shared_expert_gated_blocks_only_a_fusion():
    """Qwen3-Next's gated shared expert runs outside the kernel: no variant refuses it; a fusing path would."""
    from moe_oracle.rules import checks as c
    from moe_oracle.rules.scenario import LayerScenario

    qwen_next = resolve_model(str(FIXTURES / "Qwen--Qwen3-Next-80B-A3B-Thinking"))
    assert "SHARED_EXPERT_GATED" not in codes(run(qwen_next, "h200", dp=8, ep=8), SM90_FP8)
    check = c.shared_expert_fusable(path="a shared-expert fusion", sources=("test",))
    reason = check.evaluate(LayerScenario(group=qwen_next.main_group, ep=8, tokens_per_rank=8192))
    assert reason is not None and reason.code is ReasonCode.SHARED_EXPERT_GATED
    assert "sigmoid(shared_expert_gate" in reason.message and "outside the kernel" in reason.remediation
    kimi = resolve_model(str(FIXTURES / "moonshotai--Kimi-K2-Instruct"))
    assert check.evaluate(LayerScenario(group=kimi.main_group, ep=8, tokens_per_rank=8192)) is None


def test_topk_unsupported():
    (r,) = has(run(manual(top_k=40), "b200", dp=8, ep=8), SM100_FP4, "TOPK_UNSUPPORTED")
    assert "top_k=40 exceeds 32" in r.message


def test_experts_not_divisible_lists_valid_sizes():
    (r,) = has(run(V4_FLASH, "b200", dp=6, ep=6), SM100_FP4, "EXPERTS_NOT_DIVISIBLE")
    assert "num_experts=256 is not divisible by ep=6" in r.message
    assert "2, 4, 8" in r.remediation


def test_experts_exceed_limit():
    (r,) = has(run(manual(experts=4096), "b200", dp=8, ep=8), SM100_FP4, "EXPERTS_EXCEED_LIMIT")
    assert "exceeds 2048" in r.message


def test_tp_unsupported_for_tensor_parallel_experts():
    (r,) = has(run(V4_FLASH, "b200", tp=8), SM100_FP4, "TP_UNSUPPORTED")
    assert "--ep 8" in r.remediation


def test_ep_required_by_vllm():
    has(run(V4_FLASH, "b200", tp=8, engine="vllm"), SM100_FP4, "EP_REQUIRED")


def test_ep_exceeds_domain():
    (r,) = has(run(V4_FLASH, "h200", nodes=2, dp=16, ep=16), SM90_FP4, "EP_EXCEEDS_DOMAIN")
    assert "crosses the 8-GPU NVLink domain" in r.message


def test_ep_size_unsupported():
    has(run(V4_FLASH, "mi355x", dp=8, ep=8), A4W4, "EP_SIZE_UNSUPPORTED")


def test_a4w4_runs_at_ep16_on_two_nodes():
    d = run(V4_FLASH, "mi355x", nodes=2, dp=16, ep=16)
    assert not codes(d, A4W4)
    assert "EP_EXCEEDS_DOMAIN" in codes(d, A8W4)


def test_eplb_pp_tp_all2all_under_vllm_aiter():
    d = run(
        V4_FLASH,
        "mi355x",
        dp=4,
        ep=4,
        pp=2,
        eplb=True,
        all2all_backend="deepep_low_latency",
        engine="vllm",
        software="vllm-0.33.0",
    )
    for code in ("EPLB_UNSUPPORTED", "PP_UNSUPPORTED", "ALL2ALL_UNSUPPORTED"):
        has(d, A8W4, code)
    d = run(V4_FLASH, "mi355x", tp=2, dp=4, ep=8, engine="vllm", software="vllm-0.33.0")
    has(d, A8W4, "TP_UNSUPPORTED")


def test_activation_unsupported():
    gpt_oss_style = Activation(clamp=7.0, alpha=1.702, beta=1.0)
    (r,) = has(run(manual(activation=gpt_oss_style), "h200", dp=8, ep=8), SM90_FP4, "ACTIVATION_UNSUPPORTED")
    assert "alpha=1.702" in r.message
    assert not codes(run(manual(activation=gpt_oss_style), "b200", dp=8, ep=8), SM100_FP4)
    has(run(manual(activation=Activation(kind="situ")), "mi355x", dp=8, ep=8), A8W4, "ACTIVATION_UNSUPPORTED")


def test_routing_unsupported_under_vllm():
    """vLLM's own DSv4 mega path needs sqrtsoftplus routing (moe-oracle's runtime takes vLLM's router output)."""
    from moe_oracle.engines.vllm.routes import route_reasons

    d = run(manual(scoring="sigmoid"), "b200", dp=8, ep=8, engine="vllm")
    cand = next(c for c in d.main.candidates if c.spec.key == SM100_FP4)
    assert "ROUTING_UNSUPPORTED" in [r.code.value for r in route_reasons(d, d.main, cand, "engine")]


def test_tokens_unsupported():
    (r,) = has(run(V4_FLASH, "mi355x", dp=8, ep=8, max_num_batched_tokens=40000), A8W4, "TOKENS_UNSUPPORTED")
    assert "65536" in r.message


def test_heap_too_small():
    (r,) = has(run(V4_FLASH, "mi355x", dp=8, ep=8, env={"MORI_SHMEM_HEAP_SIZE": "4G"}), A8W4, "HEAP_TOO_SMALL")
    assert "4G" in r.message


def test_engine_unsupported():
    (r,) = has(run(V4_FLASH, "mi355x", nodes=2, dp=16, ep=16, engine="vllm"), A4W4, "ENGINE_UNSUPPORTED")
    assert "hard-codes quant='a8w4'" in r.message


def test_model_class_unsupported():
    glm45 = manual(fmt="fp8_block", hidden=4096, inter=1536, experts=128, top_k=8, architecture="Glm4MoeForCausalLM")
    sglang_alone = run(glm45, "h200", dp=8, ep=8, engine="sglang", software="sglang-0.5.23")
    (r,) = has(sglang_alone, SM90_FP8, "MODEL_CLASS_UNSUPPORTED")
    assert "Glm4MoeSparseMoeBlock" in r.message and "glm4_moe.py:402" in r.message


def test_known_bad_from_bundled_advisory():
    (r,) = has(run(V4_FLASH, "mi355x", dp=8, ep=8, engine="vllm"), A8W4, "KNOWN_BAD")
    assert "MOA-2026-001" in r.message and "github.com" in r.remediation


def test_known_bad_from_a_site_advisory_file(tmp_path):
    f = tmp_path / "site.json"
    f.write_text(
        json.dumps(
            {
                "schema": 1,
                "advisories": [
                    {
                        "id": "SITE-1",
                        "title": "wrong results on our GB200 rack at EP >= 32",
                        "link": "https://example.invalid/1",
                        "backend": "deep_gemm_mega_moe",
                        "variant": "sm100_fp8xfp4",
                        "archs": ["sm100"],
                        "min_ep": 32,
                        "models": ["DeepseekV4*"],
                    }
                ],
            }
        )
    )
    assert "KNOWN_BAD" not in codes(run(V4_FLASH, "gb200", nodes=4, dp=16, ep=16, advisories_file=str(f)), SM100_FP4)
    has(run(V4_FLASH, "gb200", nodes=8, dp=32, ep=32, advisories_file=str(f)), SM100_FP4, "KNOWN_BAD")


def test_every_reason_code_is_covered():
    tests = {name for name in globals() if name.startswith("test_")}
    covered = {
        "ARCH_UNSUPPORTED": "test_arch_unsupported",
        "KERNEL_MISSING": "test_kernel_missing_names_the_build",
        "LIBRARY_VERSION": "test_library_version",
        "QUANT_UNSUPPORTED": "test_quant_unsupported",
        "SHAPE_UNSUPPORTED": "test_shape_unsupported_cites_both_sources",
        "TOPK_UNSUPPORTED": "test_topk_unsupported",
        "EXPERTS_NOT_DIVISIBLE": "test_experts_not_divisible_lists_valid_sizes",
        "EXPERTS_EXCEED_LIMIT": "test_experts_exceed_limit",
        "TP_UNSUPPORTED": "test_tp_unsupported_for_tensor_parallel_experts",
        "PP_UNSUPPORTED": "test_eplb_pp_tp_all2all_under_vllm_aiter",
        "EP_REQUIRED": "test_ep_required_by_vllm",
        "EP_EXCEEDS_DOMAIN": "test_ep_exceeds_domain",
        "EP_SIZE_UNSUPPORTED": "test_ep_size_unsupported",
        "EPLB_UNSUPPORTED": "test_eplb_pp_tp_all2all_under_vllm_aiter",
        "ALL2ALL_UNSUPPORTED": "test_eplb_pp_tp_all2all_under_vllm_aiter",
        "ACTIVATION_UNSUPPORTED": "test_activation_unsupported",
        "ROUTING_UNSUPPORTED": "test_routing_unsupported_under_vllm",
        "TOKENS_UNSUPPORTED": "test_tokens_unsupported",
        "HEAP_TOO_SMALL": "test_heap_too_small",
        "ENGINE_UNSUPPORTED": "test_engine_unsupported",
        "MODEL_CLASS_UNSUPPORTED": "test_model_class_unsupported",
        "KNOWN_BAD": "test_known_bad_from_bundled_advisory",
        "MEMORY_EXCEEDED": "test_memory_exceeded",
        "CONVERSION_LOSSY": "test_conversion_lossy",
        "EXPERT_BIAS_UNSUPPORTED": "test_expert_bias_gpt_oss_on_every_kernel",
        "EXPERT_WIDTH_EXCEEDS": "test_intermediate_limit_of_sm90_fp4",
        "ROUTER_WEIGHT_ON_INPUT": "test_router_weight_on_input_llama4",
        "SHARED_EXPERT_GATED": "test_shared_expert_gated_blocks_only_a_fusion",
        "QUANT_INTEGER": "test_quant_integer_kimi_k25_int4",
        "DEPLOYMENT_MEMORY_EXCEEDED": "test_deployment_memory_exceeded",
        "KV_CACHE_TOO_SMALL": "test_kv_cache_too_small",
    }
    assert set(covered) == {c.value for c in ReasonCode}
    assert set(covered.values()) <= tests


def test_memory_exceeded():
    from moe_oracle.decide.selection import decide
    from moe_oracle.inputs import DeploymentFlags, build_deployment, resolve_software
    from moe_oracle.model.resolve import resolve_model

    dep, _ = build_deployment(DeploymentFlags(device="h200", gpus_per_node=1))
    sw, _ = resolve_software(None, "h200")
    (conv,) = decide(resolve_model(V4_FLASH), dep, sw).main.conversions
    assert "MEMORY_EXCEEDED" in [r.code.value for r in conv.failures]


def test_conversion_lossy():
    from moe_oracle.decide.selection import decide
    from moe_oracle.inputs import DeploymentFlags, build_deployment, resolve_software

    dep, _ = build_deployment(DeploymentFlags(device="h200", dp=8, ep=8))
    sw, _ = resolve_software(None, "h200")
    (conv,) = decide(manual(fmt="bf16"), dep, sw).main.conversions
    assert [r.code.value for r in conv.failures] == ["CONVERSION_LOSSY"]
    assert "--allow-lossy-conversion" in conv.failures[0].remediation


def test_deployment_memory_exceeded():
    from tests.oracle.test_fit import test_deepseek_v4_pro_on_8_h100_does_not_fit_and_names_the_layout_that_does as t

    t()


def test_kv_cache_too_small():
    from tests.oracle.test_fit import test_kv_cache_too_small_names_the_max_model_len as t

    t()
