"""Closing the loop with the real vLLM 0.33.0 (skipped where vLLM is not installed; run_real_vllm.sh).

For every generated plan of a sweep (the bundled presets and the real configs of every family moe-oracle
reads, on H200 and B200, DP8+EP8 and DP8+EP8 with MTP speculative decoding, and TP8 for the presets),
each command goes through vLLM's own ``vllm serve`` parser and ``create_engine_config`` with the plug-in
loaded through its entry point (so its config hook runs), and the path vLLM will take is compared with
the path the plan names, layer group by layer group:

* a native ``--moe-backend`` stays set and validated;
* a group the plan pins to a moe-oracle variant gets the same variant in the shipped plan, and the
  plug-in's layer decision (``plan_for_layer``, what each ``RoutedExperts`` reads at construction) gives
  that variant for every layer of the group; a group pinned to ``vllm`` (or left to vLLM) gets none;
* a plan without a fused backend leaves vLLM's ``auto`` and ships no plan.

The pins run as ``emulation:<variant>`` (the dry-check spelling: the numerics twin needs no kernel library,
so a CPU machine judges the same kernel builds the plan assumed, ``--software all``); the GPU is named with
``MOE_ORACLE_VLLM_DEVICE``. MI355X plans are left out: the hook judges the installed AITER, absent here.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

vllm = pytest.importorskip("vllm")

from moe_oracle.engines.vllm import plugin as P  # noqa: E402
from moe_oracle.engines.vllm.shipped import KEY, plan_for_layer, planned_groups  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
PRESETS = ROOT / "moe_oracle" / "presets"
FIXTURES = ROOT / "tests" / "fixtures" / "models"
MODELS = sorted(
    [str(d) for d in PRESETS.iterdir() if (d / "config.json").is_file()]
    + [str(d) for d in FIXTURES.iterdir() if (d / "config.json").is_file()]
)
LAYOUTS = {"dp8-ep8": {"dp": 8, "ep": 8}, "tp8": {"tp": 8}, "dp8-ep8-mtp": {"dp": 8, "ep": 8, "speculative": "mtp"}}
DEVICES = ("h200", "b200")


@pytest.fixture(autouse=True)
def cpu_platform(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    import torch

    if torch.cuda.is_available():
        pytest.skip("a dry check for a named GPU: needs a machine without a GPU")
    monkeypatch.setenv("VLLM_TARGET_DEVICE", "cpu")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    for k in (P.ENV_SWITCH, P.ENV_BACKEND, P.ENV_DOMAIN):
        monkeypatch.delenv(k, raising=False)
    yield


def _plan(model: str, device: str, layout: dict[str, Any]) -> Any:
    from moe_oracle.errors import BadInputError
    from moe_oracle.inputs import DeploymentFlags
    from moe_oracle.launch.build import PlanRequest, build_plan
    from moe_oracle.rules import Engine

    try:
        return build_plan(
            PlanRequest(model=model, flags=DeploymentFlags(device=device, **layout), engine=Engine.VLLM, software="all")
        )
    except BadInputError as exc:  # a model moe-oracle refuses, or a layout it refuses: nothing to compare
        pytest.skip(f"moe-oracle plans nothing here: {exc.one_line()[:160]}")


def _emulated(pins: Any) -> Any:
    if isinstance(pins, dict):
        return {g: v if v == "vllm" else f"emulation:{v.split(':', 1)[1]}" for g, v in pins.items()}
    return pins if pins in ("auto", "vllm") else f"emulation:{pins.split(':', 1)[1]}"


#: TP8 (no expert parallel: vLLM's own MoE everywhere) for the presets only, to keep the harness short
CASES = [
    pytest.param(m, d, lay, id=f"{Path(m).name}-{d}-{lay}")
    for m in MODELS
    for d in DEVICES
    for lay in LAYOUTS
    if lay != "tp8" or m.startswith(str(PRESETS))
]


@pytest.mark.parametrize(("model", "device", "layout"), CASES)
def test_the_path_vllm_takes_is_the_path_the_plan_names(
    model: str, device: str, layout: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from vllm.engine.arg_utils import EngineArgs
    from vllm.entrypoints.common.cli_args import make_arg_parser
    from vllm.utils.argparse_utils import FlexibleArgumentParser

    plan = _plan(model, device, LAYOUTS[layout])
    argv = list(plan.commands[0].argv)
    assert argv[:2] == ["vllm", "serve"]
    argv[2] = model  # the plan names the Hub id; vLLM reads the same config.json from its directory here
    args = make_arg_parser(FlexibleArgumentParser()).parse_args(argv[2:])  # vLLM's own parser
    args.model = args.model_tag  # what `vllm serve`'s cmd does with the positional (entrypoints/cli/serve.py)
    pins = (args.additional_config or {}).get(KEY, {}).get("backend")
    if pins is not None:
        args.additional_config[KEY]["backend"] = _emulated(pins)
    monkeypatch.setenv(P.ENV_DEVICE, device)
    engine_args = EngineArgs.from_cli_args(args)
    engine_args.load_format, engine_args.skip_tokenizer_init = "dummy", True
    try:
        cfg = engine_args.create_engine_config()  # the plug-in's config hook runs here
    except P.PluginRefusal as exc:
        pytest.fail(f"the plug-in refuses the plan's own command: {exc}")
    except Exception as exc:
        if P.refusal_in(exc) is not None:
            pytest.fail(f"the plug-in refuses the plan's own command: {P.refusal_in(exc)}")
        if "pydantic" in type(exc).__module__ or isinstance(exc, (ValueError, OSError)):
            pytest.skip(f"vLLM 0.33 cannot build this config on a CPU: {type(exc).__name__}: {str(exc)[:160]}")
        raise
    shipped = {g["name"]: g for g in planned_groups(cfg.additional_config)}
    if "--moe-backend" in argv:  # vLLM's own code path, validated by the hook and kept
        assert cfg.kernel_config.moe_backend == args.moe_backend and not shipped
        return
    assert cfg.kernel_config.moe_backend == "auto"
    if pins is None:  # no fused backend: vLLM's own MoE everywhere
        assert not any(g.get("layer_plan") for g in shipped.values()), shipped
        return
    groups = {g["name"]: list(g["layers"]) for g in plan.decision["layer_groups"]}
    expected = pins if isinstance(pins, dict) else dict.fromkeys(groups, pins)
    assert set(shipped) == set(expected) == set(groups)
    for name, layers in groups.items():
        want, got = expected[name], shipped[name]
        if want == "vllm":
            assert got["runs"] == "vllm" and got["layer_plan"] is None
            assert all(plan_for_layer(cfg.additional_config, i) is None for i in layers)
            continue
        assert got["runs"] == "moe-oracle" and got["variant"].split("+")[0] == want, (name, got["variant"], want)
        assert got["layers"] == layers
        for i in layers:  # what every RoutedExperts of the group reads at construction
            layer_plan = plan_for_layer(cfg.additional_config, i)
            assert layer_plan is not None and layer_plan.variant == want and layer_plan.emulate
            assert layer_plan.group.name == name


def test_the_sweep_covers_the_families() -> None:
    archs = {json.loads((Path(m) / "config.json").read_text()).get("architectures", ["?"])[0] for m in MODELS}
    assert {"DeepseekV4ForCausalLM", "Qwen3MoeForCausalLM", "MiniMaxM2ForCausalLM", "DeepseekV3ForCausalLM"} <= archs
    assert os.environ.get(P.ENV_DEVICE) is None
