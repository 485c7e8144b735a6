"""Shared pytest configuration: GPU tests skip cleanly without a GPU."""

from __future__ import annotations

import os
import tempfile

import pytest

# tests never read the calibration ``moe-oracle tune`` wrote on this machine: an empty cache of their own
os.environ["MOE_ORACLE_CACHE_DIR"] = tempfile.mkdtemp(prefix="moe-oracle-test-cache-")
os.environ.pop("MOE_ORACLE_CALIBRATION", None)
# the CLI wraps prose to COLUMNS when set (pytest-xdist's workers set COLUMNS=80, LINES=24): a test that wants a
# width passes it; every other test sees a pipe's unwrapped output, however the suite is run
for _name in ("COLUMNS", "LINES"):
    os.environ.pop(_name, None)


def _gpu_available() -> bool:
    try:
        import torch
    except Exception:
        return False
    return bool(torch.cuda.is_available())


#: workers ``pytest -n auto`` starts on a machine without a GPU: one per CPU, at most this many (each imports torch)
MAX_AUTO_WORKERS = 8


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_auto_num_workers(config: pytest.Config) -> int | None:
    """``-n auto`` (the README's test command): one worker per CPU up to :data:`MAX_AUTO_WORKERS`; one worker where
    a GPU is present, so that the GPU tests (timings among them) never share the device with one another.
    ``PYTEST_XDIST_AUTO_NUM_WORKERS`` still decides when set (None defers to pytest-xdist)."""
    if os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS"):
        return None
    if _gpu_available():
        return 1
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return max(1, min(MAX_AUTO_WORKERS, cpus))


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if _gpu_available():
        return
    skip = pytest.mark.skip(reason="needs a GPU (marked gpu)")
    for item in items:
        # the marker itself: ``item.keywords`` also holds the names of the folders above the test (a checkout
        # in a directory named ``gpu`` would skip every test)
        if item.get_closest_marker("gpu") is not None:
            item.add_marker(skip)


@pytest.fixture(autouse=True)
def _no_named_calibration():
    """``--calibration FILE`` holds for the rest of a process (the CLI's own lifetime); a test's command must not
    leave it set for the next test's decision."""
    yield
    from moe_oracle.cost.local import use_file

    use_file(None)
