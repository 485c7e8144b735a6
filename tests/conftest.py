"""Shared pytest configuration: GPU tests skip cleanly without a GPU."""

from __future__ import annotations

import os
import tempfile

import pytest

# tests never read the calibration ``moe-oracle tune`` wrote on this machine: an empty cache of their own
os.environ["MOE_ORACLE_CACHE_DIR"] = tempfile.mkdtemp(prefix="moe-oracle-test-cache-")
os.environ.pop("MOE_ORACLE_CALIBRATION", None)


def _gpu_available() -> bool:
    try:
        import torch
    except Exception:
        return False
    return bool(torch.cuda.is_available())


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
