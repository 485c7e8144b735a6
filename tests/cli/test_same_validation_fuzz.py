"""Fuzzing the shared question flags: select and the matrix validate them alike and answer alike (issue 20).

Random values of the flags the matrix now shares with select (workload, decode batch, max sequences, memory
share, step budget, speculative decoding, conversions) go through the real CLI entry point in this process:
both commands end in the same documented exit code, and where they decide, on the same fingerprint.
"""

from __future__ import annotations

import contextlib
import io
import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from moe_oracle.cli.app import main

FUZZ = settings(max_examples=40, derandomize=True, deadline=None, suppress_health_check=[HealthCheck.too_slow])
FLASH = "deepseek-ai/DeepSeek-V4-Flash"

numbers = st.one_of(
    st.integers(min_value=-3, max_value=70000).map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.sampled_from(["", "x", "1e400", "0.05", "1.0", "0.5"]),
)
workloads = st.one_of(
    st.sampled_from(["decode", "prefill", "mixed", "32:1,8192:1", "1:inf", "0:1", "9999999:1", "", "decode,prefill"]),
    st.text(alphabet="0123456789:,.-e", max_size=12),
)
flag_values = st.fixed_dictionaries(
    {},
    optional={
        "--workload": workloads,
        "--decode-tokens": numbers,
        "--max-num-seqs": numbers,
        "--max-model-len": numbers,
        "--memory-fraction": numbers,
        "--max-num-batched-tokens": numbers,
        "--speculative": st.sampled_from(["mtp", "none", "MTP", "eagle", ""]),
        "--no-convert": st.just(None),
        "--allow-lossy-conversion": st.just(None),
    },
)


def _run(args: list[str]) -> tuple[int, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(args)
    return code, out.getvalue()


def _args(values: dict[str, str | None]) -> list[str]:
    args: list[str] = []
    for flag, value in values.items():
        args += [flag] if value is None else [flag, value]
    return args


@FUZZ
@given(values=flag_values, engine=st.sampled_from(["none", "vllm", "sglang"]))
def test_select_and_the_matrix_validate_and_answer_alike(values: dict[str, str | None], engine: str):
    flags = _args(values)
    layout = ["--device", "h200", "--dp", "8", "--ep", "8", "--engine", engine]
    select_code, select_out = _run(["select", FLASH, *layout, *flags, "--json"])
    matrix_code, matrix_out = _run(
        ["matrix", "--models", FLASH, "--devices", "h200", "--topologies", "dp8ep8", "--engine", engine, *flags,
         "--format", "json"]
    )  # fmt: skip
    assert select_code in (0, 2) and matrix_code == select_code, (flags, select_code, matrix_code)
    if select_code == 0:
        fingerprint = json.loads(select_out)["fingerprint"]
        assert json.loads(matrix_out)["scenarios"][0]["fingerprint"] == fingerprint, flags
