"""GPU timing helpers shared by the benchmarks (METHOD.md: CUDA graphs, CUDA events, medians after warm-up).

``time_us`` captures ``fn`` in a CUDA graph after three warm-up calls and returns the median of
``reps`` replays timed with CUDA events; with ``flush`` a 512 MB buffer is zeroed before each timed
replay so the 60 MB L2 holds nothing of the previous one (h200.md §4's method). ``copy_bandwidth``
is the device-to-device copy rate (bytes read + written) that the bandwidth ratios divide by.

``time_interleaved`` is how paths are COMPARED: at large T the H200 draws more than its 700 W cap
and drops its clock from 1980 to about 1750-1860 MHz within 50-100 ms, so timing one path's block
after another's favours whichever runs first. It captures every path's graph, then runs rounds; each
round times every path once (``reps_per_round`` replays each), in an order that rotates from round to
round, so every path sees the same thermal and clock history. It reports each path's median over
all replays, its per-round medians (``Timing.round_us``, what :mod:`moe_oracle.runtime.paired` pairs between
two paths) and their spread, and the SM clock and board power NVML read after every round (the condition the
numbers were taken under). With ``sweep=True`` a round is ``reps_per_round`` sweeps over the paths, each path
replayed once per sweep (the order rotating by round), so the paths compared ran adjacently, replay by replay,
instead of one path's block of replays after another's.

``time_steady`` is what ONE path costs when it runs alone, as a server runs it: each path in turn is replayed
for ``warm_s`` seconds (the clock settles where that path's own power draw puts it), then timed replay by replay
with the SM clock and the instant board power read after each. Interleaved, a path that draws little power runs
at the clock its neighbours' draw left; steady, at its own.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import torch

_FLUSH: list[torch.Tensor] = []


def _flush_buffer() -> torch.Tensor:
    if not _FLUSH:
        _FLUSH.append(torch.empty(512 << 20, dtype=torch.uint8, device="cuda"))
    return _FLUSH[0]


def _prepared(fn: Callable[[], object], graph: bool) -> Callable[[], object]:
    """``fn`` after three warm-up calls: the replay of its captured CUDA graph, or ``fn`` itself."""
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    if not graph:
        return fn
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        fn()
    return g.replay


def _timed(run: Callable[[], object], flush: torch.Tensor | None, before: Callable[[], object] | None = None) -> float:
    """Microseconds of one call of ``run`` by CUDA events (``flush`` zeroed and ``before`` run first, untimed)."""
    if flush is not None:
        flush.zero_()
    if before is not None:
        before()
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    s.record()
    run()
    e.record()
    e.synchronize()
    return s.elapsed_time(e) * 1e3


def time_us(
    fn: Callable[[], object],
    reps: int = 20,
    *,
    flush: bool = True,
    graph: bool = True,
    before: Callable[[], object] | None = None,
) -> float:
    """Median microseconds of one call of ``fn``: CUDA-graph replays, or plain calls for code that syncs.

    ``before`` runs ahead of each timed call, outside the timing (``dist.barrier`` aligns the ranks).
    """
    run = _prepared(fn, graph)
    buf = _flush_buffer() if flush else None
    return statistics.median(_timed(run, buf, before) for _ in range(reps))


def copy_bandwidth(nbytes: int = (4 << 30) - (64 << 20)) -> float:
    """Device-to-device copy bandwidth in bytes/s (read + written), ``nbytes`` each way after warm-up.

    Every GPU benchmark measures it first, so it is also where one without a GPU stops, with a message.

    The default is deliberately not a power of two: on the H200 copies of exactly 1, 2 or 4 GiB
    measured 2.75 TB/s, and 0.25 GiB or 3.94 GiB 4.1-4.3 TB/s (h200.md's 4.27), presumably source
    and destination falling on the same memory channels.
    """
    if not torch.cuda.is_available():
        raise SystemExit("this benchmark measures a GPU: no CUDA device is visible (torch.cuda.is_available() False)")
    src = torch.randn(nbytes // 4, device="cuda")
    dst = torch.empty_like(src)
    us = time_us(lambda: dst.copy_(src), reps=20, flush=False)
    return 2 * src.numel() * src.element_size() / (us * 1e-6)


@dataclass(frozen=True)
class Timing:
    """One path's interleaved timing: median of all replays (us), the range of its per-round medians and the
    per-round medians themselves in round order (``round_us``, empty when not recorded)."""

    us: float
    round_min_us: float
    round_max_us: float
    rounds: int
    round_us: tuple[float, ...] = ()

    @property
    def spread(self) -> float:
        """(max - min) / median of the per-round medians."""
        return (self.round_max_us - self.round_min_us) / self.us if self.us else 0.0


@dataclass
class Condition:
    """SM clock (MHz) and board power (W) read through NVML after each round (empty without NVML)."""

    clocks_mhz: list[float] = field(default_factory=list)
    power_w: list[float] = field(default_factory=list)

    def sample(self, instant: bool = False) -> None:
        """Read the SM clock and the board power: NVML's averaged power, or with ``instant`` its instant reading
        (``NVML_FI_DEV_POWER_INSTANT``) where the driver has it."""
        handle = _nvml()
        if handle is None:
            return
        import pynvml

        self.clocks_mhz.append(float(pynvml.nvmlDeviceGetClockInfo(handle, pynvml.NVML_CLOCK_SM)))
        self.power_w.append(_instant_power_w(handle) if instant else pynvml.nvmlDeviceGetPowerUsage(handle) / 1000.0)

    def text(self) -> str:
        if not self.clocks_mhz:
            return "clock/power not read (no NVML)"
        return (
            f"SM clock {min(self.clocks_mhz):.0f}-{max(self.clocks_mhz):.0f} MHz, board power "
            f"{min(self.power_w):.0f}-{max(self.power_w):.0f} W (NVML, after each round)"
        )

    def to_json(self) -> dict[str, list[float]]:
        return {"sm_clock_mhz": self.clocks_mhz, "power_w": self.power_w}


_NVML: list = []


def _instant_power_w(handle) -> float:
    """Instant board power (W), NVML's averaged reading where the driver has no instant field."""
    import pynvml

    field_id = getattr(pynvml, "NVML_FI_DEV_POWER_INSTANT", None)
    if field_id is not None:
        try:
            (value,) = pynvml.nvmlDeviceGetFieldValues(handle, [field_id])
            if value.nvmlReturn == pynvml.NVML_SUCCESS:
                return value.value.uiVal / 1000.0
        except pynvml.NVMLError:
            pass
    return pynvml.nvmlDeviceGetPowerUsage(handle) / 1000.0


def _nvml():
    if not _NVML:
        try:
            import pynvml

            pynvml.nvmlInit()
            _NVML.append(pynvml.nvmlDeviceGetHandleByIndex(torch.cuda.current_device()))
        except Exception:  # no NVML: the condition is reported as unknown
            _NVML.append(None)
    return _NVML[0]


def time_interleaved(
    fns: dict[str, Callable[[], object]],
    *,
    rounds: int = 7,
    reps_per_round: int = 5,
    flush: bool = True,
    graph: bool = True,
    condition: Condition | None = None,
    sweep: bool = False,
) -> dict[str, Timing]:
    """Median microseconds per call of each path, measured interleaved round by round (module docstring).

    ``sweep``: replay the paths one after another ``reps_per_round`` times per round (adjacent replays) instead of
    ``reps_per_round`` replays of one path, then the next.
    """
    runs = {name: _prepared(fn, graph) for name, fn in fns.items()}
    buf = _flush_buffer() if flush else None
    names = list(runs)
    samples: dict[str, list[float]] = {n: [] for n in names}
    per_round: dict[str, list[float]] = {n: [] for n in names}
    for r in range(rounds):
        order = names[r % len(names) :] + names[: r % len(names)]
        times: dict[str, list[float]] = {n: [] for n in names}
        if sweep:
            for _ in range(reps_per_round):
                for name in order:
                    times[name].append(_timed(runs[name], buf))
        else:
            for name in order:
                times[name] = [_timed(runs[name], buf) for _ in range(reps_per_round)]
        for name in names:
            samples[name] += times[name]
            per_round[name].append(statistics.median(times[name]))
        if condition is not None:
            condition.sample()
    return {
        n: Timing(statistics.median(samples[n]), min(per_round[n]), max(per_round[n]), rounds, tuple(per_round[n]))
        for n in names
    }


@dataclass(frozen=True)
class SteadyTiming:
    """One path timed alone after ``warm_s`` of its own replays: median us, each timed replay's us, and the SM
    clock (MHz) and instant board power (W) read after each (empty without NVML)."""

    us: float
    replay_us: tuple[float, ...]
    clocks_mhz: tuple[float, ...]
    power_w: tuple[float, ...]

    @property
    def spread(self) -> float:
        """(max - min) / median of the timed replays (as :attr:`Timing.spread` is of the per-round medians)."""
        return (max(self.replay_us) - min(self.replay_us)) / self.us if self.us else 0.0

    def to_json(self) -> dict[str, object]:
        return {
            "us": self.us,
            "replay_us": list(self.replay_us),
            "sm_clock_mhz": list(self.clocks_mhz),
            "power_w": list(self.power_w),
        }


def time_steady(
    fns: dict[str, Callable[[], object]],
    *,
    warm_s: float = 2.0,
    reps: int = 10,
    flush: bool = True,
    graph: bool = True,
) -> dict[str, SteadyTiming]:
    """Each path alone, in turn: replayed (untimed, L2 cleared as timed) for ``warm_s`` seconds, then ``reps``
    timed replays with the clock and instant power read after each (module docstring). On the H200 the clock is
    still settling after 0.5 s of a path's replays; after 2 s and 5 s the times agree (docs/performance.md §14.2)."""
    runs = {name: _prepared(fn, graph) for name, fn in fns.items()}
    buf = _flush_buffer() if flush else None
    out = {}
    for name, run in runs.items():
        end = time.perf_counter() + warm_s
        while time.perf_counter() < end:
            _timed(run, buf)
        cond = Condition()
        times = []
        for _ in range(reps):
            times.append(_timed(run, buf))
            cond.sample(instant=True)
        out[name] = SteadyTiming(statistics.median(times), tuple(times), tuple(cond.clocks_mhz), tuple(cond.power_w))
    return out
