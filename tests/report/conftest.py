"""Shared fixtures: the default matrix and the generated docs, each built once per session."""

from __future__ import annotations

from pathlib import Path

import pytest

from moe_oracle.report.matrix import Matrix, build_matrix
from moe_oracle.report.scenarios import build_scenarios

REPO = Path(__file__).resolve().parents[2]
DOCS = REPO / "docs"


@pytest.fixture(scope="session")
def default_matrix() -> Matrix:
    """The default matrix (every registered variant, every bundled preset), no shell environment."""
    return build_matrix(build_scenarios(env={}))


@pytest.fixture(scope="session")
def generated_docs() -> dict[str, str]:
    from moe_oracle.cli.docs import generate_docs

    return generate_docs(machine=False)  # probe's and accuracy's outputs are this machine's: not compared
