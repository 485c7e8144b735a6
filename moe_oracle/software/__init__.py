"""Software profiles: which kernel-library builds are present, probed or declared."""

from moe_oracle.software.profiles import NAMED_PROFILES, named_profile
from moe_oracle.software.types import LibraryBuild, SoftwareProfile

__all__ = ["NAMED_PROFILES", "LibraryBuild", "SoftwareProfile", "named_profile"]
