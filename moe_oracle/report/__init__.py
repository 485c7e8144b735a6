"""The capability matrix and the generated reference docs.

:func:`~moe_oracle.report.matrix.build_matrix` asks the door ``select`` goes through
(:func:`moe_oracle.answers.door.settle`) once per scenario (model, device, topology, engine, software) and reads
every candidate's verdict, so each cell agrees with ``moe-oracle select`` by construction. The renderers turn one
:class:`~moe_oracle.report.matrix.Matrix` into a terminal table, markdown, JSON or a
self-contained HTML page; :mod:`moe_oracle.report.docs` renders the report's pages of ``docs/``
from the declarations (:mod:`moe_oracle.cli.docs` writes them, with the CLI page). Nothing here
imports torch or a kernel library.
"""

from moe_oracle.report.matrix import Cell, Matrix, MatrixScenario, Verdict, build_matrix
from moe_oracle.report.scenarios import DEFAULT_DEVICES, TOPOLOGIES, ScenarioSpec, TopologySpec, build_scenarios

__all__ = [
    "DEFAULT_DEVICES",
    "TOPOLOGIES",
    "Cell",
    "Matrix",
    "MatrixScenario",
    "ScenarioSpec",
    "TopologySpec",
    "Verdict",
    "build_matrix",
    "build_scenarios",
]
