"""moe-oracle's SGLang plug-in inside the real SGLang 0.5.23 (CPU; not in the default CI run).

Run with ``tests/engines/run_real_sglang_plugin.sh``: a virtual environment layered on the SGLang one that
``run_real_sglang.sh`` makes, with this checkout installed editable, so SGLang finds the plug-in through its
entry point. Each case runs in a fresh interpreter (SGLang loads plug-ins once per process, as in a server):

* discovery: ``load_plugins()`` loads ``moe_oracle`` from the ``sglang.srt.plugins`` group and the only hook
  it registers without a plan is the ``AFTER`` hook on ``ServerArgs.check_server_args``; ``FusedMoE`` stays
  SGLang's own class;
* refusal: ``prepare_server_args`` + ``check_server_args`` (the launching process, before any scheduler starts
  or any weight loads) with an explicit variant that cannot run: ``ValueError``, one line per layer group;
* the decision reaching a scheduler process: the same launch with attention DP writes the plan; a new process
  started with that environment (as SGLang's scheduler processes are) runs ``load_plugins()`` and builds its
  ``FusedMoE`` as moe-oracle's class, with the plan of each decoder layer.

The target GPU is set through SGLang's own platform override and ``MOE_ORACLE_SGLANG_DEVICE`` (no GPU here).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("sglang")

ROOT = Path(__file__).resolve().parents[2]
V4 = str(ROOT / "moe_oracle" / "presets" / "deepseek-ai--DeepSeek-V4-Flash")

_LAUNCH = """
import json, os, sys
from sglang.srt.plugins import load_plugins
load_plugins()
from sglang.srt.runtime_context import override_platform
from sglang.srt.server_args import prepare_server_args
sys.path.insert(0, {root!r})
from tests.engines.test_real_sglang import FACTS
with override_platform(**FACTS["sm90"]):
    sa = prepare_server_args({argv!r})
    try:
        sa.resolve_once()
    except RuntimeError:
        pass
    try:
        sa.check_server_args()
    except ValueError as exc:
        print(json.dumps({{"refused": str(exc)}}))
        raise SystemExit(0)
print(json.dumps({{"plan": os.environ.get("MOE_ORACLE_SGLANG_PLAN")}}))
"""

_SCHEDULER = """
import json
from sglang.srt.plugins import load_plugins
from sglang.srt.plugins.hook_registry import HookRegistry
load_plugins()
import sglang.srt.layers.moe.fused_moe_triton.layer as L
import sglang.srt.layers.moe.ep_moe.layer as EP
from moe_oracle.engines.sglang.layer import _plan_for
plans = {{i: (p.variant if p else None) for i, p in ((i, _plan_for(i)) for i in {layers!r})}}
hooks = {{t: [[h[0].value, h[2].plugin_name if h[2] else None] for h in hs] for t, hs in HookRegistry._hooks.items()}}
print(json.dumps({{
    "hooks": hooks,
    "fused_moe": [L.FusedMoE.__module__, L.FusedMoE.__qualname__],
    "rebound": EP.FusedMoE is L.FusedMoE,
    "own_base": [c.__module__ for c in L.FusedMoE.__mro__[1:2]],
    "plans": plans,
}}))
"""


def _run(code: str, env: dict[str, str]) -> dict:
    full = {**os.environ, "SGLANG_PLUGINS": "moe_oracle", "MOE_ORACLE_SGLANG_DEVICE": "h200", **env}
    done = subprocess.run([sys.executable, "-c", code], env=full, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def _launch(argv: list[str], env: dict[str, str]) -> dict:
    return _run(_LAUNCH.format(root=str(ROOT), argv=["--model-path", V4, "--device", "cuda", *argv]), env)


def test_discovered_through_its_entry_point_and_sglangs_class_kept_without_a_plan():
    out = _run(_SCHEDULER.format(layers=[10]), {"MOE_ORACLE_SGLANG_PLAN": ""})
    assert out["hooks"] == {"sglang.srt.server_args.ServerArgs.check_server_args": [["after", "moe_oracle"]]}
    assert out["fused_moe"] == ["sglang.srt.layers.moe.fused_moe_triton.layer", "FusedMoE"]
    assert out["plans"] == {"10": None}


def test_an_explicit_choice_that_cannot_run_is_refused_before_weights_load():
    out = _launch(["--tp-size", "8", "--ep-size", "8"], {"MOE_ORACLE_SGLANG_BACKEND": "emulation:sm90_fp8xfp4"})
    lines = out["refused"].splitlines()
    assert lines[0].startswith("moe-oracle: MOE_ORACLE_SGLANG_BACKEND=emulation:sm90_fp8xfp4 cannot run")
    assert [line.split("'")[1] for line in lines[1:]] == ["moe", "moe_hash"]
    assert all("[TP_UNSUPPORTED]" in line and "Fix:" in line for line in lines[1:])


def test_the_decision_reaches_a_scheduler_process():
    argv = ["--tp-size", "8", "--attn-dp-size", "8", "--ep-size", "8", "--chunked-prefill-size", "16384"]
    launched = _launch(argv, {"MOE_ORACLE_SGLANG_BACKEND": "emulation:sm90_fp8xfp4"})
    plan = launched["plan"]
    assert plan and json.loads(plan)["fingerprint"].startswith("sha256:")
    out = _run(_SCHEDULER.format(layers=[0, 10, 42]), {"MOE_ORACLE_SGLANG_PLAN": plan})
    assert out["fused_moe"] == ["moe_oracle.engines.sglang.layer", "MoEOracleFusedMoE"]
    assert out["rebound"] and out["own_base"] == ["sglang.srt.layers.moe.fused_moe_triton.layer"]
    assert out["hooks"]["sglang.srt.layers.moe.fused_moe_triton.layer.FusedMoE"] == [["replace", "moe_oracle"]]
    assert out["plans"] == {k: "deep_gemm_mega_moe:sm90_fp8xfp4" for k in ("0", "10", "42")}


def test_sglang_pin_leaves_every_layer_to_sglang():
    argv = ["--tp-size", "8", "--attn-dp-size", "8", "--ep-size", "8"]
    assert _launch(argv, {"MOE_ORACLE_SGLANG_BACKEND": "sglang"}) == {"plan": None}


PLAN_FLAGS = ("--device", "h200", "--dp", "8", "--ep", "8", "--json")
_QUESTION = """
import json, os, sys
from sglang.srt.plugins import load_plugins
load_plugins()
from sglang.srt.runtime_context import override_platform
from sglang.srt.server_args import prepare_server_args
sys.path.insert(0, {root!r})
from tests.engines.test_real_sglang import FACTS
from moe_oracle.decide.record import decision_to_json
from moe_oracle.engines.sglang.plugin import args_from_server_args, launch_decision
from moe_oracle.engines.sglang.shipped import read_request
with override_platform(**FACTS["sm90"]):
    sa = prepare_server_args({argv!r})
    sa.resolve_once()
    sa.check_server_args()
    args = args_from_server_args(sa, os.environ)
print(json.dumps({{"per_rank": args.prefill_tokens_per_rank, "raw": sa.chunked_prefill_size,
                  "record": decision_to_json(launch_decision(args, read_request(os.environ)))}}))
"""


def test_the_hook_asks_the_plans_question_for_the_v4_pro_dp8_plan():
    """The launch ``moe-oracle plan`` prints for DeepSeek-V4-Pro on 8 x H200 (DP8+EP8), checked by real SGLang:
    the hook reads each rank's chunk as SGLang resolved it (1024 = 8192 // 8, divided once), so its decision's
    fingerprint is the plan's once the inputs the hook does not read from SGLang (the model's source: a local
    directory here, the hub id in the plan; the software: installed here, the release profile in the plan) are the
    plan's. The advisories are not copied: the hook decides with the bundled ones, as the plan does."""
    from moe_oracle.decide.record import fingerprint

    shown = subprocess.run(
        [sys.executable, "-m", "moe_oracle", "plan", "deepseek-ai/DeepSeek-V4-Pro", "--engine", "sglang", *PLAN_FLAGS],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert shown.returncode == 0, shown.stderr[-2000:]
    plan = json.loads(shown.stdout)
    argv = plan["argv"][plan["argv"].index("--model-path") + 2 :]
    assert argv[:8] == ["--tp-size", "8", "--attn-dp-size", "8", "--ep-size", "8", "--chunked-prefill-size", "8192"]
    v4_pro = str(ROOT / "moe_oracle" / "presets" / "deepseek-ai--DeepSeek-V4-Pro")
    code = _QUESTION.format(root=str(ROOT), argv=["--model-path", v4_pro, "--device", "cuda", *argv])
    out = _run(code, {"MOE_ORACLE_SGLANG_BACKEND": "auto"})
    assert (out["raw"], out["per_rank"]) == (8192, 1024)
    theirs, ours = plan["decision"]["inputs"], out["record"]["inputs"]
    assert theirs["deployment"] == ours["deployment"] and theirs["workload"] == ours["workload"]
    assert theirs["deployment"]["parallel"]["max_num_batched_tokens"] == 1024
    assert ours["advisories"] == theirs["advisories"]
    for key in ("model", "software"):
        ours[key] = theirs[key]
    assert ours == theirs
    assert fingerprint(ours, out["record"]["oracle_version"]) == plan["fingerprint"]
