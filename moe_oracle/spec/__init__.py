"""Typed deployment description: device, topology, parallelism, software."""

from moe_oracle.spec.deployment import Deployment, Parallelism, Topology
from moe_oracle.spec.device import DEVICES, Arch, DeviceSpec, Vendor

__all__ = ["DEVICES", "Arch", "Deployment", "DeviceSpec", "Parallelism", "Topology", "Vendor"]
