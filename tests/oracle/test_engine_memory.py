"""Engine-true memory: SGLang's own --mem-fraction-static, each kind of weight placed as the engine places it,
and the SGLang and vLLM DeepSeek-V4-Pro plans on 8 x H200 that the fit settles."""

from __future__ import annotations

import json
import shlex

import pytest

from moe_oracle.decide.fit import measure_fit
from moe_oracle.decide.memory_share import SGLangMemoryInputs, sglang_default_settings, sglang_mem_fraction_static
from moe_oracle.decide.placement import Over, group_size, placement
from moe_oracle.inputs import DeploymentFlags, build_deployment
from moe_oracle.model.resolve import resolve_model
from moe_oracle.model.types import PartKind
from moe_oracle.rules import Engine
from moe_oracle.spec.device import DEVICES
from tests.cli.runner import cli

H200_MIB = DEVICES["h200"].memory_gib * 1024  # what the driver reports (139.80 GiB), not the marketing 141
V4_PRO = "deepseek-ai/DeepSeek-V4-Pro"
GLM5 = "zai-org/GLM-5-FP8"


# Hand-computed from sglang 0.5.23 srt/arg_groups/memory_hook.py:281-336 and reserve_for_graph_mb (363-398).
@pytest.mark.parametrize(
    ("inputs", "reserved", "fraction"),
    [
        # V4 (no prefill graph), DP attention 8, the old plan's chunk 8192 x 8: 512 + 1.5 x 65536 + 8/8 x 1024
        # + graphs 512 x 2 + 512 x 8 x 3 + 512 x 8 x 1.5 = 119296 MiB
        (SGLangMemoryInputs(H200_MIB, 65536, 512, 8, 1, 8, mla=False, prefill_graph=False), 119296, 0.167),
        # the cookbook's TP 8 attention, chunk 4096: 512 + 6144 + 1024 + 1024 = 8704, below the 10240 floor
        (SGLangMemoryInputs(H200_MIB, 4096, 512, 8, 1, 1, mla=False, prefill_graph=False), 10240, 0.928),
        # GLM-5 (MLA, prefill graph 1536), DP 8, chunk 8192, decode graphs of 64: 512 + 12288 + 1024 + (128 + 1536
        # + 1536) = 17024
        (SGLangMemoryInputs(H200_MIB, 8192, 64, 8, 1, 8, mla=True, prefill_graph=True), 17024, 0.881),
        # B200 defaults for a non-MLA model, TP 8: chunk 16384, 512 graphs, 74 prefill graph sizes x 8 = 592
        (SGLangMemoryInputs(180 * 1024, 16384, 512, 8, 1, 1, mla=False, prefill_graph=True), 27728, 0.85),
    ],
)
def test_sglang_mem_fraction_static_is_sglangs_own_formula(inputs, reserved, fraction):
    from moe_oracle.decide.memory_share import sglang_reserved_mb

    assert sglang_reserved_mb(inputs) == reserved
    assert sglang_mem_fraction_static(inputs) == fraction


def test_sglang_defaults_per_gpu_tier():
    assert sglang_default_settings(H200_MIB, 8) == (8192, 512)  # memory_hook.py:141-153 (H20, H200)
    assert sglang_default_settings(80 * 1024, 2) == (8192, 256)
    assert sglang_default_settings(180 * 1024, 1) == (16384, 512)


def _par(**kw):
    return build_deployment(DeploymentFlags(device="h200", **kw))[0].parallel


@pytest.mark.parametrize("model", [V4_PRO, GLM5])
def test_vllm_dp_ep_replicates_everything_but_the_experts(model):
    par = _par(dp=8, ep=8)
    arch = resolve_model(model).architecture
    for kind in PartKind:
        where = placement(Engine.VLLM, par, arch, kind)
        ways = 8 if kind is PartKind.ROUTED_EXPERTS else 1  # expert biases live with the experts
        assert group_size(Engine.VLLM, par, where.over) == ways, kind  # tp 1: one copy of the rest per rank


@pytest.mark.parametrize("model", [V4_PRO, GLM5])
def test_vllm_tp_attention_divides_attention_embeddings_head_shared_dense_over_tp(model):
    par = _par(tp=8, ep=8)
    arch = resolve_model(model).architecture
    for kind in (PartKind.ATTENTION, PartKind.EMBEDDING, PartKind.HEAD, PartKind.SHARED_EXPERTS, PartKind.DENSE_MLP):
        assert group_size(Engine.VLLM, par, placement(Engine.VLLM, par, arch, kind).over) == 8
    assert placement(Engine.VLLM, par, arch, PartKind.ROUTER).over is Over.REPLICATED


@pytest.mark.parametrize(("model", "embedding"), [(V4_PRO, 1), (GLM5, 1)])
def test_sglang_dp_attention(model, embedding):
    """--tp-size 8 --attn-dp-size 8: attention TP 1; V4 replicates its embedding (deepseek_v4.py:3770-3774),
    DeepSeek-V2-family models shard it over the attention-TP group (size 1 here); the LM head, shared experts
    (no --moe-a2a-backend) and dense MLPs are divided over the whole TP group of 8."""
    par = _par(dp=8, ep=8)
    arch = resolve_model(model).architecture

    def size(kind, a2a="none"):
        return group_size(Engine.SGLANG, par, placement(Engine.SGLANG, par, arch, kind, a2a_backend=a2a).over)

    assert size(PartKind.ATTENTION) == 1 and size(PartKind.EMBEDDING) == embedding
    assert size(PartKind.HEAD) == size(PartKind.SHARED_EXPERTS) == size(PartKind.DENSE_MLP) == 8
    assert size(PartKind.SHARED_EXPERTS, "megamoe") == 1  # deepseek_v2.py:874-887: replicated under an a2a backend
    v4 = placement(Engine.SGLANG, par, arch, PartKind.EMBEDDING).over
    assert (v4 is Over.REPLICATED) == (model == V4_PRO)


@pytest.mark.parametrize("model", [V4_PRO, GLM5])
def test_sglang_tp_attention_divides_over_the_tp_group(model):
    par = _par(tp=8, ep=8)
    arch = resolve_model(model).architecture
    for kind in (PartKind.ATTENTION, PartKind.EMBEDDING, PartKind.HEAD, PartKind.SHARED_EXPERTS, PartKind.DENSE_MLP):
        assert group_size(Engine.SGLANG, par, placement(Engine.SGLANG, par, arch, kind).over) == 8, kind


def test_fit_table_shows_each_kind_with_its_placement():
    dep = build_deployment(DeploymentFlags(device="h200", dp=8, ep=8))[0]
    fit = measure_fit(resolve_model(V4_PRO), dep, Engine.SGLANG)
    rows = {i.label: i.detail for i in fit.items}
    assert rows["embedding"] == "replicated" and rows["LM head"] == "over 8 (tp)"
    assert rows["attention"].startswith("whole on each rank")
    assert fit.share.fraction == 0.167 and not fit.fits  # SGLang's own default for --chunked-prefill-size 65536


def test_v4_pro_sglang_plan_on_8_h200_golden():
    """Issue #23's done-when: sm90_fp8xfp4 through moe-oracle's runtime with a complete command, and the engine
    settings that make it fit by SGLang's own formula (its defaults give 0.167 for --chunked-prefill-size 65536)."""
    r = cli("plan", V4_PRO, "--device", "h200", "--dp", "8", "--ep", "8", "--engine", "sglang", "--json")
    assert r.code == 0, r.err
    plan = json.loads(r.out)
    assert plan["variant"] == "sm90_fp8xfp4"
    (cmd,) = plan["commands"]
    argv = cmd["argv"]
    env = dict(cmd["env"]) if isinstance(cmd["env"], list) else cmd["env"]
    assert (
        env["SGLANG_PLUGINS"] == "moe_oracle" and env["MOE_ORACLE_SGLANG_BACKEND"] == "deep_gemm_mega_moe:sm90_fp8xfp4"
    )
    i = argv.index
    assert argv[i("--chunked-prefill-size") + 1] == "8192" and argv[i("--cuda-graph-max-bs-decode") + 1] == "64"
    assert "--disable-shared-experts-fusion" in argv and "--moe-a2a-backend" not in argv
    assert "--mem-fraction-static" not in argv  # SGLang picks 0.892 itself for these flags
    fit = plan["fit"]
    assert fit["verdict"] == "FITS" and fit["memory_fraction"] == 0.892
    assert fit["max_context_one_sequence"] == 1_048_576
    assert "chosen by moe-oracle" in plan["settings_chosen"] and "0.167" in plan["settings_chosen"]
    text = cli("plan", V4_PRO, "--device", "h200", "--dp", "8", "--ep", "8", "--engine", "sglang").out
    launch = text[text.index("## Launch") : text.index("## Memory fit")]
    words = shlex.split(launch.replace("\\\n", " ").split("\n", 2)[1] + " " + launch.split("\n", 2)[2])
    assert "--cuda-graph-max-bs-decode" in words and "64" in words  # shell-quoted, pasteable


def test_vllm_settings_raise_the_utilization_no_higher_than_the_ceiling():
    from moe_oracle.decide.layout import settings_flags
    from moe_oracle.decide.memory_share import VLLM_MAX_PROPOSED_UTILIZATION
    from moe_oracle.decide.settings_search import fitting_settings

    model = resolve_model("deepseek-ai/DeepSeek-V4-Flash")
    dep = build_deployment(DeploymentFlags(device="h200", dp=8, ep=8))[0]
    base = measure_fit(model, dep, Engine.VLLM)
    over = base.usable_bytes - base.needed_bytes + (2 << 30)  # 2 GiB past the 0.9 share
    assert not measure_fit(model, dep, Engine.VLLM, buffer_bytes=over).fits
    prop = fitting_settings(model, dep, Engine.VLLM, buffer_for=lambda s: (over, "test"))
    assert prop is not None and prop.fit.fits
    assert 0.9 < prop.settings.fraction <= VLLM_MAX_PROPOSED_UTILIZATION
    assert settings_flags(Engine.VLLM, prop.settings) == f"--gpu-memory-utilization {prop.settings.fraction:g}"
    assert "moe-oracle proposes at most 0.95" in prop.why


def test_a_given_fraction_is_judged_as_given():
    from moe_oracle.decide.memory_share import EngineMemorySettings
    from moe_oracle.decide.settings_search import fitting_settings

    dep = build_deployment(DeploymentFlags(device="h200", dp=8, ep=8))[0]
    given = EngineMemorySettings(fraction=0.5)
    assert fitting_settings(resolve_model(V4_PRO), dep, Engine.SGLANG, given=given) is None
    r = cli(
        "plan", V4_PRO, "--device", "h200", "--dp", "8", "--ep", "8", "--engine", "sglang", "--memory-fraction", "0.5"
    )
    assert r.code == 7 and "--mem-fraction-static 0.5" in r.err
    # before more GPUs; judged (re-planned) before it is printed: SGLang's own settings are chosen again by plan
    assert "Fix: engine settings: without --memory-fraction 0.5 plans DP8+EP8 with deep_gemm_mega_moe:" in r.err


def _argv_value(argv, flag):
    return argv[argv.index(flag) + 1]


def test_v4_pro_vllm_plan_on_8_h200_lowers_the_token_budget():
    """vLLM's defaults (8192 tokens per rank: a 7.36 GiB DeepGEMM buffer) leave too little KV cache even at the
    0.95 ceiling: the plan lowers --max-num-batched-tokens (buffer and activation reserve shrink with it), keeps it
    at least vLLM's max_num_seqs (1024 on H200), writes both flags, and is decided again at that budget (the
    fingerprint select gives for the same flags)."""
    args = ("deepseek-ai/DeepSeek-V4-Pro", "--device", "h200", "--dp", "8", "--ep", "8", "--engine", "vllm", "--json")
    r = cli("plan", *args)
    assert r.code == 0, r.err
    plan = json.loads(r.out)
    (cmd,) = plan["commands"]
    budget = int(_argv_value(cmd["argv"], "--max-num-batched-tokens"))
    assert 1024 <= budget < 8192 and float(_argv_value(cmd["argv"], "--gpu-memory-utilization")) <= 0.95
    fit = plan["fit"]
    assert fit["verdict"] == "FITS" and fit["max_context_one_sequence"] == 1_048_576
    assert fit["memory_fraction_source"].startswith("chosen by moe-oracle, not given")
    buffers = next(i for i in fit["per_rank"] if i["label"] == "symmetric buffers / heaps")
    assert buffers["gib"] < 7.36 / 2  # at most half the budget, at most about half the buffer
    why = plan["settings_chosen"]
    assert why.startswith(f"engine settings chosen by moe-oracle: --max-num-batched-tokens {budget}")
    assert "at 8192 tokens per rank and 0.92 it does not fit" in why and "at most 0.95" in why
    assert plan["decision"]["inputs"]["deployment"]["parallel"]["max_num_batched_tokens"] == budget
    select = json.loads(cli("select", *args).out)
    assert select["fingerprint"] == plan["fingerprint"] and select["settings_chosen"] == why
    text = cli("plan", *args[:-1]).out
    assert "share: chosen by moe-oracle" in text and "share: given" not in text


@pytest.mark.parametrize("typed", ["8192", "16384"])
def test_a_given_token_budget_is_judged_as_given(typed):
    """A typed --max-num-batched-tokens is not lowered: refused (exit 7; even vLLM's default 8192 typed, whose
    7.36 GiB buffer does not fit the 0.95 share of the driver-reported 139.8 GiB), the fix naming the smaller
    budget, which then fits."""
    args = ("plan", V4_PRO, "--device", "h200", "--dp", "8", "--ep", "8", "--engine", "vllm")
    r = cli(*args, "--max-num-batched-tokens", typed)
    assert r.code == 7, r.out
    head = "Fix: engine settings: --max-num-batched-tokens "  # judged: the typed value replaced by the named one
    assert head in r.err
    named = int(r.err.split(head)[1].split()[0])
    assert 1024 <= named < int(typed)
    ok = cli(*args, "--max-num-batched-tokens", str(named), "--json")
    assert ok.code == 0, ok.err
    assert _argv_value(json.loads(ok.out)["commands"][0]["argv"], "--max-num-batched-tokens") == str(named)


def test_vllm_budget_search_stops_at_max_num_seqs():
    from moe_oracle.decide.memory_share import EngineMemorySettings
    from moe_oracle.decide.settings_search import _candidates

    dep = build_deployment(DeploymentFlags(device="h200", dp=8, ep=8))[0]
    cands = _candidates(dep, Engine.VLLM, EngineMemorySettings())
    assert {c.max_num_batched_tokens for c in cands} == {None, 4096, 2048, 1024}  # None: 8192, the deployment's
    # the largest budget first, at the ceiling
    assert cands[0] == EngineMemorySettings(fraction=0.95, chosen=True, fraction_chosen=True)
    given = _candidates(dep, Engine.VLLM, EngineMemorySettings(max_num_batched_tokens=8192))
    assert {c.max_num_batched_tokens for c in given} == {8192}


def test_the_share_line_says_given_only_when_the_user_gave_it():
    from moe_oracle.decide.memory_share import EngineMemorySettings

    dep = build_deployment(DeploymentFlags(device="h200", dp=8, ep=8))[0]
    model = resolve_model(V4_PRO)
    given = measure_fit(model, dep, Engine.VLLM, settings=EngineMemorySettings(fraction=0.95))
    chosen = EngineMemorySettings(fraction=0.95, chosen=True, fraction_chosen=True)
    assert "  share: given (--memory-fraction)" in given.lines()
    lines = measure_fit(model, dep, Engine.VLLM, settings=chosen).lines()
    assert lines[1].startswith("  share: chosen by moe-oracle, not given: at vLLM's default 0.92")


def test_a_given_share_stays_given_when_the_search_chooses_the_token_budget():
    """``--memory-fraction 0.95`` given, V4-Pro DP8+EP8 on 8 x H200 with vLLM: the search lowers the token budget
    and keeps the given share; the share line says given, the settings line names the budget it chose."""
    args = ("plan", V4_PRO, "--device", "h200", "--dp", "8", "--ep", "8", "--engine", "vllm", "--memory-fraction")
    r = cli(*args, "0.95")
    assert r.code == 0, r.err
    assert "  share: given (--memory-fraction)" in r.out.splitlines() and "share: chosen by" not in r.out
    assert "engine settings chosen by moe-oracle: --max-num-batched-tokens" in r.out
