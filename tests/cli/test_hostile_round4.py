"""Regression tests for the reproducers of issue 30 (hostile inputs, round 4), one test per reproducer.

Each runs the real entry point (``main``) in this process, as a user types the command.
"""

from __future__ import annotations

import contextlib
import io
import json

from moe_oracle.cli.app import main

FLASH = "deepseek-ai/DeepSeek-V4-Flash"
COMPARE = ["compare", FLASH, "--vs", "--engine vllm", "--vs", "--engine sglang"]


def run(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(args))
    return code, out.getvalue(), err.getvalue()


def one_line(err: str) -> str:
    assert err.startswith("error: ") and err.count("\n") == 1, err
    return err


# --- internal errors -------------------------------------------------------------------------------------------


def test_memory_fraction_nan_is_bad_input():
    for value in ("nan", "NaN", "+nan"):
        code, _out, err = run("select", FLASH, "--device", "h200", "--memory-fraction", value)
        assert code == 2 and "--memory-fraction" in one_line(err) and "finite" in err, err


def test_all2all_backend_without_value_is_bad_input():
    code, _, err = run("plan", FLASH, "--device", "h200", "--engine", "vllm", "--all2all-backend", "--eplb")
    assert code == 2 and "--all2all-backend takes a value" in one_line(err)


def test_compare_points_twice_is_refused():
    code, _, err = run(*COMPARE, "--points", "32,32", "--", "--device", "h200")
    assert code == 2 and "32 more than once" in one_line(err) and "--points 32" in err
    code, out, _ = run(*COMPARE, "--points", "32,32", "--json", "--", "--device", "h200")
    assert code == 2 and json.loads(out)["exit_code"] == 2


def test_compare_points_non_ascii_digits_refused():
    for points in ("\uff13\uff12", "\u0663\u0662", "32,\u0968"):
        code, _, err = run(*COMPARE, "--points", points, "--", "--device", "h200")
        assert code == 2 and "digits 0-9" in one_line(err), err


# --- silent contradictions -------------------------------------------------------------------------------------


def test_serve_dry_run_swallowed_never_starts_the_engine():
    code, out, err = run("serve", FLASH, "--device", "h200", "--engine", "sglang", "--all2all-backend", "--dry-run")
    assert code == 2 and "--dry-run" in one_line(err) and not out


def test_compare_refused_override_shows_why_in_its_column():
    args = ["compare", FLASH, "--vs", "--engine vllm --moe-backend aiter_mega_moe", "--vs", "--engine sglang"]
    code, out, err = run(*args, "--points", "32", "--", "--device", "h200")
    assert code == 0, err
    assert "OVERRIDE REFUSED (see [1] below)" in out and "[1]: --moe-backend aiter_mega_moe cannot run" in out
    code, out, err = run(*args, "--points", "32", "--json", "--", "--device", "h200")
    doc = json.loads(out)
    assert code == 0 and doc["columns"][0]["refused"] == "OVERRIDE REFUSED" and doc["columns"][1]["plan"]


def test_compare_output_flags_inside_vs_refused():
    for column in ("--engine vllm --json", "--engine vllm --examples docs/plans", "--engine vllm --check"):
        code, _, err = run("compare", FLASH, "--vs", column, "--vs", "--engine sglang", "--", "--device", "h200")
        assert code == 2 and "a column cannot take" in one_line(err), err
    code, _, err = run(*COMPARE, "--", "--device", "h200", "--json")
    assert code == 2 and "shared flags" in one_line(err)


def test_compare_vs_help_json_is_one_error_document():
    code, out, err = run(
        "compare", FLASH, "--vs", "--help", "--vs", "--engine sglang", "--json", "--", "--device", "h200"
    )
    assert code == 2 and json.loads(out)["exit_code"] == 2 and "help" in one_line(err)
