"""The ``moe-oracle`` command line."""

from moe_oracle.cli.app import main

__all__ = ["main"]
