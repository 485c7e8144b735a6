"""Errors of the runtime (one line each, mapped to CLI exit codes like every OracleError)."""

from __future__ import annotations

from moe_oracle.errors import BadInputError, DeploymentError


class BackendUnavailableError(DeploymentError):
    """A real backend cannot run here: its kernel library, an entry point, the GPU or its architecture is missing."""


class UnknownVariantError(BadInputError):
    """A backend key that names no registered variant."""


class LayerInputError(BadInputError):
    """A ``forward``/``load`` argument of the wrong shape, dtype or size."""
