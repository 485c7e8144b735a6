"""``time_steady``: each path alone, after its own warm-up, timed replay by replay with the clock and power read
after each (the ``--steady`` basis of ``benchmarks/fused_vs_nonfused.py``)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from moe_oracle.runtime import timing


def test_each_path_warms_then_is_timed_alone_in_the_given_order(monkeypatch: pytest.MonkeyPatch) -> None:
    # the replay order and the medians; the timer is a counter and the wall clock advances 0.1 s per replay
    seen: list[str] = []
    wall = iter(x / 10 for x in range(10_000))
    clock = iter(range(10_000))
    monkeypatch.setattr(timing, "_timed", lambda run, buf, before=None: (run(), float(next(clock)))[1])
    monkeypatch.setattr(timing, "_prepared", lambda fn, graph: fn)
    monkeypatch.setattr(timing.time, "perf_counter", lambda: next(wall))
    monkeypatch.setattr(timing, "_nvml", lambda: None)  # no NVML: no clock or power readings
    fns = {n: (lambda n=n: seen.append(n)) for n in "ba"}
    out = timing.time_steady(fns, warm_s=0.45, reps=3, flush=False, graph=False)
    # b: the deadline is read at 0.0 (0.45), then four warm replays (checks at 0.1-0.4 pass, 0.5 stops), 3 timed
    assert "".join(seen) == "b" * 7 + "a" * 7
    assert list(out) == ["b", "a"]
    assert out["b"].replay_us == (4.0, 5.0, 6.0) and out["b"].us == 5.0 and out["b"].spread == 2.0 / 5.0
    assert out["a"].clocks_mhz == () and out["a"].power_w == ()
    assert out["a"].to_json() == {"us": 12.0, "replay_us": [11.0, 12.0, 13.0], "sm_clock_mhz": [], "power_w": []}


@pytest.mark.gpu
def test_steady_timing_of_a_real_gemm_reads_the_clock_and_power() -> None:
    import torch

    a = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)
    out = timing.time_steady({"gemm": lambda: a @ a}, warm_s=0.2, reps=5)
    st = out["gemm"]
    assert len(st.replay_us) == 5 and min(st.replay_us) > 0 and st.us == sorted(st.replay_us)[2]
    # 137 GFLOP: slower than at the H200's dense BF16 peak (~990 TFLOP/s), faster than at 10 TFLOP/s
    assert 2 * 4096**3 / 990e12 * 1e6 < st.us < 2 * 4096**3 / 10e12 * 1e6
    if st.clocks_mhz:  # NVML present
        assert len(st.clocks_mhz) == len(st.power_w) == 5
        assert all(100 < c < 3000 for c in st.clocks_mhz) and all(10 < p < 2000 for p in st.power_w)


def test_the_steady_table_is_the_committed_result_and_the_docs_quote_its_summary() -> None:
    root = Path(__file__).resolve().parents[2]
    out = subprocess.run(
        [sys.executable, str(root / "benchmarks" / "steady_vs_interleaved.py")],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    saved = (root / "benchmarks/results/h200/2026-12-03/steady_vs_interleaved.txt").read_text()
    assert out == saved
    summary = saved[saved.index("per path, the range") :].splitlines()
    docs = (root / "docs/performance.md").read_text()
    assert all(line in docs for line in summary)
