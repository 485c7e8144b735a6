"""`moe-oracle matrix`: verdict kinds, filters, output formats, errors, plug-ins, start-up and speed."""

from __future__ import annotations

import io
import json
import os
import re
import textwrap
import time
from pathlib import Path

import pytest

from moe_oracle.registry import Registry, load_registry
from moe_oracle.report.html import render_html
from moe_oracle.report.labels import cell_mark
from moe_oracle.report.markdown import render_markdown
from moe_oracle.report.matrix import Matrix, Verdict, build_matrix
from moe_oracle.report.scenarios import build_scenarios
from moe_oracle.report.text import render_table
from moe_oracle.rules import ReasonCode, Status, VariantSpec
from moe_oracle.rules import checks as c
from moe_oracle.rules.recipe import ActQuant, Recipe
from tests.cli.runner import cli, imported_modules

HEAVY = ("torch", "numpy", "deep_gemm", "aiter", "mori", "flydsl", "vllm", "sglang", "huggingface_hub", "pynvml")
FLASH = "deepseek-ai/DeepSeek-V4-Flash"


def _acme(unknown: bool) -> VariantSpec:
    """A third-party variant whose one rule fails, or is not verifiable from declarations (``unknown``)."""
    check = c.scenario_predicate(
        ReasonCode.TOKENS_UNSUPPORTED,
        lambda sc: False,
        rule="runtime token counts fit the kernel's buffers",
        message=lambda sc: "depends on the runtime token distribution",
        remediation="Measure with the real workload.",
        sources=("acme docs",),
        unknown=(lambda sc: True) if unknown else None,
    )
    return VariantSpec(
        backend="acme_mega_moe",
        variant="any_gpu",
        target="acme",
        summary="ACME portable mega-MoE",
        weights="any",
        activations="any",
        kernel="acme.mega_moe",
        checks=(check,),
        recipe=Recipe(ActQuant.BF16, ActQuant.BF16),
        priority=500,
    )


def _text(matrix: Matrix) -> str:
    from rich.console import Console

    buf = io.StringIO()
    render_table(matrix, Console(file=buf, width=120, highlight=False, soft_wrap=False, color_system=None))
    return buf.getvalue()


def test_unverifiable_cells_are_eligible_but_marked():
    reg = Registry((*load_registry().variants, _acme(unknown=True)))
    m = build_matrix(build_scenarios(models=[FLASH], devices=["mi300x", "b200"], env={}), registry=reg)
    acme = [cell for cell in m.all_cells() if cell.variant.backend == "acme_mega_moe"]
    assert acme and all(cell.verdict is Verdict.UNVERIFIABLE for cell in acme)
    assert all(cell.code is ReasonCode.TOKENS_UNSUPPORTED for cell in acme)
    assert all(r.status is Status.UNKNOWN for cell in acme for r in cell.reasons)
    # nothing else runs on mi300x, so decide() picks the unverifiable variant, and the matrix says so
    mi300 = [cell for cell in acme if cell.scenario.spec.device.name == "mi300x"]
    assert all(cell.chosen for cell in mi300)
    assert cell_mark(mi300[0]) == "★? TOKENS_UNSUPPORTED"
    b200_dp8 = next(cell for cell in acme if cell.scenario.id == f"{FLASH}|b200|dp8ep8|none|all")
    assert not b200_dp8.chosen and cell_mark(b200_dp8) == "? TOKENS_UNSUPPORTED"
    doc = m.to_json()
    rec = next(r for r in doc["cells"] if r["id"] == b200_dp8.id)
    assert rec["verdict"] == "unverifiable" and rec["reasons"][0]["status"] == "unknown"
    text = _text(m)
    assert "any_gpu" in text and "? TOKENS" in text
    assert "mi300x" in text and "no registered variant runs" not in text


def test_third_party_variant_is_a_row_everywhere():
    reg = Registry((*load_registry().variants, _acme(unknown=False)))
    m = build_matrix(
        build_scenarios(models=[FLASH], devices=["h100", "mi355x"], topologies=["dp8ep8"], env={}), registry=reg
    )
    keys = [v.key for v in m.variants]
    assert keys[-1] == "acme_mega_moe:any_gpu"
    rows = [cell for cell in m.all_cells() if cell.variant.key == "acme_mega_moe:any_gpu"]
    assert len(rows) == 2 and all(cell.verdict is Verdict.REJECTED for cell in rows)
    md = render_markdown(m)
    assert "`any_gpu`" in md and "✗ TOKENS_UNSUPPORTED" in md


def _write_plugin(root: Path) -> None:
    """An installed third-party distribution registering one variant through the entry-point group."""
    (root / "acme_plugin.py").write_text(
        textwrap.dedent(
            """
            from moe_oracle.rules import VariantSpec
            from moe_oracle.rules import checks as c
            from moe_oracle.rules.recipe import ActQuant, Recipe
            from moe_oracle.spec.device import Arch


            def variants():
                arch = c.arch_in((Arch.GFX942,), kernel="ACME", remediation="Use MI300X.", sources=("acme",))
                return (
                    VariantSpec(
                        backend="acme_mega_moe", variant="gfx942_any", target="acme", summary="ACME on MI300",
                        weights="any", activations="any", kernel="acme.mega_moe", checks=(arch,),
                        recipe=Recipe(ActQuant.BF16, ActQuant.BF16),
                    ),
                )
            """
        )
    )
    info = root / "acme_plugin-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: acme-plugin\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[moe_oracle.backends]\nacme = acme_plugin:variants\n")


def test_installed_plugin_appears_in_the_matrix_but_not_in_the_committed_docs(tmp_path: Path):
    site = tmp_path / "site"
    site.mkdir()
    _write_plugin(site)
    env = {"PYTHONPATH": os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")])}
    r = cli("matrix", "--format", "json", "--models", "zai-org/GLM-5-FP8", "--devices", "mi300x", env=env)
    assert r.code == 0, r.err
    doc = json.loads(r.out)
    assert "acme_mega_moe:gfx942_any" in [v["key"] for v in doc["variants"]]
    chosen = {c["scenario"]: c["key"] for c in doc["cells"] if c["chosen"]}
    assert chosen["zai-org/GLM-5-FP8|mi300x|dp8ep8|none|all"] == "acme_mega_moe:gfx942_any"
    table = cli("matrix", "--models", "zai-org/GLM-5-FP8", "--devices", "mi300x", env=env)
    assert table.code == 0 and "gfx942_any" in table.out and "★ chosen" in table.out
    # the docs generator keeps to moe-oracle's own backends, so a plug-in never makes docs/ stale
    out = tmp_path / "docs"
    gen = cli("matrix", "--docs", str(out), env=env)
    assert gen.code == 0, gen.err
    assert "acme" not in (out / "capability-matrix.md").read_text(encoding="utf-8")


def test_filters_select_scenarios():
    scen = build_scenarios(formats=["nvfp4"], devices=["b200", "gb200"], topologies=["dp8ep8"], env={})
    assert {s.model.main_group.weight_format.value for s in scen} == {"nvfp4"}
    assert {s.model.model for s in scen} == {"nvidia/DeepSeek-V4-Flash-NVFP4", "nvidia/GLM-5.1-NVFP4"}
    assert len(scen) == 4
    multi = build_scenarios(
        models=[FLASH], devices=["b200"], engines=["none", "vllm"], software=["all", "none"], env={}
    )
    assert len(multi) == 3 * 2 * 2
    assert {(s.engine.value, s.software.name) for s in multi} == {
        ("none", "all"),
        ("none", "none"),
        ("vllm", "all"),
        ("vllm", "none"),
    }


@pytest.mark.parametrize(
    "args,needle",
    [
        (["--devices", "b201"], "--devices 'b201' is not a known device"),
        (["--devices", "local"], "--devices local"),
        (["--formats", "fp4"], "--formats 'fp4': unknown"),
        (["--topologies", "dp4"], "--topologies 'dp4': unknown"),
        (["--engine", "trt"], "--engine 'trt': unknown"),
        (["--software", "vllm-9"], "--software 'vllm-9' is not a known software profile"),
        (["--models", "nobody/nothing"], "unknown model 'nobody/nothing'"),
        (["--models", "zai-org/GLM-5", "--formats", "mxfp4"], "no selected model's main layer group"),
        (["--docs", "out", "--devices", "b200"], "--docs writes the default matrix"),
    ],
)
def test_bad_flag_values_exit_2_with_one_line(args: list[str], needle: str):
    r = cli("matrix", *args)
    assert r.code == 2, (r.out, r.err)
    assert r.out == ""
    assert r.err.count("\n") == 1 and r.err.startswith("error: ") and needle in r.err, r.err
    assert "Traceback" not in r.err


def test_table_fits_120_columns_and_marks_the_choice():
    r = cli("matrix")
    assert r.code == 0, r.err
    lines = r.out.splitlines()
    assert max(len(line.rstrip()) for line in lines) <= 120
    assert "\x1b[" not in r.out  # not a terminal: no colour codes
    for device in ("h100", "h200", "b200", "b300", "gb200", "mi300x", "mi325x", "mi355x"):
        assert any(line.startswith(f"{device} (") for line in lines), device
    assert "★ chosen" in r.out and "ARCH_UNSUPPORTED" in r.out
    wide = cli("matrix", "--engine", "none,vllm,sglang", "--software", "all,vllm-0.33.0", "--devices", "b200")
    assert wide.code == 0, wide.err
    assert max(len(line.rstrip()) for line in wide.out.splitlines()) <= 120
    assert "…" not in wide.out  # paged per (device, engine, software), never truncated
    assert "b200 (sm100; 8 GPUs/node, NVLink domain 8), engine vllm, software vllm-0.33.0" in wide.out


def test_output_file_and_formats(tmp_path: Path):
    out = tmp_path / "m.txt"
    r = cli("matrix", "--devices", "h200", "--output", str(out))
    assert r.code == 0 and r.out == "" and f"wrote {out}" in r.err
    assert "h200 (sm90" in out.read_text(encoding="utf-8")
    md = cli("matrix", "--format", "markdown", "--devices", "mi355x", "--topologies", "dp8ep8")
    assert md.code == 0, md.err
    assert md.out.startswith("<!-- Generated by moe-oracle: do not edit; regenerate with `moe-oracle matrix ")
    assert "--devices mi355x --topologies dp8ep8 --format markdown" in md.out.splitlines()[0]
    assert "## mi355x (gfx950; 8 GPUs/node, XGMI domain 8)" in md.out and "## Legend" in md.out
    assert "| deepseek-ai/DeepSeek-V4-Flash | mxfp4 | dp8ep8 | ★ chosen |" in md.out


def test_json_records_carry_every_reason():
    r = cli("matrix", "--format", "json", "--devices", "b200,mi355x", "--topologies", "dp8ep8,tp8")
    assert r.code == 0, r.err
    doc = json.loads(r.out)
    assert doc["schema"] == 1 and len(doc["cells"]) == len(doc["scenarios"]) * len(doc["variants"])
    fields = {"model", "device", "arch", "topology", "engine", "software", "weight_format", "tp", "dp", "ep"}
    for rec in doc["cells"]:
        assert fields <= rec.keys()
        assert rec["verdict"] in ("supported", "unverifiable", "rejected")
        assert isinstance(rec["chosen"], bool)
        assert rec["chosen"] == (rec["scenario_choice"] == rec["key"])
        for reason in rec["reasons"]:
            assert set(reason) == {"code", "status", "message", "remediation", "rule", "sources"}
        if rec["verdict"] == "rejected":
            assert rec["code"] == next(x["code"] for x in rec["reasons"] if x["status"] == "fail")
        assert rec["groups"][0]["reasons"] == rec["reasons"]
    nvfp4 = [x for x in doc["cells"] if x["model"] == "nvidia/DeepSeek-V4-Flash-NVFP4" and x["device"] == "b200"]
    mtp = {x["key"]: x["groups"][-1] for x in nvfp4 if x["topology"] == "dp8ep8"}
    assert mtp["deep_gemm_mega_moe:sm100_fp8xfp4"]["weight_format"] == "mxfp4"
    assert mtp["deep_gemm_mega_moe:sm100_fp8xfp4"]["chosen"]  # per-group verdicts: the MXFP4 MTP layer


def test_html_is_one_self_contained_file(default_matrix: Matrix):
    page = render_html(default_matrix)
    assert page.startswith("<!doctype html>")
    assert not re.search(r"<(link|iframe|img|object|embed)\b", page, re.I)
    assert not re.search(r"\bsrc\s*=", page, re.I)
    assert "@import" not in page and "url(" not in page and "@font-face" not in page
    data = page.split('<script type="application/json" id="matrix-data">', 1)[1].split("</script>", 1)[0]
    blob = json.loads(data)
    cells = default_matrix.all_cells()
    assert len(blob["cells"]) == len(cells)
    for rec, cell in zip(blob["cells"], cells, strict=True):
        # "m": eligible, but the deployment does not fit in memory (#32: never marked supported)
        assert rec[2] == ("m" if cell.no_fit else cell.verdict.value[0]) and rec[3] == int(cell.chosen)
        got = [blob["reasons"][i] for i in rec[5]]
        assert [(g[0], g[2]) for g in got] == [(r.code.value, r.message) for r in cell.reasons]
    assert len(page) < 600_000


def test_matrix_start_up_imports_no_kernel_library():
    r = cli("matrix", importtime=True)
    assert r.code == 0, r.err
    mods = imported_modules(r.err)
    assert "moe_oracle.report.matrix" in mods
    assert not [m for m in mods if m.split(".")[0] in HEAVY]


def test_default_matrix_in_every_format_takes_a_few_seconds():
    start = time.perf_counter()
    m = build_matrix(build_scenarios(env={}))
    json.dumps(m.to_json())
    render_html(m)
    render_markdown(m)
    _text(m)
    elapsed = time.perf_counter() - start
    assert elapsed < 5.0, f"default matrix took {elapsed:.1f} s"


def test_cli_default_run_is_fast():
    start = time.perf_counter()
    r = cli("matrix")
    elapsed = time.perf_counter() - start
    assert r.code == 0, r.err
    assert elapsed < 8.0, f"moe-oracle matrix took {elapsed:.1f} s"


def test_help_lists_the_options():
    r = cli("matrix", "--help")
    assert r.code == 0 and "--docs" in r.out and "--format" in r.out
