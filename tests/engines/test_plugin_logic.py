"""The vLLM plug-in's pure logic (plain values in, decisions and mutations out), without vLLM."""

from __future__ import annotations

import json
import logging
import sys
from dataclasses import replace
from pathlib import Path
from typing import ClassVar

import pytest

from moe_oracle.engines.vllm import plugin as P

PRESETS = Path(__file__).resolve().parents[2] / "moe_oracle" / "presets"


def hf(name: str, *, vllm_rewrite: bool = True) -> dict:
    cfg = json.loads((PRESETS / name / "config.json").read_text())
    qc = cfg.get("quantization_config")
    if (
        vllm_rewrite
        and isinstance(qc, dict)
        and cfg.get("model_type") == "deepseek_v4"
        and qc.get("quant_method") == "fp8"
    ):
        qc["quant_method"] = "deepseek_v4_fp8"  # what DeepseekV4ForCausalLMConfig does in place
    return cfg


V4 = hf("deepseek-ai--DeepSeek-V4-Flash")
GLM = hf("zai-org--GLM-5-FP8")


def snap(**kw: object) -> P.VllmSnapshot:
    base = {
        "architecture": "DeepseekV4ForCausalLM",
        "hf_config": V4,
        "model": "deepseek-ai/DeepSeek-V4-Flash",
        "dp": 8,
        "enable_expert_parallel": True,
        "device": "b200",
        "arch": "sm100",
        "platform": "CudaPlatform NVIDIA B200",
        "all2all_backend": "allgather_reducescatter",
    }
    base.update(kw)
    return P.VllmSnapshot(**base)  # type: ignore[arg-type]


@pytest.mark.parametrize(("value", "on"), [(None, True), ("1", True), ("0", False), ("false", False), ("OFF", False)])
def test_switch(value: str | None, on: bool) -> None:
    env = {} if value is None else {P.ENV_SWITCH: value}
    assert P.enabled(env) is on


def test_normalize_undoes_vllm_quant_rewrite() -> None:
    out = P._normalize_hf(V4)
    assert out["quantization_config"]["quant_method"] == "fp8"
    assert V4["quantization_config"]["quant_method"] == "deepseek_v4_fp8"  # input untouched


def test_snapshot_inputs_translate_parallel_config() -> None:
    desc, dep, sw = P.snapshot_inputs(snap(dp=16, dp_local=8, nnodes=2))
    assert desc.architecture == "DeepseekV4ForCausalLM" and desc.main_group.weight_format.value == "mxfp4"
    assert dep.parallel.ep == 16 and dep.topology.nodes == 2 and dep.topology.gpus_per_node == 8
    assert dep.parallel.all2all_backend is None  # vLLM's default counts as unset
    assert dep.device.name == "b200" and sw.name == "vllm-0.33.0"
    _, no_ep, _ = P.snapshot_inputs(snap(enable_expert_parallel=False))
    assert no_ep.parallel.ep == 1


def test_auto_on_b200_sets_deep_gemm_mega_moe() -> None:
    out = P.resolve(snap(speculative="mtp"))
    assert out.action == "set" and out.moe_backend == "deep_gemm_mega_moe"
    assert out.mutations() == {"kernel_config.moe_backend": "deep_gemm_mega_moe"}
    assert out.table[0].startswith("moe-oracle: DeepseekV4ForCausalLM --moe-backend auto -> deep_gemm_mega_moe")
    groups = [line for line in out.table if line.startswith("  layer group")]
    assert len(groups) == 3 and all(
        line.endswith("deep_gemm_mega_moe:sm100_fp8xfp4 (accuracy class standard)") for line in groups
    )
    rejected = [line for line in out.table if line.startswith("    ") and "[" in line]
    assert len(rejected) == 9  # one line per rejected candidate (identical for every group: listed once)
    assert any("set kernel_config.moe_backend = deep_gemm_mega_moe" in line for line in out.table)
    assert out.fingerprint and out.fingerprint.startswith("sha256:")


def test_decision_is_deterministic() -> None:
    a, b = P.resolve(snap()), P.resolve(snap())
    assert a.table == b.table and a.mutations() == b.mutations() and a.fingerprint == b.fingerprint


def test_auto_on_mi355x_needs_aiter_switches() -> None:
    off = P.resolve(snap(device="mi355x", arch="gfx950"))
    assert off.action == "keep" and off.mutations() == {}
    assert "VLLM_ROCM_USE_AITER" in off.table[-1]
    on = P.resolve(snap(device="mi355x", arch="gfx950", env={"VLLM_ROCM_USE_AITER": "1"}))
    assert on.action == "set"
    assert on.mutations() == {
        "kernel_config.moe_backend": "aiter_mega_moe",
        "parallel_config.all2all_backend": "mori_high_throughput",
        "os.environ.setdefault(MORI_SHMEM_HEAP_SIZE)": "8G",
    }
    kept = P.resolve(
        snap(device="mi355x", arch="gfx950", env={"VLLM_ROCM_USE_AITER": "true"}, all2all_backend="mori_low_latency")
    )
    assert kept.all2all_backend is None and kept.moe_backend == "aiter_mega_moe"


def test_auto_keeps_vllm_default_when_nothing_fits() -> None:
    for s in (
        snap(device="h200", arch="sm90"),
        snap(architecture="GlmMoeDsaForCausalLM", hf_config=GLM, model="zai-org/GLM-5-FP8"),
        snap(enable_expert_parallel=False),
        snap(dp=16, dp_local=8, nnodes=2),
    ):
        out = P.resolve(s)
        assert out.action == "keep" and out.mutations() == {}, s
        assert out.table[-1].startswith("  kept auto:")
    crossing = P.resolve(snap(dp=16, dp_local=8, nnodes=2))
    assert any("EP_EXCEEDS_DOMAIN" in line for line in crossing.table)
    # a bigger domain (GB200 NVL72-style) lets the same layout through
    nvl = P.resolve(snap(dp=16, dp_local=8, nnodes=2, env={P.ENV_DOMAIN: "72"}))
    assert nvl.moe_backend == "deep_gemm_mega_moe"


def test_explicit_value_is_validated() -> None:
    ok = P.resolve(snap(moe_backend="deep_gemm_mega_moe"))
    assert ok.action == "keep" and ok.error is None and "validated" in ok.table[0]
    bad = P.resolve(snap(moe_backend="deep-gemm-mega-moe", device="h200", arch="sm90"))
    assert bad.action == "refuse"
    assert bad.error and bad.error.startswith("--moe-backend deep_gemm_mega_moe cannot run on this deployment")
    assert "ARCH_UNSUPPORTED" in bad.error and P.ENV_SWITCH in bad.error
    glm = P.resolve(
        snap(architecture="GlmMoeDsaForCausalLM", hf_config=GLM, model="GLM", moe_backend="deep_gemm_mega_moe")
    )
    assert glm.action == "refuse" and "ENGINE_UNSUPPORTED" in (glm.error or "")
    aiter = P.resolve(snap(device="mi355x", arch="gfx950", moe_backend="aiter_mega_moe"))
    assert aiter.action == "refuse" and "VLLM_ROCM_USE_AITER" in (aiter.error or "")
    aiter_ok = P.resolve(
        snap(device="mi355x", arch="gfx950", moe_backend="aiter_mega_moe", env={"VLLM_ROCM_USE_AITER": "1"})
    )
    assert aiter_ok.action == "set" and aiter_ok.moe_backend is None  # the user's value stands
    assert aiter_ok.all2all_backend == "mori_high_throughput"


def test_values_not_ours_are_left_to_vllm() -> None:
    assert P.resolve(snap(moe_backend="marlin")).action == "skip"
    assert P.resolve(snap(moe_backend="flashinfer_moe_ep_mega_deep_gemm")).action == "skip"
    other = P.resolve(snap(vllm_version="0.34.0"))
    assert other.action == "skip" and "0.34.0" in other.table[0]


def test_unknown_platform() -> None:
    auto = P.resolve(snap(device=None, arch=None, platform="CpuPlatform"))
    assert auto.action == "keep" and "CpuPlatform" in auto.table[0]
    explicit = P.resolve(snap(device=None, arch=None, platform="CpuPlatform", moe_backend="deep_gemm_mega_moe"))
    assert explicit.action == "refuse" and "CpuPlatform" in (explicit.error or "")


def test_lora_and_pcp_block_mega_backends() -> None:
    assert P.resolve(snap(lora=True)).action == "keep"
    refused = P.resolve(snap(lora=True, moe_backend="deep_gemm_mega_moe"))
    assert refused.action == "refuse" and "LoRA" in (refused.error or "")
    assert P.resolve(snap(pcp=2)).action == "keep"


def test_unreadable_config_is_left_alone() -> None:
    out = P.resolve(snap(hf_config={"architectures": ["Nope"], "model_type": "nope"}))
    assert out.action == "keep" and "cannot describe" in out.table[0]


# --- the wrapper and register(), with stand-ins for vLLM's classes --------------------------


class _Base:
    calls: ClassVar[list[str]] = []

    @staticmethod
    def verify_and_update_config(vllm_config: object) -> None:
        _Base.calls.append("base")

    @staticmethod
    def verify_and_update_model_config(model_config: object) -> None:
        _Base.calls.append("model")


class _ClassBase(_Base):
    @classmethod
    def verify_and_update_config(cls, vllm_config: object) -> None:
        _Base.calls.append(f"classbase:{cls.__name__}")


def test_wrap_entry_chains_the_existing_entry(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[tuple[object, str]] = []
    monkeypatch.setattr(P, "apply_to_vllm_config", lambda cfg, arch: seen.append((cfg, arch)))
    monkeypatch.delenv(P.ENV_SWITCH, raising=False)
    for base in (_Base, _ClassBase):
        _Base.calls.clear()
        seen.clear()
        wrapped = P.wrap_entry(base, "DeepseekV4ForCausalLM")
        assert issubclass(wrapped, base) and wrapped._moe_oracle_wrapped
        wrapped.verify_and_update_config("cfg")
        wrapped.verify_and_update_model_config("mc")
        assert _Base.calls[0] in ("base", f"classbase:{wrapped.__name__}") and _Base.calls[1] == "model"
        assert seen == [("cfg", "DeepseekV4ForCausalLM")]
    monkeypatch.setenv(P.ENV_SWITCH, "0")
    seen.clear()
    P.wrap_entry(_Base, "X").verify_and_update_config("cfg")
    assert seen == []


def test_register_without_vllm_does_not_raise(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "vllm", None)  # import vllm... -> ImportError
    monkeypatch.delenv(P.ENV_SWITCH, raising=False)
    P.register()


def test_snapshot_replace_keeps_frozen_semantics() -> None:
    s = snap()
    assert replace(s, dp=4).dp == 4 and s.dp == 8


def test_the_engines_batch_limits_are_the_workload() -> None:
    """Decode steps of max_num_seqs tokens and prefill chunks of max_num_batched_tokens enter the ranking."""
    small, large = P.resolve(snap(max_num_seqs=8)), P.resolve(snap(max_num_seqs=512))
    assert "8192 tokens/rank, 8 seqs" in small.table[0] and "512 seqs" in large.table[0]
    assert small.fingerprint != large.fingerprint  # the workload is an input of the decision record


# --- moe-oracle's runtime inside vLLM (the plug-in route) -------------------------------------


def _plan_groups(out: P.Outcome) -> dict[str, dict]:
    from moe_oracle.engines.vllm.shipped import planned_groups

    return {g["name"]: g for g in planned_groups(out.additional_config)}


def test_auto_on_h200_serves_v4_through_moe_oracle() -> None:
    out = P.resolve(snap(device="h200", arch="sm90", software="all", speculative="mtp"))
    assert out.action == "set" and out.moe_backend is None
    groups = _plan_groups(out)
    assert set(groups) == {"moe", "moe_hash", "mtp"}
    main = groups["moe"]
    assert main["runs"] == "moe-oracle" and main["variant"].startswith("deep_gemm_mega_moe:sm90_")
    assert main["layers"] == list(range(3, 43)) and main["layer_plan"]["max_tokens_per_rank"] == 8192
    assert any(line.startswith("  set additional_config.moe_oracle.plan") for line in out.table)
    assert any("moe-oracle runtime deep_gemm_mega_moe:sm90_" in line for line in out.table)
    # what the workers read back
    from moe_oracle.engines.vllm.shipped import plan_for_layer

    plan = plan_for_layer(out.additional_config, 10)
    assert plan is not None and plan.variant == main["variant"].split("+")[0]
    assert plan_for_layer(out.additional_config, 999) is None


def test_auto_on_h200_serves_glm5_fp8_through_moe_oracle() -> None:
    out = P.resolve(snap(architecture="GlmMoeDsaForCausalLM", hf_config=GLM, model="GLM", device="h200", arch="sm90",
                         software="all"))  # fmt: skip
    groups = _plan_groups(out)
    assert groups["moe"]["variant"] == "deep_gemm_mega_moe:sm90_fp8xfp8" and groups["moe"]["runs"] == "moe-oracle"
    assert groups["moe"]["layer_plan"]["convert_from"] is None


@pytest.mark.parametrize(
    ("kw", "code"),
    [
        ({"tp": 8, "dp": 1}, "TP_UNSUPPORTED"),
        ({"enable_eplb": True}, "EPLB_UNSUPPORTED"),
        ({"pp": 2, "dp": 4}, "PP_UNSUPPORTED"),
    ],
)
def test_plugin_route_rules_are_reported(kw: dict, code: str) -> None:
    out = P.resolve(snap(device="h200", arch="sm90", software="all", **kw))
    assert out.action == "keep" and out.additional_config is None
    assert any(code in line for line in out.table), out.table


def test_explicit_moe_oracle_variant_through_additional_config() -> None:
    req = {"moe_oracle": {"backend": "deep_gemm_mega_moe:sm90_fp8xfp4"}}
    out = P.resolve(snap(device="h200", arch="sm90", software="all", additional_config=req))
    assert out.action == "set" and "validated" in out.table[0]
    assert {g["variant"] for g in _plan_groups(out).values()} == {"deep_gemm_mega_moe:sm90_fp8xfp4"}
    assert out.additional_config["moe_oracle"]["backend"] == "deep_gemm_mega_moe:sm90_fp8xfp4"  # request kept
    twin = P.resolve(snap(device="h200", arch="sm90", software="all",
                          additional_config={"moe_oracle": {"backend": "emulation:sm90_fp8xfp4"}}))  # fmt: skip
    assert all(g["layer_plan"]["emulate"] for g in _plan_groups(twin).values())
    env = P.resolve(snap(device="h200", arch="sm90", software="all",
                         env={"MOE_ORACLE_VLLM_BACKEND": "deep_gemm_mega_moe:sm90_fp8xfp4"}))  # fmt: skip
    assert env.action == "set"


def test_explicit_moe_oracle_variant_that_cannot_run_is_refused_in_one_line_per_group() -> None:
    req = {"moe_oracle": {"backend": "deep_gemm_mega_moe:sm90_fp8xfp8", "convert": False}}
    out = P.resolve(snap(device="h200", arch="sm90", software="all", additional_config=req, speculative="mtp"))
    assert out.action == "refuse" and out.error
    assert out.error.count("layer group '") == 3 and "QUANT_UNSUPPORTED" in out.error
    for bad in ("--allow-fallback", "--engine"):
        assert bad not in out.error
    tp = P.resolve(snap(device="h200", arch="sm90", software="all", tp=8, dp=1,
                        additional_config={"moe_oracle": {"backend": "deep_gemm_mega_moe:sm90_fp8xfp4"}}))  # fmt: skip
    assert tp.action == "refuse" and "TP_UNSUPPORTED" in (tp.error or "") and "--tensor-parallel-size 1" in tp.error


def test_emulation_requests_judge_kernel_libraries_with_the_all_profile() -> None:
    """A CPU dry check has no SM90 kernel build: the twin needs none, so ``emulation:`` is not refused for it."""
    kernel = {"moe_oracle": {"backend": "deep_gemm_mega_moe:sm90_fp8xfp4"}}
    refused = P.resolve(snap(device="h200", arch="sm90", software="vllm-0.33.0", additional_config=kernel))
    assert refused.action == "refuse" and "KERNEL_MISSING" in (refused.error or "")
    twin = {"moe_oracle": {"backend": "emulation:sm90_fp8xfp4"}}
    out = P.resolve(snap(device="h200", arch="sm90", software="vllm-0.33.0", additional_config=twin))
    assert out.action == "set" and "software vllm-0.33.0, kernel libraries from 'all' (emulation)" in out.table[0]
    assert all(g["layer_plan"]["emulate"] for g in _plan_groups(out).values())
    # every other rule stays: TP is still refused for the twin, and torch (not a kernel library) is still needed
    tp = P.resolve(snap(device="h200", arch="sm90", software="vllm-0.33.0", tp=8, dp=1, additional_config=twin))
    assert tp.action == "refuse" and "TP_UNSUPPORTED" in (tp.error or "")
    bare = P.resolve(snap(device="h200", arch="sm90", software="none", additional_config=twin))
    assert bare.action == "refuse" and "torch is not present" in (bare.error or "")


def test_emulation_software_replaces_only_the_kernel_libraries() -> None:
    from moe_oracle.engines.vllm.shipped import KERNEL_LIBRARIES, emulation_software
    from moe_oracle.releases.profiles import named_profile

    base, every = named_profile("vllm-0.33.0"), named_profile("all")
    out = emulation_software(base)
    assert set(out.libraries) == set(base.libraries) | (set(KERNEL_LIBRARIES) & set(every.libraries))
    for name, lib in out.libraries.items():
        assert lib == (every.libraries[name] if name in KERNEL_LIBRARIES else base.libraries[name])
    assert base.name == "vllm-0.33.0"  # input untouched


@pytest.mark.parametrize(
    ("extra", "moe_backend", "needle"),
    [
        ("notjson", "auto", "not a JSON object"),
        ({"moe_oracle": ["x"]}, "auto", "must be a JSON object"),
        ({"moe_oracle": {"backnd": "x"}}, "auto", "unknown key"),
        ({"moe_oracle": {"backend": 5}}, "auto", "non-empty string"),
        ({"moe_oracle": {"backend": "sm90_fp8xfp4"}}, "auto", "names no variant"),
        ({"moe_oracle": {"backend": "deep_gemm_mega_moe:nope"}}, "auto", "no registered variant"),
        ({"moe_oracle": {"convert": "yes"}}, "auto", "true or false"),
        ({"moe_oracle": {"backend": "deep_gemm_mega_moe:sm90_fp8xfp4"}}, "deep_gemm_mega_moe", "both choose"),
    ],
)
def test_bad_requests_are_one_line_refusals(extra: object, moe_backend: str, needle: str) -> None:
    out = P.resolve(snap(device="h200", arch="sm90", software="all", additional_config=extra, moe_backend=moe_backend))
    assert out.action == "refuse" and needle in (out.error or ""), out.error
    assert "\n" not in (out.error or "")


def test_explicit_native_backend_on_hopper_points_to_the_runtime() -> None:
    out = P.resolve(snap(device="h200", arch="sm90", software="all", moe_backend="deep_gemm_mega_moe"))
    assert out.action == "refuse"
    assert "--additional-config" in (out.error or "") and "moe_oracle" in (out.error or "")


def test_versions_in_the_supported_range_are_acted_on() -> None:
    assert P.resolve(snap(vllm_version="0.33.1")).action == "set"
    other = P.resolve(snap(vllm_version="0.34.0"))
    assert other.action == "skip" and other.level == logging.WARNING and ">=0.33.0,<0.34" in other.table[0]


def test_one_table_per_server() -> None:
    assert P.resolve(snap()).level == logging.INFO
    assert P.resolve(snap(api_process_count=8, api_process_rank=0)).level == logging.DEBUG


def test_cpu_batch_defaults_are_replaced_by_the_named_gpus() -> None:
    from moe_oracle.engines.vllm.snapshot import batch_defaults_for

    tokens, seqs, notes = batch_defaults_for("h200", 8, 2048 * 8, 128 * 8)
    assert (tokens, seqs) == (8192, 1024) and len(notes) == 1  # 128 x 8 = 1024 is also the H200 default
    assert batch_defaults_for("b200", 8, 4096, 300)[:2] == (4096, 300)  # the operator's values stay
    out = P.resolve(snap(device="h200", arch="sm90", notes=notes, device_source="MOE_ORACLE_VLLM_DEVICE"))
    assert "[device from MOE_ORACLE_VLLM_DEVICE]" in out.table[0]
    assert any("vLLM's CPU default" in line for line in out.table)


# --- issue 21: per-group pins, explicit choices never ignored, inputs checked, one table per server ----------

V4_NVFP4 = hf("nvidia--DeepSeek-V4-Flash-NVFP4")


def _plan_pins(model: str, device: str, speculative: str = "none") -> object:
    """``moe_oracle.backend`` of the plan ``moe-oracle plan --engine vllm --dp 8 --ep 8 --speculative S`` prints."""
    from moe_oracle.launch.build import build_plan
    from moe_oracle.launch.examples import DeploymentFlags, PlanRequest
    from moe_oracle.rules import Engine

    flags = DeploymentFlags(device=device, dp=8, ep=8, speculative=speculative)
    plan = build_plan(PlanRequest(model=model, flags=flags, engine=Engine.VLLM, software="all"))
    argv = plan.commands[0].argv
    return json.loads(argv[argv.index("--additional-config") + 1])["moe_oracle"]["backend"]


def test_plan_pins_each_groups_own_variant_and_the_plug_in_accepts_it() -> None:
    # the MTP group differs only when speculative decoding builds it; without it one variant serves every group
    assert _plan_pins("nvidia/DeepSeek-V4-Flash-NVFP4", "b200") == "deep_gemm_mega_moe:sm100_nvfp4"
    pins = _plan_pins("nvidia/DeepSeek-V4-Flash-NVFP4", "b200", "mtp")
    assert isinstance(pins, dict) and pins["mtp"] == "vllm" and pins["moe"].endswith(":sm100_nvfp4")
    out = P.resolve(
        snap(
            speculative="mtp",
            architecture="DeepseekV4ForCausalLM",
            hf_config=V4_NVFP4,
            model="nvidia/DeepSeek-V4-Flash-NVFP4",
            software="all",
            additional_config={"moe_oracle": {"backend": pins}},
        )
    )
    assert out.action == "set", out.error
    groups = _plan_groups(out)
    assert groups["mtp"]["runs"] == "vllm" and groups["mtp"]["layer_plan"] is None
    assert groups["moe"]["variant"] == pins["moe"] and groups["moe"]["runs"] == "moe-oracle"


@pytest.mark.parametrize(
    ("pins", "needle"),
    [
        ({"moe": "deep_gemm_mega_moe:sm100_nvfp4"}, "without a choice for the others"),
        ({"moe": "vllm", "moe_hash": "vllm", "mtp": "vllm", "dense": "vllm"}, "that this launch does not build"),
        ({"moe": "auto", "moe_hash": "vllm", "mtp": "vllm"}, "a layer-group pin is a variant or 'vllm'"),
        ({"moe": "emulation:sm100_nvfp4", "moe_hash": "deep_gemm_mega_moe:sm100_nvfp4", "mtp": "vllm"}, "mixes"),
        (
            {
                "moe": "deep_gemm_mega_moe:sm100_nvfp4",
                "moe_hash": "deep_gemm_mega_moe:sm100_nvfp4",
                "mtp": "deep_gemm_mega_moe:sm100_nvfp4",
            },
            "mtp",
        ),
        ({}, "names no layer group"),
    ],
)
def test_bad_group_pins_are_refused(pins: dict, needle: str) -> None:
    out = P.resolve(
        snap(
            hf_config=V4_NVFP4,
            model="nvidia/DeepSeek-V4-Flash-NVFP4",
            software="all",
            additional_config={"moe_oracle": {"backend": pins}},
        )
    )
    assert out.action == "refuse" and needle in (out.error or ""), out.error
    assert "\n" not in (out.error or "")


def test_environment_backend_is_read_and_checked() -> None:
    env = P.resolve(snap(device="h200", arch="sm90", software="all", env={P.ENV_BACKEND: "garbage"}))
    assert env.action == "refuse" and "MOE_ORACLE_VLLM_BACKEND = 'garbage' names no variant" in (env.error or "")
    pins = json.dumps({"moe": "deep_gemm_mega_moe:sm90_fp8xfp4", "moe_hash": "vllm", "mtp": "vllm"})
    ok = P.resolve(snap(device="h200", arch="sm90", software="all", env={P.ENV_BACKEND: pins}, speculative="mtp"))
    assert ok.action == "set" and _plan_groups(ok)["moe_hash"]["runs"] == "vllm"
    broken = P.resolve(snap(device="h200", arch="sm90", software="all", env={P.ENV_BACKEND: "{nope"}))
    assert broken.action == "refuse" and "is not valid JSON" in (broken.error or "")
    # the config wins over the environment
    cfg = {"moe_oracle": {"backend": "vllm"}}
    kept = P.resolve(
        snap(device="h200", arch="sm90", software="all", env={P.ENV_BACKEND: "garbage"}, additional_config=cfg)
    )
    assert kept.action == "keep"


@pytest.mark.parametrize(
    ("env", "needle"),
    [
        ({"MOE_ORACLE_DOMAIN_SIZE": "abc"}, "MOE_ORACLE_DOMAIN_SIZE='abc' is not a whole number from 1 to 4096"),
        ({"MOE_ORACLE_DOMAIN_SIZE": "0"}, "MOE_ORACLE_DOMAIN_SIZE='0'"),
        ({"MOE_ORACLE_VLLM_PLUGIN": "maybe"}, "MOE_ORACLE_VLLM_PLUGIN='maybe' is neither on nor off"),
        ({"MOE_ORACLE_VLLM_DEVICE": "h300"}, "MOE_ORACLE_VLLM_DEVICE='h300' is not a device"),
    ],
)
def test_environment_is_checked_in_one_line(env: dict, needle: str) -> None:
    out = P.resolve(snap(env=env))
    assert out.action == "refuse" and needle in (out.error or ""), out.error
    assert "\n" not in (out.error or "") and "pydantic" not in (out.error or "")


def test_refusals_do_not_echo_huge_values() -> None:
    huge = "x" * 100_000
    for extra in ({"moe_oracle": {"backend": huge}}, huge, {"moe_oracle": {"plan": huge}}, {"moe_oracle": {huge: 1}}):
        out = P.resolve(snap(additional_config=extra))
        assert out.action == "refuse" and len(out.error or "") < 400, (out.error or "")[:200]
        assert "..." in (out.error or "")
    out = P.resolve(snap(env={P.ENV_DOMAIN: huge}))
    assert out.action == "refuse" and len(out.error or "") < 400


def test_a_plan_passed_in_is_checked() -> None:
    for bad in (
        "garbage",
        {"version": 1, "groups": [{"layers": [3], "layer_plan": {"variant": "x"}}]},
        {"version": 1, "groups": [{"layers": "3"}]},
        {"version": 2, "groups": []},
    ):
        out = P.resolve(
            snap(device="h200", arch="sm90", software="all", additional_config={"moe_oracle": {"plan": bad}})
        )
        assert out.action == "refuse" and "additional_config['moe_oracle']['plan']" in (out.error or ""), out.error
        assert "drop the plan key" in (out.error or "")
    own = P.resolve(snap(device="h200", arch="sm90", software="all"))
    again = P.resolve(snap(device="h200", arch="sm90", software="all", additional_config=own.additional_config))
    assert again.action == "set" and again.additional_config == own.additional_config
    other = P.resolve(
        snap(device="h200", arch="sm90", software="all", tp=1, dp=4, additional_config=own.additional_config)
    )
    assert other.action == "refuse" and "carries decision fingerprint" in (other.error or "")


def test_workers_refuse_a_malformed_plan_in_one_line() -> None:
    from moe_oracle.engines.vllm.shipped import plan_for_layer
    from moe_oracle.errors import BadInputError

    with pytest.raises(BadInputError, match="cannot be read"):
        plan_for_layer({"moe_oracle": {"plan": {"version": 1, "groups": [{"layers": [3], "layer_plan": {}}]}}}, 3)
    assert plan_for_layer({"moe_oracle": {}}, 3) is None


def test_explicit_choice_on_an_architecture_the_layer_cannot_serve_is_refused() -> None:
    qwen = {"architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "hidden_size": 64}
    auto = P.resolve(snap(architecture="Qwen2ForCausalLM", hf_config=qwen, model="q"))
    assert auto.action == "skip" and auto.level == logging.DEBUG
    explicit = P.resolve(
        snap(
            architecture="Qwen2ForCausalLM",
            hf_config=qwen,
            model="q",
            additional_config={"moe_oracle": {"backend": "deep_gemm_mega_moe:sm100_fp8xfp4"}},
        )
    )
    assert explicit.action == "refuse" and "cannot describe" in (explicit.error or "")
    env = P.resolve(
        snap(
            architecture="Qwen2ForCausalLM",
            hf_config=qwen,
            model="q",
            env={P.ENV_BACKEND: "deep_gemm_mega_moe:sm100_fp8xfp4"},
        )
    )
    assert env.action == "refuse"


@pytest.mark.parametrize(
    ("kw", "level"),
    [
        ({}, logging.INFO),
        ({"api_process_count": 8, "api_process_rank": -1}, logging.INFO),  # vllm serve's parent with DP8
        ({"api_process_count": 8, "api_process_rank": 3}, logging.DEBUG),  # one of its API servers
        ({"dp": 16, "dp_local": 8, "nnodes": 2, "dp_rank": 8, "env": {P.ENV_DOMAIN: "72"}}, logging.DEBUG),  # headless
    ],
)
def test_the_table_is_logged_at_info_once_per_server(kw: dict, level: int) -> None:
    assert P.resolve(snap(**kw)).level == level


def test_cpu_batch_defaults_scale_by_tp_times_pp_not_dp() -> None:
    from moe_oracle.engines.vllm.snapshot import batch_defaults_for

    # vllm serve DP8 TP1 PP1 on the CPU platform: 2048 tokens and 128 seqs (world = TP x PP = 1)
    assert batch_defaults_for("h200", 1, 2048, 128)[:2] == (8192, 1024)
    assert batch_defaults_for("b200", 2, 4096, 256)[:2] == (16384, 1024)
    assert batch_defaults_for("h200", 1, 2048 * 8, 128 * 8)[:2] == (2048 * 8, 1024)  # DP-scaled: the operator's


def test_an_uncaught_refusal_prints_one_line_without_a_traceback(capsys: pytest.CaptureFixture[str]) -> None:
    from pydantic import BaseModel, field_validator

    class Config(BaseModel):  # vLLM's VllmConfig is a pydantic dataclass: the hook's error arrives wrapped
        x: int

        @field_validator("x")
        @classmethod
        def hook(cls, v: int) -> int:
            raise P.PluginRefusal("moe_oracle.backend=x cannot run on this deployment [moe-oracle]")

    seen: list[object] = []
    hook = P._one_line_refusals(lambda *a: seen.append(a))
    try:
        Config(x=1)
    except Exception as exc:
        hook(type(exc), exc, exc.__traceback__)
    err = capsys.readouterr().err
    assert err == "error: moe_oracle.backend=x cannot run on this deployment [moe-oracle]\n" and not seen
    other = RuntimeError("not ours")
    hook(RuntimeError, other, None)
    assert seen == [(RuntimeError, other, None)]


def test_expert_substitution_keeps_the_plug_in_out() -> None:
    """vLLM builds SubstitutedRoutedExperts for such checkpoints: the replacement by class name never reaches it."""
    sub = {**V4, "approximate_experts": {"3": [0, 1]}}
    auto = P.resolve(snap(hf_config=sub, device="h200", arch="sm90", software="all"))
    assert auto.action == "keep" and auto.additional_config is None
    assert "SubstitutedRoutedExperts" in auto.table[-1]
    explicit = P.resolve(snap(hf_config=sub, device="h200", arch="sm90", software="all",
                              additional_config={"moe_oracle": {"backend": "emulation:sm90_fp8xfp4"}}))  # fmt: skip
    assert explicit.action == "refuse" and "approximate_experts" in (explicit.error or "")
    nested = {**V4, "compression_config": {"transform_config": {"expert_substitution": {}}}}
    assert P.substituted_experts(nested) == "compression_config.transform_config.expert_substitution"
    assert P.substituted_experts(V4) == ""
