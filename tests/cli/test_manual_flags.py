"""The fix texts name real options: the manual flags exist on model and select and work end to end."""

from __future__ import annotations

import json
import re

import pytest

from tests.cli.runner import cli

MANUAL = ["--hidden-size", "4096", "--moe-intermediate-size", "2048", "--num-experts", "256", "--top-k", "6",
          "--weight-format", "mxfp4"]  # fmt: skip


def _flags_in(text: str) -> set[str]:
    return set(re.findall(r"--[a-z][a-z0-9-]+", text))


def test_unsupported_architecture_fix_names_options_that_exist(tmp_path):
    config = {"architectures": ["JambaForCausalLM"], "model_type": "jamba", "hidden_size": 4096}
    (tmp_path / "config.json").write_text(json.dumps(config))
    r = cli("model", str(tmp_path))
    assert r.code == 2, r.err
    named = _flags_in(r.err.split("Fix:", 1)[1])
    assert {"--hidden-size", "--moe-intermediate-size", "--num-experts", "--top-k", "--weight-format"} <= named
    help_text = cli("model", "--help").out + cli("select", "--help").out
    assert named <= _flags_in(help_text)


def test_manual_flags_describe_and_decide():
    r = cli("model", *MANUAL, "--json")
    assert r.code == 0, r.err
    group = json.loads(r.out)["layer_groups"][0]
    assert (group["hidden_size"], group["num_experts"], group["top_k"]) == (4096, 256, 6)
    s = cli("select", *MANUAL, "--device", "b200", "--dp", "8", "--ep", "8", "--json")
    assert s.code == 0, s.err
    assert json.loads(s.out)["chosen"] == {"backend": "deep_gemm_mega_moe", "variant": "sm100_fp8xfp4"}


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--hidden-size", "4096"], "needs --moe-intermediate-size, --num-experts, --top-k, --weight-format"),
        (["deepseek-ai/DeepSeek-V4-Flash", "--top-k", "3"], "both describe the model"),
        ([*MANUAL[:-1], "int3"], "--weight-format"),
    ],
)
def test_manual_flag_errors_are_one_line(args, needle):
    r = cli("model", *args)
    assert r.code == 2 and r.err.count("\n") == 1 and needle in r.err, r.err


@pytest.mark.parametrize("value", ["+-4096", "⁸", "٤٠٩٦", "1_0", "99999999999999999999999999999999999"])
@pytest.mark.parametrize("flag", ["--hidden-size", "--top-k"])
def test_manual_integer_flag_spellings_are_refused_in_one_line(flag, value):
    args = list(MANUAL)
    args[args.index(flag) + 1] = value
    r = cli("select", *args, "--device", "b200")
    assert r.code == 2, r.err
    assert r.err.count("\n") == 1 and flag in r.err and "integer" in r.err, r.err


def test_manual_weight_block_with_superscript_digits_is_refused():
    r = cli("select", *MANUAL, "--weight-block", "¹²⁸x128", "--device", "b200")
    assert r.code == 2 and "--weight-block" in r.err and r.err.count("\n") == 1, r.err
