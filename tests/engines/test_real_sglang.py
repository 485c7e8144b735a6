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

from moe_oracle.errors import OracleError  # noqa: E402
from moe_oracle.inputs import DeploymentFlags  # noqa: E402
from moe_oracle.plan.build import PlanRequest, build_plan  # noqa: E402
from moe_oracle.plan.examples import EXAMPLES  # noqa: E402
from moe_oracle.plan.model import LaunchPlan  # noqa: E402
from moe_oracle.rules import Engine  # noqa: E402

PRESETS = Path(__file__).resolve().parents[2] / "moe_oracle" / "presets"
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
        a = _preset(a) if a == plan.model else a
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


def _check_sizes(plan: LaunchPlan) -> None:
    """Derived DeepGEMM sizes against sgl-deep-gemm 0.2.3.post2's own ``_C`` host functions."""
    if plan.backend != "deep_gemm_mega_moe":
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
                _megamoe_hooks(server_args)
            view = resolving_view(server_args)
            per_rank = _derived(plan, "sglang_prefill_tokens_per_rank")
            if per_rank and getattr(server_args, "_resolution_finished", False):
                assert view.chunked_prefill_size == per_rank[0].value
            if plan.backend is not None:
                assert view.moe_a2a_backend == "megamoe"
                _check_megamoe(plan, server_args)
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
    COUNTS["commands resolved (whole start-up pipeline)"] += 1
    return True


def _megamoe_hooks(server_args: object) -> None:
    from sglang.srt.arg_groups import mega_moe_hook as H

    H.handle_mega_moe(server_args)
    H.validate_mega_moe_token_budget_for_model(server_args)
    COUNTS["megamoe start-up hooks run alone"] += 1


def test_zz_counts() -> None:
    """Prints the counts (run with -s, or read them in the script's output)."""
    assert COUNTS["plans"] > 0
    with open(os.environ.get("MOE_ORACLE_SGLANG_COUNTS", os.devnull), "w", encoding="utf-8") as fh:
        for key, value in sorted(COUNTS.items()):
            line = f"{key}: {value}"
            print(line)
            fh.write(line + "\n")
