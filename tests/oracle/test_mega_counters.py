"""``benchmarks/mega_counters.py``: Nsight Compute's CSV joined per profiled kernel, and the committed tables are what
its ``--parse`` prints from the committed raw output (docs/performance.md §15.1)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

ROOT = Path(__file__).resolve().parents[2]
COUNTERS = ROOT / "benchmarks/results/h200/2026-12-03/counters"
sys.path.insert(0, str(ROOT / "benchmarks"))

from mega_counters import METRICS, parse, table  # noqa: E402

HEADER = '"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size",'
HEADER += '"Device","CC","Section Name","Metric Name","Metric Unit","Metric Value"'


def _row(launch: int, metric: str, value: str) -> str:
    head = f'"{launch}","1","python3","h","void sm90_fp8_mega_moe_impl<1>()","1","7","(384, 1, 1)","(132, 1, 1)",'
    return head + f'"0","9.0","Command line profiler metrics","{metric}","x","{value}"'


def test_each_profiled_launch_is_one_row_with_the_key_printed_before_it() -> None:
    text = "\n".join(
        [
            "=== glm-5 sm90_fp8xfp8 T=1",
            "=== ernie sm90_fp8xfp8 T=512: RuntimeError: Hidden is too large",  # refused: printed, not profiled
            "=== glm-5 sm90_fp8xfp8 T=8",
            "==PROF== Connected to process 1",
            HEADER,
            _row(0, "gpu__time_duration.sum", "130,200"),
            _row(0, "dram__bytes_read.sum", "307100000"),
            _row(1, "gpu__time_duration.sum", "558000"),
        ]
    )
    rows = parse(text)
    assert [r["case"] for r in rows] == ["glm-5 sm90_fp8xfp8 T=1", "glm-5 sm90_fp8xfp8 T=8"]
    assert rows[0]["gpu__time_duration.sum"] == "130200"  # thousands separators dropped
    out = table(rows)
    assert "| glm-5 sm90_fp8xfp8 T=1 | 130.2 |" in out and "| 307.1 |" in out  # ns -> us, bytes -> MB
    assert out.count("\n") == 3  # header, rule, two rows


@pytest.mark.parametrize("junk", ["", "no csv here\n", '"ID"\n"0"\n', '"ID","Metric Name"\n"0",\n'])
def test_output_without_counters_gives_an_empty_table_not_a_traceback(junk: str) -> None:
    assert table(parse(junk)).count("\n") == 1


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.sampled_from([HEADER, _row(0, "gpu__time_duration.sum", "1"), "=== a b T=1", '"', '",,"']), max_size=8),
    st.text(max_size=200),
)
def test_any_text_parses_without_raising(lines: list[str], noise: str) -> None:
    table(parse("\n".join([*lines, noise])))


@pytest.mark.parametrize("part", ["a", "b", "c", "d", "e", "f"])
def test_the_committed_tables_are_what_parse_prints(part: str) -> None:
    done = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks/mega_counters.py"), "--parse", str(COUNTERS / f"raw_{part}.txt")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == (COUNTERS / f"table_{part}.md").read_text(encoding="utf-8")
    assert all(cell != "-" for line in done.stdout.splitlines()[2:] for cell in line.split(" | ")[1:3])
    assert len(done.stdout.splitlines()[0].split(" | ")) == 1 + len(METRICS)  # the case, then one column per counter


@pytest.mark.parametrize(
    "args",
    [
        ["--parse", "/no/such/file"],
        ["--shapes", "no-such-shape"],
        ["--tokens", "1,x"],
        ["--tokens", "0"],
        ["--max-tokens", "0"],
    ],
)
def test_a_bad_argument_is_one_line_and_exit_2(args: list[str]) -> None:
    done = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks/mega_counters.py"), *args], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.strip().splitlines()[-1].startswith("mega_counters.py: error: ")
