"""The benchmarks' timing helpers: they live in the package (``moe_oracle.runtime.timing``), shared with tune."""

from moe_oracle.runtime.timing import (  # noqa: F401
    Condition,
    SteadyTiming,
    Timing,
    copy_bandwidth,
    time_interleaved,
    time_steady,
    time_us,
)
