"""The package version (one definition: ``pyproject.toml`` reads it, every record carries it)."""

__version__ = "0.1.0"
