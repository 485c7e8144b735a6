"""The paired per-round comparison the benchmarks report (moe_oracle.runtime.paired): CPU only, on numbers."""

from __future__ import annotations

import math
import random

import pytest

from moe_oracle.runtime.paired import MIN_ROUNDS_95, paired_difference, sign_test_rank


def _binom_cdf(n: int, k: int) -> float:
    return sum(math.comb(n, i) for i in range(k + 1)) / 2**n


@pytest.mark.parametrize("n", range(MIN_ROUNDS_95, 60))
def test_rank_is_the_widest_choice_that_keeps_the_coverage(n: int) -> None:
    k, coverage = sign_test_rank(n)
    assert coverage == pytest.approx(1 - 2 * _binom_cdf(n, k - 1))
    assert coverage >= 0.95
    assert 1 - 2 * _binom_cdf(n, k) < 0.95  # one rank further in would fall short


def test_fifteen_rounds_give_the_fourth_and_twelfth_differences() -> None:
    assert sign_test_rank(15) == (4, pytest.approx(1 - 2 * 576 / 2**15))
    d = paired_difference([float(v) for v in range(15)], [0.0] * 15)
    assert (d.low, d.median, d.high, d.rounds) == (3.0, 7.0, 11.0, 15)


def test_too_few_rounds_and_bad_inputs_are_refused() -> None:
    with pytest.raises(ValueError, match="time at least 6 rounds"):
        sign_test_rank(MIN_ROUNDS_95 - 1)
    with pytest.raises(ValueError, match="pair the same rounds"):
        paired_difference([1.0] * 7, [1.0] * 8)
    with pytest.raises(ValueError, match="not in"):
        sign_test_rank(10, 1.0)


def test_a_drift_shared_by_both_paths_cancels() -> None:
    # a path 1 us faster in every round, under a drift of 30 us between rounds: the spread of either path's own
    # rounds is 30x the lead, the paired interval still excludes 0
    drift = [30.0 * math.sin(r) for r in range(15)]
    a = [100.0 + x for x in drift]
    b = [99.0 + x + 0.1 * (r % 3 - 1) for r, x in enumerate(drift)]
    d = paired_difference(b, a)
    assert d.measurable and d.verdict() == "b faster" and d.high < 0
    assert d.median == pytest.approx(-1.0)
    assert paired_difference(a, b).verdict() == "a faster"


def test_a_tie_is_not_measurable() -> None:
    b = [100.0 + v for v in (-1, 1, -2, 2, -1, 1, 0.5, -0.5, 1, -1, 2, -2, 0.1, -0.1, 0.0)]
    d = paired_difference(b, [100.0] * 15)
    assert not d.measurable and d.verdict() == "tie" and d.low < 0 < d.high
    assert d.to_json()["verdict"] == "tie"


def test_coverage_holds_for_a_skewed_difference() -> None:
    # 2000 experiments of 15 rounds drawn from a skewed (exponential) difference whose median is known: the
    # interval contains it at least as often as it claims, within sampling error
    rng = random.Random(7)
    true_median = math.log(2)
    hits = 0
    for _ in range(2000):
        d = paired_difference([rng.expovariate(1.0) for _ in range(15)], [0.0] * 15)
        hits += d.low <= true_median <= d.high
    assert hits / 2000 >= 0.965 - 3 * math.sqrt(0.965 * 0.035 / 2000)


def test_sweeps_replay_the_paths_adjacently_and_keep_every_round(monkeypatch: pytest.MonkeyPatch) -> None:
    # the order of replays and the per-round medians that time_interleaved pairs; the clock is a counter
    from moe_oracle.runtime import timing

    clock, seen = iter(range(1000)), []
    monkeypatch.setattr(timing, "_timed", lambda run, buf, before=None: (run(), float(next(clock)))[1])
    monkeypatch.setattr(timing, "_prepared", lambda fn, graph: fn)  # no warm-up, no CUDA synchronize
    fns = {n: (lambda n=n: seen.append(n)) for n in "abc"}
    tm = timing.time_interleaved(fns, rounds=3, reps_per_round=2, flush=False, graph=False, sweep=True)
    assert "".join(seen) == "abcabc" + "bcabca" + "cabcab"
    assert tm["a"].round_us == (1.5, 9.5, 14.5) and tm["a"].rounds == 3
    seen.clear()
    timing.time_interleaved(fns, rounds=2, reps_per_round=2, flush=False, graph=False)
    assert "".join(seen) == "aabbcc" + "bbccaa"
