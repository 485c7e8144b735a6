"""Every SGLang plan against the real SGLang 0.5.23 and its pinned sgl-deep-gemm 0.2.3.post2.

Skipped where ``sglang`` is not importable; not part of the default CI run. Run with
``tests/engines/run_real_sglang.sh`` (a separate virtual environment with sglang==0.5.23, about
11 GB). For each plan (the generated examples of ``docs/plans`` and a sweep of models x devices x
layouts x token budgets), every command is fed to SGLang's own parser (``prepare_server_args``)
and start-up resolution (``ServerArgs.resolve_once``: every hook, the megamoe ones included), with
the target GPU set through SGLang's own platform override (``runtime_context.override_platform``)
and the plan's environment set; the megamoe validators are then called directly
(``check_mega_moe_shapes``, ``validate_mega_moe_token_budget``, the FlyDSL capacity checks), and every
derived size is compared with the pinned library's own ``_C`` functions where they run on a CPU
(the token alignment and the SM90 buffer size do; the SM100 size needs a device). Nothing loads
weights or starts a server.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

sglang = pytest.importorskip("sglang")

from moe_oracle.decide.question import ConversionOptions  # noqa: E402
from moe_oracle.errors import OracleError  # noqa: E402
from moe_oracle.inputs import DeploymentFlags  # noqa: E402
from moe_oracle.launch.build import PlanRequest, build_plan  # noqa: E402
from moe_oracle.launch.examples import EXAMPLES  # noqa: E402
from moe_oracle.launch.model import LaunchPlan  # noqa: E402
from moe_oracle.releases import sglang as sglang_release  # noqa: E402
from moe_oracle.rules import Engine  # noqa: E402
from tests.model.model_test_helpers import QWEN15_MOE_A2_7B  # noqa: E402

PRESETS = Path(__file__).resolve().parents[2] / "moe_oracle" / "presets"
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "models"
#: Real configs of the families read beyond the presets (tests/fixtures/models, PROVENANCE.md there): model classes
#: with and without a mega forward in SGLang 0.5.23 (releases/sglang_0_5_23/model_classes.py SGLANG).
FAMILY_FIXTURES = (
    "reconstructed--GLM-4.5-Air",
    "trimmed--GLM-4.7-Flash",
    "reconstructed--GLM-4.7-NVFP4",
    "zai-org--GLM-5.2",
    "nvidia--GLM-5-NVFP4",
    "moonshotai--Kimi-K2-Instruct",
    "Qwen--Qwen3-30B-A3B-FP8",
    "Qwen--Qwen3-235B-A22B-FP8",
    "nvidia--Qwen3-235B-A22B-NVFP4",
    "Qwen--Qwen3-Next-80B-A3B-Thinking",
    "mistralai--Mixtral-8x7B-v0.1",
    "MiniMaxAI--MiniMax-M2.5",
    "Qwen--Qwen3-30B-A3B",
    "Qwen--Qwen3-VL-30B-A3B-Instruct",
    "Qwen--Qwen3.5-397B-A17B",
    "nvidia--Qwen3.5-397B-A17B-NVFP4",
    # MiniMaxAI--MiniMax-M3 is left out: its config (model_type minimax_m3) is not one transformers 5.19 or SGLang
    # 0.5.23 loads (SGLang registers MiniMaxM3SparseForCausalLM)
    "moonshotai--Kimi-K3",
    "XiaomiMiMo--MiMo-V2-Flash",
    "poolside--Laguna-XS.2-FP8",
    # issue 29 D3: NVFP4 on SGLang's own sgl-deep-gemm (sm100_nvfp4 on B200)
    "nvidia--DeepSeek-V3.1-NVFP4",
)
#: The Qwen MoE blocks SGLang 0.5.23 wires to DeepGEMM megamoe with no fallback (MEGA_MOE_NO_FALLBACK_ARCHS)
QWEN_ARCHITECTURES = (
    "Qwen2MoeForCausalLM",
    "Qwen3MoeForCausalLM",
    "Qwen3NextForCausalLM",
    "Qwen3_5MoeForConditionalGeneration",
    "Qwen3VLMoeForConditionalGeneration",
)
_FP8_BLOCK = {"quant_method": "fp8", "weight_block_size": [128, 128], "activation_scheme": "dynamic", "fmt": "e4m3"}


def _synthetic_fp8() -> tuple[str, ...]:
    """SYNTHETIC checkpoints for SM90 megamoe (FP8 block-128 experts) of the Qwen blocks whose fixtures are BF16:
    the real config (or Qwen1.5-MoE's values) plus ``quantization_config`` fp8 / [128, 128]. Only the plan, SGLang's
    parser and its megamoe validators see them; the format of such a checkpoint is not claimed to exist."""
    import json
    import tempfile

    root = Path(tempfile.mkdtemp(prefix="moe-oracle-qwen-fp8-"))
    out = []
    # Qwen1.5-MoE's own width 1408 breaks sgl-deep-gemm 0.2.3.post2's SM90 buffer rows (I % 256): moe-oracle refuses
    # megamoe for it; the same block at width 1536 (a SYNTHETIC width) is the Qwen2-MoE plan SGLang must accept
    sources = {
        "Qwen--Qwen3-Next-80B-A3B-Thinking": None,
        "Qwen--Qwen3.5-397B-A17B": None,
        "Qwen--Qwen3-VL-30B-A3B-Instruct": None,
        "Qwen1.5-MoE-A2.7B": QWEN15_MOE_A2_7B,
        "Qwen2-MoE-width-1536": {**QWEN15_MOE_A2_7B, "moe_intermediate_size": 1536},
    }
    for name, values in sources.items():
        config = dict(values) if values else json.loads((FIXTURES / name / "config.json").read_text())
        config["quantization_config"] = _FP8_BLOCK
        folder = root / f"synthetic-fp8--{name}"
        folder.mkdir()
        (folder / "config.json").write_text(json.dumps(config))
        out.append(str(folder))
    return tuple(out)


MODELS = (
    "deepseek-ai/DeepSeek-V4-Flash",
    "deepseek-ai/DeepSeek-V4-Pro",
    "nvidia/DeepSeek-V4-Flash-NVFP4",
    "zai-org/GLM-5-FP8",
    "zai-org/GLM-5",
    "nvidia/GLM-5.1-NVFP4",
)
DEVICES = ("h200", "b200", "mi355x")
#: (label, flags): attention DP, pure TP, a mix, and two nodes (replicas or one two-node server)
LAYOUTS = (
    ("dp8-ep8", {"dp": 8, "ep": 8}),
    ("tp8-ep8", {"tp": 8, "ep": 8}),
    ("tp2-dp4-ep8", {"tp": 2, "dp": 4, "ep": 8}),
    ("2n-dp16-ep16", {"nodes": 2, "dp": 16, "ep": 16}),
)
BUDGETS = (2048, 8192, 16384)
#: What each moe-oracle arch is, for SGLang's platform override.
FACTS = {
    "sm90": {
        "is_cuda": True,
        "is_hip": False,
        "is_sm90": True,
        "is_sm100": False,
        "is_sm100_or_sm110": False,
        "is_blackwell": False,
        "is_sm120": False,
        "device_sm": 90,
        "device_capability": (9, 0),
    },
    "sm100": {
        "is_cuda": True,
        "is_hip": False,
        "is_sm90": False,
        "is_sm100": True,
        "is_sm100_or_sm110": True,
        "is_blackwell": True,
        "is_sm120": False,
        "device_sm": 100,
        "device_capability": (10, 0),
    },
    "gfx950": {
        "is_cuda": False,
        "is_hip": True,
        "is_sm90": False,
        "is_sm100": False,
        "is_sm100_or_sm110": False,
        "is_blackwell": False,
        "is_sm120": False,
        "device_sm": 95,
        "device_capability": (9, 5),
    },
}
COUNTS: Counter[str] = Counter()


def _preset(model: str) -> str:
    return str(PRESETS / model.replace("/", "--"))


def _plans() -> Iterator[tuple[str, PlanRequest]]:
    for ex in EXAMPLES:
        for software in (None, "all"):
            yield f"example:{ex.slug}:{software or 'release'}", ex.request(Engine.SGLANG, software)
    for model in MODELS:
        for device in DEVICES:
            for label, flags in LAYOUTS:
                for budget in BUDGETS:
                    dflags = DeploymentFlags(device=device, max_num_batched_tokens=budget, **flags)  # type: ignore[arg-type]
                    yield f"sweep:{model}:{device}:{label}:{budget}", PlanRequest(model, dflags, Engine.SGLANG)
    for fixture in FAMILY_FIXTURES:
        for device in DEVICES:
            for label, flags in LAYOUTS[:2]:
                dflags = DeploymentFlags(device=device, **flags)  # type: ignore[arg-type]
                yield f"family:{fixture}:{device}:{label}", PlanRequest(str(FIXTURES / fixture), dflags, Engine.SGLANG)
    # 60 experts (Qwen1.5-MoE) do not divide over EP8 (EXPERTS_NOT_DIVISIBLE): a 4-GPU node for that one
    qwen_layouts = (*LAYOUTS[:2], ("4gpu-dp4-ep4", {"gpus_per_node": 4, "dp": 4, "ep": 4}))
    for folder in _synthetic_fp8():
        for label, flags in qwen_layouts:
            dflags = DeploymentFlags(device="h200", **flags)  # type: ignore[arg-type]
            yield f"qwen-fp8:{Path(folder).name}:h200:{label}", PlanRequest(folder, dflags, Engine.SGLANG)
    # the flag-built groups and the opt-in conversion: MTP built with speculative decoding, online NVFP4
    for model in ("nvidia/DeepSeek-V4-Flash-NVFP4", "nvidia/GLM-5.1-NVFP4", "zai-org/GLM-5-FP8"):
        for device in ("h200", "b200"):
            for spec in ("none", "mtp"):
                dflags = DeploymentFlags(device=device, dp=8, ep=8, speculative=spec)
                yield f"speculative:{model}:{device}:{spec}", PlanRequest(model, dflags, Engine.SGLANG)
    lossy = ConversionOptions(allow_lossy=True)
    for model in ("zai-org/GLM-5-FP8", str(FIXTURES / "moonshotai--Kimi-K2-Instruct")):
        for device in ("h200", "b200"):
            dflags = DeploymentFlags(device=device, dp=8, ep=8)
            yield f"lossy:{model}:{device}", PlanRequest(model, dflags, Engine.SGLANG, conversion=lossy)


PLANS = list(_plans())


@contextmanager
def _env(values: dict[str, str]) -> Iterator[None]:
    saved = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _argv(plan: LaunchPlan, argv: tuple[str, ...]) -> list[str]:
    assert argv[:3] == ("python3", "-m", "sglang.launch_server")
    out = []
    for a in argv[3:]:
        a = _preset(a) if a == plan.model and Path(_preset(a)).is_dir() else a
        for name in plan.placeholders:
            a = a.replace("${" + name + "}", "10.0.0.1")
        out.append(a)
    return [*out, "--device", "cuda"]  # no GPU here: the platform override says which one


def _derived(plan: LaunchPlan, key: str) -> list:
    return [d for d in plan.derived if d.key == key]


def _check_megamoe(plan: LaunchPlan, server_args: object) -> None:
    from sglang.srt.arg_groups import mega_moe_hook as H
    from sglang.srt.layers.moe.mega_moe import check_mega_moe_shapes

    if plan.backend == "deep_gemm_mega_moe":
        for d in _derived(plan, "deepgemm_symm_buffer_bytes"):
            mma = d.inputs.get("mma_type", "fp8xfp4")
            check_mega_moe_shapes(d.inputs["hidden"], d.inputs["intermediate_hidden"], mma)
            COUNTS["check_mega_moe_shapes passed"] += 1
        H.validate_mega_moe_token_budget(server_args, plan.architecture)  # also where the pipeline skips it
        COUNTS["validate_mega_moe_token_budget passed"] += 1
    elif plan.backend == "aiter_mega_moe":
        from sglang.srt.layers.moe import mega_moe_flydsl as FL

        H.validate_flydsl_decode_capacity(server_args)
        assert FL._mtpr() == int(dict(plan.commands[0].env)["SGLANG_AMD_FLYDSL_MEGA_MOE_MTPR"])
        assert FL._capacities()
        COUNTS["flydsl capacity checks passed"] += 1


#: Kimi-K3's block calls the kernel through its own _forward_mega_experts (models/kimi_k3.py KimiK3MoE)
_MEGA_CALL = ("forward_mega_moe", "run_mega_routed_experts", "_forward_mega_moe", "_forward_mega_experts")


def _check_paths(plan: LaunchPlan, view: object) -> None:
    """The path SGLang takes is the path the plan names, layer group by layer group.

    The model class: SGLang's registry resolves the architecture, and the MoE block the per-class table names
    (the release's model_classes.py) is SGLang's own class, whose source calls the mega path exactly when the plan
    names megamoe. The launch: groups the plan marks unbuilt have no draft model (no --speculative-algorithm), groups
    it decides are built; the quantization and runner the plan sets are what SGLang resolved."""
    import importlib
    import inspect

    from sglang.srt.models.registry import ModelRegistry

    a2a = getattr(view, "moe_a2a_backend", None)
    argv = plan.commands[0].argv
    engine_route = "--moe-a2a-backend" in argv  # SGLang's own megamoe (else moe-oracle's plug-in, SGLANG_PLUGINS)
    if plan.backend == "flashinfer_megamoe":
        # FlashInfer's MegaMoE: SGLang's moe_hook validated the model, quantization and attention DP and resolved
        # the runner (arg_groups/moe_hook.py:237-339); its MoE method calls flashinfer.moe_ep, not mega_moe.py
        assert engine_route and a2a == "flashinfer_megamoe", (plan.backend, argv)
        COUNTS["plans naming flashinfer_megamoe that SGLang's moe_hook accepts"] += 1
        return
    megamoe = a2a == "megamoe"
    assert megamoe == engine_route, (plan.backend, argv)
    row = sglang_release.model_classes.TABLE.find(plan.architecture)
    if row is not None:
        cls, _ = ModelRegistry.resolve_model_cls([plan.architecture])
        module = importlib.import_module("sglang.srt." + row.source.split(":")[0].removesuffix(".py").replace("/", "."))
        block = getattr(module, row.block)
        calls = any(name in inspect.getsource(block) for name in _MEGA_CALL)
        assert calls == row.mega, (plan.architecture, row.block)
        assert any(row.block in inspect.getsource(importlib.import_module(k.__module__)) for k in cls.__mro__[:4]), cls
        COUNTS[f"model class checked in SGLang's source ({'mega' if calls else 'no mega'} forward)"] += 1
    if engine_route:
        assert row is not None and row.mega, f"{plan.architecture}: megamoe named for a block without a mega forward"
        COUNTS["plans naming megamoe whose block calls it"] += 1
    elif plan.backend is not None:
        assert "SGLANG_PLUGINS" in dict(plan.commands[0].env), plan.backend
        COUNTS["plans on moe-oracle's SGLang plug-in route (no --moe-a2a-backend)"] += 1
    spec = getattr(view, "speculative_algorithm", None)
    for g in plan.groups:
        if g.get("built") is False:
            assert spec is None, g
            COUNTS["layer groups the launch does not build (no draft model)"] += 1
        elif g["name"].startswith("mtp"):
            assert spec == "EAGLE", g
            COUNTS["MTP layer groups built with --speculative-algorithm EAGLE"] += 1
        if g.get("chosen") and engine_route:
            assert g["chosen"].startswith(plan.backend + ":"), g
            COUNTS["layer groups on the plan's megamoe path"] += 1
    if "--quantization" in argv:
        assert getattr(view, "quantization", None) == argv[argv.index("--quantization") + 1]
        COUNTS["online NVFP4 (--quantization modelopt_fp4) kept by SGLang"] += 1
    if "--moe-runner-backend" in argv:
        runner = argv[argv.index("--moe-runner-backend") + 1]
        assert getattr(view, "moe_runner_backend", None) == runner
        if runner == "marlin":
            _check_nvfp4_runner(plan)
        else:
            _check_runner_pin(plan, argv, runner)


def _check_runner_pin(plan: LaunchPlan, argv: list[str], runner: str) -> None:
    """A plug-in plan's ``--moe-runner-backend triton`` (issue #29 D1): SGLang keeps it (checked above), and without it
    SGLang's own SM100 resolution picks the runner moe-oracle's declaration says (``engines/sglang/runner.py``):
    the pin is needed exactly where the plan sets it."""
    from sglang.srt.arg_groups.overrides import resolving_view
    from sglang.srt.server_args import prepare_server_args

    from moe_oracle.engines.sglang.runner import PINNED_RUNNER, sm100_override

    assert runner == PINNED_RUNNER and "SGLANG_PLUGINS" in dict(plan.commands[0].env), argv
    parsed = _argv(plan, tuple(argv))  # called under the plan's platform override (test_plan_passes_sglang)
    i = parsed.index("--moe-runner-backend")
    unpinned = prepare_server_args(parsed[:i] + parsed[i + 2 :])
    _resolve(unpinned)
    resolved = resolving_view(unpinned).moe_runner_backend
    override = sm100_override(plan.architecture, tuple(g.group.weight_format for g in plan.decision_obj.groups))
    assert override is not None and resolved == override.runner, (plan.architecture, resolved)
    COUNTS[f"plug-in plans pinned to {runner}: SGLang keeps it, and resolves {resolved} without the pin"] += 1


def _check_nvfp4_runner(plan: LaunchPlan) -> None:
    """SGLang's own NVFP4 MoE method accepts the planned runner on the plan's GPU, and refuses the one its DSv4
    override would pick under auto (modelopt_quant.py:2377-2386)."""
    from sglang.srt.layers.moe.utils import get_flags, resolve_moe_runner_backend
    from sglang.srt.layers.quantization.modelopt_quant import ModelOptFp4Config, ModelOptNvFp4FusedMoEMethod
    from sglang.srt.runtime_context import override_platform

    config = ModelOptFp4Config(is_checkpoint_nvfp4_serialized=True, group_size=16)
    with override_platform(**FACTS[plan.arch]):
        get_flags().moe.runner_backend = resolve_moe_runner_backend("marlin")
        ModelOptNvFp4FusedMoEMethod(config)
        get_flags().moe.runner_backend = resolve_moe_runner_backend("flashinfer_trtllm_routed")
        with pytest.raises(ValueError, match="does not support NVFP4"):
            ModelOptNvFp4FusedMoEMethod(config)
        get_flags().moe.runner_backend = None
    COUNTS["NVFP4 on SM90: SGLang's MoE method accepts marlin, refuses flashinfer_trtllm_routed"] += 1


def _check_sizes(plan: LaunchPlan) -> None:
    """Derived DeepGEMM sizes against sgl-deep-gemm 0.2.3.post2's own ``_C`` host functions."""
    if plan.backend != "deep_gemm_mega_moe":
        return
    if "--moe-a2a-backend" not in plan.commands[0].argv:
        # moe-oracle's plug-in route sizes with the DeepGEMM build its own runtime loads, not SGLang's pinned one
        COUNTS["plug-in route: sizes from moe-oracle's runtime build (not compared with sgl-deep-gemm)"] += 1
        return
    import deep_gemm

    c = deep_gemm._C
    for d in _derived(plan, "deepgemm_num_max_tokens_per_rank"):
        alignment = int(c.get_token_alignment_for_mega_moe())
        assert int(str(d.inputs["token_alignment"]).split()[0]) == alignment and d.value % alignment == 0
        COUNTS["token alignment == _C"] += 1
    for d in _derived(plan, "deepgemm_symm_buffer_bytes"):
        i = d.inputs
        args = (i["num_ranks (EP)"], i["num_experts"], i["num_max_tokens_per_rank"], i["num_topk"])
        args += (i["hidden"], i["intermediate_hidden"])
        if "num_ring_tokens" not in i:  # SM90
            assert int(c.get_symm_buffer_size_for_sm90_mega_moe(*args, True, "swiglu")) == d.value, d.label
            COUNTS["SM90 buffer bytes == _C"] += 1
            continue
        try:
            got = int(
                c.get_symm_buffer_size_for_mega_moe(*args, i["mma_type"], "swiglu", i["num_shared_experts (in-kernel)"])
            )
        except RuntimeError:  # the SM100 host code initializes cuBLASLt: needs a device
            COUNTS["SM100 buffer bytes: _C needs a GPU (not compared)"] += 1
            continue
        assert got == d.value, d.label
        COUNTS["SM100 buffer bytes == _C"] += 1


@pytest.mark.parametrize("name,request_", PLANS, ids=[n for n, _ in PLANS])
def test_plan_passes_sglang(name: str, request_: PlanRequest) -> None:
    from sglang.srt.arg_groups.overrides import resolving_view
    from sglang.srt.runtime_context import override_platform
    from sglang.srt.server_args import prepare_server_args

    try:
        plan = build_plan(request_)
    except OracleError as exc:  # moe-oracle refuses the layout with one clear line: nothing to feed
        COUNTS["refused by moe-oracle (bad input)"] += 1
        assert exc.one_line()
        return
    COUNTS["plans"] += 1
    COUNTS[f"plans with {plan.backend or 'no fused backend'}"] += 1
    for cmd in plan.commands:
        with _env(dict(cmd.env)), override_platform(**FACTS[plan.arch]):
            argv = _argv(plan, cmd.argv)
            server_args = prepare_server_args(argv)
            COUNTS["commands parsed"] += 1
            if not _resolve(server_args):
                # the rest of the pipeline cannot run here: check the megamoe hooks on a fresh record
                server_args = prepare_server_args(argv)
                if plan.backend != "flashinfer_megamoe":
                    _megamoe_hooks(server_args)
            view = resolving_view(server_args)
            per_rank = _derived(plan, "sglang_prefill_tokens_per_rank")
            if per_rank and getattr(server_args, "_resolution_finished", False):
                assert view.chunked_prefill_size == per_rank[0].value
            _check_paths(plan, view)
            if plan.backend is not None:
                _check_megamoe(plan, server_args)
                if plan.backend == "deep_gemm_mega_moe" and plan.architecture in QWEN_ARCHITECTURES:
                    COUNTS[f"Qwen megamoe plans through parser + validators + token budget: {plan.architecture}"] += 1
    _check_sizes(plan)


def _resolve(server_args: object) -> bool:
    """SGLang's whole start-up resolution; False where a hook asks torch.cuda directly (no GPU here)."""
    try:
        server_args.resolve_once()  # type: ignore[attr-defined]
    except RuntimeError as exc:
        # model_hook.py:341 (DSA models such as GLM-5) calls torch.cuda.get_device_capability() itself,
        # bypassing the platform override; on a CPU-only machine torch raises here
        if "NVIDIA driver" not in str(exc) and "CUDA" not in str(exc):
            raise
        COUNTS["resolution stopped at a hook that asks torch.cuda directly (model_hook.py:341)"] += 1
        return False
    except ValueError as exc:
        # moe_hook.py:335-339: after validating the model, quantization, attention DP and runner, the flashinfer_megamoe
        # hook asks is_sm100_supported(), which reads torch.cuda (not the platform override)
        if "requires an SM100-family CUDA device" not in str(exc):
            raise
        COUNTS["flashinfer_megamoe hook passed up to is_sm100_supported (asks torch.cuda directly)"] += 1
        return False
    COUNTS["commands resolved (whole start-up pipeline)"] += 1
    return True


def _megamoe_hooks(server_args: object) -> None:
    from sglang.srt.arg_groups import mega_moe_hook as H

    H.handle_mega_moe(server_args)
    H.validate_mega_moe_token_budget_for_model(server_args)
    COUNTS["megamoe start-up hooks run alone"] += 1


def test_zy_every_qwen_block_has_a_megamoe_plan_sglang_accepts() -> None:
    """Issue 24: plans for every Qwen family pass SGLang's parser, its megamoe validators and its token budget."""
    if COUNTS["plans"] == 0:
        pytest.skip("run with the plan tests (test_plan_passes_sglang)")
    missing = [
        a
        for a in QWEN_ARCHITECTURES
        if not COUNTS[f"Qwen megamoe plans through parser + validators + token budget: {a}"]
    ]
    assert not missing, missing


def test_zz_counts() -> None:
    """Prints the counts (run with -s, or read them in the script's output)."""
    assert COUNTS["plans"] > 0
    with open(os.environ.get("MOE_ORACLE_SGLANG_COUNTS", os.devnull), "w", encoding="utf-8") as fh:
        for key, value in sorted(COUNTS.items()):
            line = f"{key}: {value}"
            print(line)
            fh.write(line + "\n")
