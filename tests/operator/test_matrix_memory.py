"""#32 item 3: every matrix verdict counts memory; SM100-only variants leave SM90 tables; rules read as sentences."""

from __future__ import annotations

import json

from tests.cli.runner import cli


def test_markdown_marks_a_deployment_that_does_not_fit_and_says_so():
    r = cli("matrix", "--format", "markdown", "--devices", "h100")
    assert r.code == 0, r.err
    rows = [line for line in r.out.splitlines() if line.startswith("| deepseek-ai/DeepSeek-V4-Pro | mxfp4 | dp8ep8")]
    assert rows and "✓" not in rows[0] and "⊘ NO FIT" in rows[0] and "GiB/rank" in rows[0]
    glm = [line for line in r.out.splitlines() if line.startswith("| zai-org/GLM-5-FP8 | fp8_block | dp8ep8")]
    assert "⊘ NO FIT" in glm[0]
    assert "Every verdict counts memory" in r.out and "Does not fit in memory" in r.out
    table = r.out.split("## h100", 1)[1].split("\n\n", 2)[1]
    assert "sm100" not in table.splitlines()[0]  # no SM100-only column on an SM90 table


def test_json_cells_agree_with_the_fit():
    r = cli("matrix", "--format", "json", "--devices", "b200", "--models", "zai-org/GLM-5")
    assert r.code == 0, r.err
    cells = json.loads(r.out)["cells"]
    for cell in cells:
        if cell["memory_fit"] == "DOES NOT FIT":
            assert cell["fits_in_memory"] is False or cell["verdict"] == "rejected"
            assert not cell["chosen"]


def test_engine_rules_read_as_sentences():
    from moe_oracle.releases import engine_profile
    from moe_oracle.rules import Engine

    for engine in (Engine.VLLM, Engine.SGLANG):
        profile = engine_profile(engine)
        assert profile is not None and profile.supports
        for support in profile.supports:
            assert "*" not in support.rule_text()


def test_html_carries_cost_curves_with_their_basis():
    """#32 item 11: the HTML report charts expected cost against tokens per rank for each eligible path (inline
    SVG drawn from the page's own data, no network), each curve with its basis."""
    import re

    r = cli("matrix", "--format", "html", "--devices", "h200", "--models", "deepseek-ai/DeepSeek-V4-Flash")
    assert r.code == 0, r.err
    data = json.loads(re.search(r'<script type="application/json" id="matrix-data">\n(.*?)\n</script>', r.out, re.S)[1])
    curves = [c for sc in data["scenarios"] for c in sc["curves"]]
    assert curves and all(c["basis"] and len(c["t"]) == len(c["us"]) for c in curves)
    assert {c["path"] for c in curves} >= {"deep_gemm_mega_moe:sm90_fp8xfp4"}
    assert "costChart" in r.out and "http://www.w3.org/2000/svg" in r.out and "<script src" not in r.out
