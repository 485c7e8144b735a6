"""Package layout only (metadata lives in pyproject.toml).

The hardware targets live in the top-level ``backends/`` folder but install as the import
package ``moe_oracle_backends`` (``backends/cuda_sm90`` -> ``moe_oracle_backends.cuda_sm90``).
"""

from setuptools import find_packages, setup

backend_packages = ["moe_oracle_backends"] + [f"moe_oracle_backends.{name}" for name in find_packages("backends")]

setup(
    packages=find_packages(include=["moe_oracle", "moe_oracle.*"]) + backend_packages,
    package_dir={"moe_oracle_backends": "backends"},
)
