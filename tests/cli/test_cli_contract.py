"""The CLI contract: outputs, exit codes, one-line errors, and a light start-up."""

from __future__ import annotations

import json

import pytest

from tests.cli.runner import cli, imported_modules

HEAVY = ("torch", "numpy", "deep_gemm", "aiter", "mori", "flydsl", "vllm", "sglang", "huggingface_hub", "pynvml")


def test_select_json_contract():
    r = cli("select", "deepseek-ai/DeepSeek-V4-Flash", "--device", "b200", "--dp", "8", "--ep", "8", "--json")
    assert r.code == 0, r.err
    doc = json.loads(r.out)
    assert doc["chosen"] == {"backend": "deep_gemm_mega_moe", "variant": "sm100_fp8xfp4"}
    assert doc["software"]["profile"] == "all" and "default" in doc["software"]["origin"]


def test_select_table_lists_chosen_then_rejected_with_fixes():
    r = cli(
        "select",
        "deepseek-ai/DeepSeek-V4-Flash",
        "--device",
        "h200",
        "--dp",
        "8",
        "--ep",
        "8",
        "--software",
        "vllm-0.33.0",
    )
    assert r.code == 0, r.err
    assert "no fused backend" in r.out
    assert "KERNEL_MISSING" in r.out and "Fix:" in r.out


def test_override_refused_exit_3_one_line():
    r = cli(
        "select",
        "deepseek-ai/DeepSeek-V4-Flash",
        "--device",
        "mi355x",
        "--dp",
        "8",
        "--ep",
        "8",
        "--moe-backend",
        "deep_gemm_mega_moe",
    )
    assert r.code == 3
    assert r.out == ""
    assert r.err.count("\n") == 1 and r.err.startswith("error: --moe-backend deep_gemm_mega_moe cannot run")
    assert "Traceback" not in r.err


def test_replay_roundtrip(tmp_path):
    args = ["select", "zai-org/GLM-5-FP8", "--device", "h200", "--dp", "8", "--ep", "8", "--engine", "sglang", "--json"]
    r = cli(*args)
    assert r.code == 0, r.err
    f = tmp_path / "rec.json"
    f.write_text(r.out)
    again = cli("select", "--replay", str(f), "--json")
    assert again.code == 0, again.err
    assert json.loads(again.out)["fingerprint"] == json.loads(r.out)["fingerprint"]
    assert "identical" in again.err
    doc = json.loads(r.out)
    doc["fingerprint"] = "sha256:0"
    f.write_text(json.dumps(doc))
    assert cli("select", "--replay", str(f)).code == 5


@pytest.mark.parametrize(
    "args, fragment",
    [
        (["select", "deepseek-ai/DeepSeek-V4-Flash", "--device", "a100"], "--device 'a100' is not a known device"),
        (["select", "deepseek-ai/DeepSeek-V4-Flash", "--device", "b200", "--ep", "3"], "--ep 3 must divide tp*dp"),
        (["select", "deepseek-ai/DeepSeek-V4-Flash", "--device", "b200", "--dp", "16"], "exceeds the 8 GPUs"),
        (["select", "deepseek-ai/DeepSeek-V4-Flash", "--device", "b200", "--tp", "0"], "--tp"),
        (["select", "deepseek-ai/DeepSeek-V4-Flash", "--device", "b200", "--software", "vllm-9"], "software profile"),
        (["select", "deepseek-ai/DeepSeek-V4-Flash", "--device", "b200", "--engine", "trtllm"], "--engine"),
        (["select", "deepseek-ai/DeepSeek-V4-Flash", "--device", "b200", "--env", "NOEQUALS"], "KEY=VALUE"),
        (["select", "no-such/model", "--device", "b200"], "no-such/model"),
        (["select", "--replay", "/nonexistent.json"], "decision record /nonexistent.json does not exist"),
        (["select", "deepseek-ai/DeepSeek-V4-Flash", "--device", "b200", "--moe-backend", "marlin"], "marlin"),
        (["frobnicate"], "No such command"),
    ],
)
def test_bad_input_is_one_line_exit_2(args, fragment):
    r = cli(*args)
    assert r.code == 2, (r.code, r.err)
    assert r.err.startswith("error: ") and r.err.count("\n") == 1, r.err
    assert fragment in r.err
    assert "Traceback" not in r.err


def test_device_local_without_gpu_is_a_clear_error():
    import shutil

    if shutil.which("nvidia-smi"):
        pytest.skip("a GPU may be present")
    r = cli("select", "deepseek-ai/DeepSeek-V4-Flash", "--device", "local")
    assert r.code == 2 and "found no GPU" in r.err


@pytest.mark.parametrize(
    "args",
    [
        ["model", "deepseek-ai/DeepSeek-V4-Flash", "--json"],
        ["select", "deepseek-ai/DeepSeek-V4-Flash", "--device", "b200", "--dp", "8", "--ep", "8", "--json"],
        ["select", "zai-org/GLM-5-FP8", "--device", "h200", "--engine", "vllm"],
        ["list", "backends"],
    ],
)
def test_planning_commands_import_no_torch_or_kernel_library(args):
    r = cli(*args, importtime=True)
    assert r.code == 0, r.err[-2000:]
    mods = imported_modules(r.err)
    heavy = sorted(m for m in mods if m.split(".")[0] in HEAVY)
    assert not heavy, heavy


def test_import_moe_oracle_is_light():
    import subprocess
    import sys

    p = subprocess.run([sys.executable, "-X", "importtime", "-c", "import moe_oracle"], capture_output=True, text=True)
    mods = imported_modules(p.stderr)
    assert not [m for m in mods if m.split(".")[0] in (*HEAVY, "pydantic", "rich", "click")]


def test_list_commands():
    for what in ("devices", "profiles", "backends", "presets", "reasons"):
        r = cli("list", what, "--json")
        assert r.code == 0, r.err
        assert json.loads(r.out)
