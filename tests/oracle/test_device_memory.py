"""The catalogue's per-GPU memory is what the driver reports (what the engines size their share from), each figure
stored with the tool that printed it and a source, never the vendor's marketing figure."""

from __future__ import annotations

import pytest

from moe_oracle.spec.device import DEVICES
from moe_oracle.spec.device_memory import DRIVER_MEMORY, DriverMemory

#: The vendor's marketing "GB" figure per device: the driver always reports less.
MARKETING_GB = {
    "h100": 80,
    "h200": 141,
    "b200": 180,
    "b300": 288,
    "gb200": 186,
    "gb300": 288,
    "rtx-pro-6000": 96,
    "mi300x": 192,
    "mi325x": 256,
    "mi355x": 288,
}


def test_every_catalogue_device_has_a_driver_total_with_a_source():
    assert set(DRIVER_MEMORY) == set(DEVICES) == set(MARKETING_GB)
    for name, device in DEVICES.items():
        total = DRIVER_MEMORY[name]
        assert device.memory_gib == total.gib
        assert total.reader != "vendor nominal" and total.source.strip()


@pytest.mark.parametrize("name", sorted(MARKETING_GB))
def test_the_driver_total_is_below_the_marketing_figure(name):
    assert DEVICES[name].memory_gib < MARKETING_GB[name]


def test_h200_is_our_own_measurement():
    h200 = DRIVER_MEMORY["h200"]
    assert (h200.amount, h200.unit, h200.gib) == (150_109_880_320, "B", 139.8)
    assert "measured on the H200 used for docs/performance.md, 2026-12-01" in h200.source


@pytest.mark.parametrize(
    ("amount", "unit", "gib"),
    [(81559, "MiB", 79.65), (143771, "MiB", 140.4), (206141652992, "B", 191.98), (178.35, "GiB", 178.35)],
)
def test_gib_converts_each_unit_the_tools_print(amount, unit, gib):
    assert DriverMemory(amount=amount, unit=unit, reader="nvidia-smi", source="x").gib == gib
