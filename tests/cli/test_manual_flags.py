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


def test_manual_flags_state_routing_activation_bias_and_int4():
    """The flags can state what a family implies; what they leave out is printed as assumed."""
    gpt_oss = ["--hidden-size", "2880", "--moe-intermediate-size", "2880", "--num-experts", "128", "--top-k", "4",
               "--weight-format", "mxfp4"]  # fmt: skip
    r = cli("model", *gpt_oss, "--activation", "swigluoai:1.702,7", "--expert-bias", "--scoring", "softmax",
            "--no-correction-bias", "--json")  # fmt: skip
    assert r.code == 0, r.err
    doc = json.loads(r.out)
    g = doc["layer_groups"][0]
    assert g["activation"] == {"kind": "swiglu", "clamp": 7.0, "alpha": 1.702, "beta": 1.0, "interleaved": False}
    assert g["expert_bias"] is True and g["routing"]["scoring"] == "softmax" and not g["routing"]["correction_bias"]
    assert [a.split(" not given")[0] for a in doc["assumptions"]] == ["--renormalize", "--router-weight-on-input"]
    s = cli("select", *gpt_oss, "--activation", "swigluoai", "--expert-bias", "--device", "b200", "--dp", "8",
            "--ep", "8", "--json")  # fmt: skip
    assert s.code == 0, s.err
    decision = json.loads(s.out)
    assert decision["chosen"] is None
    assert "EXPERT_BIAS_UNSUPPORTED" in s.out
    kimi = ["--hidden-size", "7168", "--moe-intermediate-size", "2048", "--num-experts", "384", "--top-k", "8",
            "--weight-format", "int4", "--weight-block", "1x32"]  # fmt: skip
    t = cli("select", *kimi, "--device", "h200", "--dp", "8", "--ep", "8")
    assert t.code == 0 and "QUANT_INTEGER" in t.out and "assumed: --scoring not given" in t.out, t.out
    llama = ["--hidden-size", "5120", "--moe-intermediate-size", "8192", "--num-experts", "16", "--top-k", "1",
             "--weight-format", "bf16", "--router-weight-on-input", "--num-shared-experts", "1"]  # fmt: skip
    m = cli("model", *llama, "--shared-expert-gate", "--shared-expert-width", "8192", "--json")
    group = json.loads(m.out)["layer_groups"][0]
    assert group["routing"]["weight_on_input"] and group["shared_expert_gate"] and group["shared_expert_width"] == 8192


@pytest.mark.parametrize(
    "spec", ["swiglu-clamp", "swiglu-clamp:x", "swigluoai:1.7", "tanh", "swiglu:3", "swigluoai:1,-7", ""]
)
def test_bad_activation_spec_is_one_line(spec):
    r = cli("model", *MANUAL, "--activation", spec)
    assert r.code == 2 and r.err.count("\n") == 1 and "--activation" in r.err, r.err
