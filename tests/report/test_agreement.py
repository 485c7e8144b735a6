"""The matrix agrees with `moe-oracle select`: every cell against an independent decide() call, and a
sample of scenarios end to end through both CLIs (`matrix --format json` vs `select --json`)."""

from __future__ import annotations

import json
import shlex
from typing import Any

import pytest

from moe_oracle.decide.selection import Decision, decide
from moe_oracle.inputs import DeploymentFlags, build_deployment, resolve_engine_software
from moe_oracle.model.loader import list_presets
from moe_oracle.model.resolve import resolve_model
from moe_oracle.report.matrix import Matrix, Verdict
from moe_oracle.report.scenarios import DEFAULT_DEVICES, TOPOLOGIES
from moe_oracle.rules import Engine, Status
from tests.cli.runner import cli

_INT_FLAGS = {"--nodes": "nodes", "--tp": "tp", "--dp": "dp", "--ep": "ep"}


def _independent_decision(select_args: list[str]) -> Decision:
    """Rebuild the inputs from the scenario's select command line, the way select does, and decide."""
    assert select_args[0] == "select"
    model = select_args[1]
    opts = dict(zip(select_args[2::2], select_args[3::2], strict=True))
    flags = DeploymentFlags(device=opts["--device"], **{v: int(opts[k]) for k, v in _INT_FLAGS.items() if k in opts})
    deployment, _ = build_deployment(flags, {})
    software, _ = resolve_engine_software(opts.get("--software"), opts["--device"], opts.get("--engine", "none"))
    return decide(resolve_model(model), deployment, software, engine=Engine(opts.get("--engine", "none")))


def _reasons(reasons: Any) -> list[tuple[str, str, str]]:
    return [(r.code.value, r.status.value, r.message) for r in reasons]


def test_default_matrix_covers_the_cross_product(default_matrix: Matrix):
    presets = list_presets()
    assert len(default_matrix.scenarios) == len(presets) * len(DEFAULT_DEVICES) * len(TOPOLOGIES)
    assert {sc.spec.model.model for sc in default_matrix.scenarios} == set(presets)
    assert {sc.spec.device.name for sc in default_matrix.scenarios} == set(DEFAULT_DEVICES)
    assert len(default_matrix.all_cells()) == len(default_matrix.scenarios) * len(default_matrix.variants)
    from moe_oracle.registry import load_registry

    assert [v.key for v in default_matrix.variants] == [v.key for v in load_registry().variants]


def test_every_cell_agrees_with_an_independent_decide(default_matrix: Matrix):
    checked = 0
    for sc, row in zip(default_matrix.scenarios, default_matrix.cells, strict=True):
        d = _independent_decision(sc.spec.select_args())
        assert len(d.groups) == len(sc.spec.model.layer_groups)
        main_choice = d.main.chosen.key if d.main.chosen else None  # "+convert(...)" for a load-time conversion
        assert sc.chosen == (main_choice if sc.fits else None), sc.id
        for cell in row:
            assert len(cell.groups) == len(d.groups)
            for gv, g in zip(cell.groups, d.groups, strict=True):
                cand = next(c for c in g.candidates if c.spec.key == cell.variant.key)
                if g.chosen is not None and g.chosen.spec.key == cell.variant.key:
                    cand = g.chosen  # the cell shows the variant as chosen, after its conversion if any
                want = Verdict.REJECTED if not cand.eligible else Verdict.UNVERIFIABLE if cand.unverified else None
                assert gv.verdict is (want or Verdict.SUPPORTED), (sc.id, cell.variant.key, g.group.name)
                assert _reasons(gv.reasons) == _reasons(cand.reasons), (sc.id, cell.variant.key)
                # a deployment that cannot hold its weights stars nothing (its fit is the select's fit)
                assert gv.chosen == (sc.fits and g.chosen is not None and g.chosen.spec.key == cell.variant.key)
            if cell.verdict is Verdict.REJECTED:
                assert cell.code is not None and cell.code == cell.failures[0].code
                assert all(r.status is Status.FAIL for r in cell.shown)
            checked += 1
    assert checked == len(default_matrix.all_cells())


def test_at_most_one_chosen_variant_per_scenario(default_matrix: Matrix):
    for sc, row in zip(default_matrix.scenarios, default_matrix.cells, strict=True):
        chosen = [c.variant.key for c in row if c.chosen]
        assert chosen == ([sc.chosen.split("+convert(")[0]] if sc.chosen else []), sc.id
        assert all(c.verdict is not Verdict.REJECTED for c in row if c.chosen)


def test_topologies_mean_what_they_say(default_matrix: Matrix):
    def cell(model: str, device: str, topo: str, key: str):
        return default_matrix.cell(f"{model}|{device}|{topo}|none|all", key)

    flash, fp4 = "deepseek-ai/DeepSeek-V4-Flash", "deep_gemm_mega_moe:sm100_fp8xfp4"
    assert cell(flash, "b200", "dp8ep8", fp4).chosen
    # two 8-GPU HGX nodes: EP16 crosses the NVLink domain; four GB200 trays stay inside NVL72
    assert cell(flash, "b200", "ep16x2", fp4).code.value == "EP_EXCEEDS_DOMAIN"
    assert cell(flash, "gb200", "ep16x2", fp4).chosen
    assert cell(flash, "h200", "tp8", "deep_gemm_mega_moe:sm90_fp8xfp4").code.value == "TP_UNSUPPORTED"
    gb = default_matrix.cell(f"{flash}|gb200|ep16x2|none|all", fp4).scenario.spec
    assert (gb.deployment.topology.nodes, gb.deployment.topology.gpus_per_node) == (4, 4)
    assert "--nodes 4" in gb.select_command()


def _sample(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """One scenario per device, rotating models and topologies, so every device, model and topology appears."""
    by_device: dict[str, list[dict[str, Any]]] = {}
    for sc in doc["scenarios"]:
        by_device.setdefault(sc["device"], []).append(sc)
    picked = []
    for n, (_, scenarios) in enumerate(sorted(by_device.items())):
        picked.append(scenarios[(n * 4 + 1) % len(scenarios)])
    return picked


def test_matrix_cli_agrees_with_select_cli_on_a_sample():
    r = cli("matrix", "--format", "json")
    assert r.code == 0, r.err
    doc = json.loads(r.out)
    cells: dict[str, list[dict[str, Any]]] = {}
    for c in doc["cells"]:
        cells.setdefault(c["scenario"], []).append(c)
    sample = _sample(doc)
    assert {s["model"] for s in sample} == set(list_presets())
    assert {s["topology"] for s in sample} == set(TOPOLOGIES)
    for sc in sample:
        args = shlex.split(sc["select_command"])
        assert args[:2] == ["moe-oracle", "select"]
        sel = cli(*args[1:], "--json")
        if sel.code == 7:  # does not fit: select refuses it (exit 7), the matrix marks it and chooses nothing
            assert sc["memory_fit"] == "DOES NOT FIT" and sc["scenario_choice"] is None, sc["select_command"]
            continue
        assert sel.code == 0, (sc["select_command"], sel.err)
        record = json.loads(sel.out)
        main_choice = record["chosen"]
        assert sc["fingerprint"] == record["fingerprint"], sc["select_command"]
        assert sc["scenario_choice"] == (f"{main_choice['backend']}:{main_choice['variant']}" if main_choice else None)
        row = {c["key"]: c for c in cells[sc["scenario"]]}
        assert len(row) == len(doc["variants"])
        for gi, group in enumerate(record["layer_groups"]):
            chosen = group["chosen"]
            for cand in group["candidates"]:
                key = f"{cand['backend']}:{cand['variant']}"
                mine = row[key]["groups"][gi]
                assert mine["group"] == group["name"]
                assert mine["reasons"] == cand["reasons"], (sc["scenario"], key, group["name"])
                assert (mine["verdict"] != "rejected") == cand["eligible"], (sc["scenario"], key)
                assert mine["chosen"] == (chosen is not None and key == f"{chosen['backend']}:{chosen['variant']}")
                assert mine["expected_us"] == cand["expected_us"]
                if gi == 0:
                    assert row[key]["reasons"] == cand["reasons"]
                    assert row[key]["verdict"] == mine["verdict"]


@pytest.mark.parametrize("engine,software", [("vllm", "vllm-0.33.0"), ("sglang", "sglang-0.5.23")])
def test_engine_gates_agree_with_select(engine: str, software: str):
    """With an engine and its release profile the cells still come from the same decision as select."""
    from moe_oracle.report.matrix import build_matrix
    from moe_oracle.report.scenarios import build_scenarios

    m = build_matrix(build_scenarios(engines=[engine], software=[software], devices=["b200", "h200", "mi355x"], env={}))
    for sc, row in zip(m.scenarios, m.cells, strict=True):
        d = _independent_decision(sc.spec.select_args())
        # "+convert(...)" where the engine converts at load itself (SGLang's SGLANG_DSV4_FP4_DEQUANT)
        assert sc.chosen == (d.main.chosen.key if d.main.chosen and sc.fits else None)
        for cell in row:
            chosen = d.main.chosen
            if chosen is not None and chosen.spec.key == cell.variant.key:
                cand = chosen  # the cell shows the variant as chosen, after its conversion if any
            else:
                cand = next(c for c in d.main.candidates if c.spec.key == cell.variant.key)
            assert _reasons(cell.reasons) == _reasons(cand.reasons)
