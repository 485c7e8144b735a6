"""Local safetensors experts (DeepSeek V4 and GLM/HF names) and ``moe-oracle accuracy`` end to end."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
import torch

import moe_oracle.numerics as N
from moe_oracle.errors import BadInputError
from moe_oracle.model.types import WeightFormat
from moe_oracle.runtime.checkpoint import load_layer_experts
from moe_oracle.runtime.quantize import dequantize_experts

H, INTER, E = 512, 256, 8


def save_file(tensors, path):
    """Write with the real safetensors package (an optional dependency; CI installs it)."""
    pytest.importorskip("safetensors.torch").save_file(tensors, str(path))


def _write_dsv4(path, layer=3):
    gen = torch.Generator().manual_seed(0)
    tensors = {}
    for e in range(E):
        for name, (n, k) in {"w1": (INTER, H), "w3": (INTER, H), "w2": (H, INTER)}.items():
            v, sf = N.quantize_mxfp4(torch.randn(n, k, generator=gen) / k**0.5, 32)
            tensors[f"layers.{layer}.ffn.experts.{e}.{name}.weight"] = v.view(torch.int8)
            tensors[f"layers.{layer}.ffn.experts.{e}.{name}.scale"] = N.fp32_to_ue8m0_bytes(sf).view(
                torch.float8_e8m0fnu
            )
    tensors[f"layers.{layer}.ffn.gate.weight"] = torch.randn(E, H, generator=gen).bfloat16()
    half = len(tensors) // 2
    items = list(tensors.items())
    save_file(dict(items[:half]), path / "model-00001-of-00002.safetensors")
    save_file(dict(items[half:]), path / "model-00002-of-00002.safetensors")
    return tensors


def _write_glm_fp8(path, layer=5):
    gen = torch.Generator().manual_seed(1)
    tensors = {}
    for e in range(E):
        for name, (n, k) in {"gate_proj": (INTER, H), "up_proj": (INTER, H), "down_proj": (H, INTER)}.items():
            v, sf = N.quantize_fp8_block(torch.randn(n, k, generator=gen) / k**0.5)
            tensors[f"model.layers.{layer}.mlp.experts.{e}.{name}.weight"] = v
            tensors[f"model.layers.{layer}.mlp.experts.{e}.{name}.weight_scale_inv"] = sf
    save_file(tensors, path / "model.safetensors")
    return tensors


def test_load_dsv4_mxfp4_experts(tmp_path):
    tensors = _write_dsv4(tmp_path)
    ex, ids = load_layer_experts(tmp_path, 3)
    assert ids == list(range(E)) and ex.quant.format is WeightFormat.MXFP4
    assert ex.w13.shape == (E, 2 * INTER, H // 2) and ex.w13_scale.shape == (E, 2 * INTER, H // 32)
    assert torch.equal(ex.w13[2, :INTER].view(torch.int8), tensors["layers.3.ffn.experts.2.w1.weight"])
    assert torch.equal(ex.w13[2, INTER:].view(torch.int8), tensors["layers.3.ffn.experts.2.w3.weight"])
    w13, _ = dequantize_experts(ex)
    assert torch.isfinite(w13).all() and w13.abs().sum() > 0
    with pytest.raises(BadInputError, match="no routed-expert tensors for layer 4"):
        load_layer_experts(tmp_path, 4)


def test_load_glm_fp8_block_experts(tmp_path):
    _write_glm_fp8(tmp_path)
    ex, _ = load_layer_experts(tmp_path, 5, [1, 4])
    assert ex.quant.format is WeightFormat.FP8_BLOCK and tuple(ex.quant.block) == (128, 128)
    assert ex.w13.shape == (2, 2 * INTER, H) and ex.w13_scale.dtype == torch.float32
    assert ex.w13_scale.shape == (2, 2 * INTER // 128, H // 128)


def _cli(*args, check=True):
    env = dict(os.environ, PYTHONPATH=os.getcwd())
    proc = subprocess.run(
        [sys.executable, "-m", "moe_oracle", "accuracy", *args], capture_output=True, text=True, env=env, timeout=300
    )
    if check:
        assert proc.returncode == 0, proc.stderr
    return proc


def test_cli_accuracy_json_all_variants():
    proc = _cli("deepseek-ai/DeepSeek-V4-Flash", "--scale", "0.125", "--tokens", "32", "--json")
    doc = json.loads(proc.stdout)
    assert doc["hidden_size"] == 512 and doc["moe_intermediate_size"] == 256 and doc["num_experts"] == 32
    rows = {r["variant"]: r for r in doc["variants"]}
    assert len(rows) == 8
    assert rows["sm100_bf16"]["calc_diff"] < 2e-5
    assert rows["sm90_fp8xfp8"]["calc_diff"] < 3e-3 and rows["gfx950_a4w4"]["calc_diff"] < 6e-2
    assert "checkpoint is mxfp4" in rows["sm90_fp8xfp8"]["weights_note"]
    assert all(r["verdict"] == "ok" for r in rows.values()), rows
    assert rows["sm90_fp8xfp8"]["tolerance"] == 3e-3 and rows["gfx950_a4w4"]["tolerance"] == 6e-2
    assert "the checkpoint's format" in rows["sm100_fp8xfp4"]["weights_note"]


def test_cli_accuracy_hash_layer_table_and_variant_filter():
    proc = _cli(
        "deepseek-ai/DeepSeek-V4-Pro", "--layer", "1", "--variants", "sm90_fp8xfp8,sm100_fp8xfp4", "--tokens", "16"
    )
    assert "moe_hash" in proc.stdout and "sqrtsoftplus hash" in proc.stdout
    assert "sm90_fp8xfp8" in proc.stdout and "gfx950" not in proc.stdout


def test_cli_accuracy_with_local_weights(tmp_path):
    _write_dsv4(tmp_path)
    proc = _cli("deepseek-ai/DeepSeek-V4-Flash", "--weights", str(tmp_path), "--layer", "3", "--json", "--tokens", "16")
    doc = json.loads(proc.stdout)
    assert doc["num_experts"] == E and doc["hidden_size"] == H and str(tmp_path) in doc["weights_source"]
    rows = {r["variant"]: r for r in doc["variants"]}
    assert rows["sm100_fp8xfp4"]["weights_note"] == "checkpoint weights as stored"
    assert rows["sm100_fp8xfp4"]["calc_diff_vs_master"] == pytest.approx(rows["sm100_fp8xfp4"]["calc_diff"])


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--tokens", "0"], "'--tokens': 0 is not in the range 1<=x<=65536"),
        (["--tokens", "10000000"], "'--tokens': 10000000 is not in the range 1<=x<=65536"),
        (["--tokens", str(2**63)], "is not in the range 1<=x<=65536"),
        (["--seed", str(2**64)], "'--seed': 18446744073709551616 is not in the range"),
        (["--scale", "nan"], "--scale 'nan' is not a finite number"),  # every float flag refuses NaN first (issue 30)
        (["--scale", "2"], "--scale must be in (0, 1]"),
        (["--variants", "nope"], "--variants: unknown nope"),
        (["--layer", "999"], "--layer 999 is not a MoE layer"),
        (["--weights", "/nonexistent/dir"], "does not exist"),
    ],
)
def test_cli_accuracy_bad_flags_exit_2(args, needle):
    proc = _cli("deepseek-ai/DeepSeek-V4-Flash", *args, check=False)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.startswith("error: ") and needle in proc.stderr and proc.stderr.count("\n") == 1


def test_cli_accuracy_refuses_a_run_larger_than_free_memory():
    """--scale 1 on GLM-5 (H 6144, I 2048, E 256) needs ~290 GiB: refused before anything is allocated."""
    from moe_oracle.model.resolve import resolve_model
    from moe_oracle.runtime.tolerance import available_bytes, run_bytes

    group = resolve_model("zai-org/GLM-5-FP8").layer_groups[0]
    assert run_bytes(group, 64) > (available_bytes() or 0)
    proc = _cli("zai-org/GLM-5-FP8", "--scale", "1", check=False)
    assert proc.returncode == 2 and "GiB free" in proc.stderr and proc.stderr.count("\n") == 1, proc.stderr


VARIANTS_AND_TOKENS = ("--variants", "sm100_bf16,sm90_fp8xfp8", "--tokens", "8")


def test_cli_accuracy_table_fits_80_columns_and_states_the_tolerance():
    env = dict(os.environ, PYTHONPATH=os.getcwd(), COLUMNS="80")
    proc = subprocess.run(
        [sys.executable, "-m", "moe_oracle", "accuracy", "deepseek-ai/DeepSeek-V4-Flash", *VARIANTS_AND_TOKENS],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    table = lines[2 : lines.index(next(x for x in lines if x.startswith("verdict:")))]
    assert max(len(x) for x in table) <= 80, table
    assert any("sm90_fp8xfp8" in x and "3e-03  ok" in x for x in table), table
    assert "within the limit of the variant's coarsest activation format" in proc.stdout


def test_run_accuracy_reports_each_variant_as_it_starts():
    from moe_oracle.model.resolve import resolve_model
    from moe_oracle.runtime.accuracy import run_accuracy

    seen = []
    run_accuracy(
        resolve_model("deepseek-ai/DeepSeek-V4-Flash"),
        variants=["sm100_bf16", "sm90_fp8xfp8"],
        tokens=4,
        on_variant=lambda done, total, name: seen.append((done, total, name)),
    )
    assert [s[:2] for s in seen] == [(0, 2), (1, 2)]
