"""Open the HTML matrix in a real headless Chromium: no script errors, sorting, filtering, the detail
panel, and a screenshot. Skipped cleanly when no Chromium is installed (``apt-get install chromium``).

Set ``MOE_ORACLE_SCREENSHOT_DIR`` to keep the screenshots for a look.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from moe_oracle.report.docs import docs_matrix
from moe_oracle.report.html import render_html
from moe_oracle.report.matrix import Matrix, Verdict, build_matrix
from moe_oracle.report.scenarios import build_scenarios

pytestmark = pytest.mark.slow

BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "chrome")


def _chromium() -> str:
    for name in BROWSERS:
        found = shutil.which(name)
        if found:
            return found
    pytest.skip(f"no Chromium binary on PATH (looked for {', '.join(BROWSERS)}); apt-get install chromium")


def _run(browser: str, tmp: Path, url: str, *extra: str) -> subprocess.CompletedProcess[str]:
    profile = tmp / f"profile-{len(list(tmp.iterdir()))}"
    cmd = [
        browser,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        f"--user-data-dir={profile}",
        "--enable-logging=stderr",
        "--v=0",
        *extra,
        url,
    ]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    errors = [line for line in p.stderr.splitlines() if ":CONSOLE" in line and ("Uncaught" in line or "Error" in line)]
    assert not errors, "JavaScript errors:\n" + "\n".join(errors)
    assert "Uncaught" not in p.stderr
    return p


def _body(dom: str) -> dict[str, str]:
    tag = re.search(r"<body([^>]*)>", dom)
    assert tag, dom[:500]
    return dict(re.findall(r'([\w-]+)="([^"]*)"', tag.group(1)))


def _visible_rows(dom: str) -> list[int]:
    """Cell indices of the rows not hidden, in document (sorted) order."""
    tbody = dom.split('<table class="matrix" id="matrix">', 1)[1].split("</tbody>", 1)[0]
    tbody = re.sub(r'title="[^"]*"', "", tbody)  # titles hold free text
    rows = re.findall(r'<tr data-i="(\d+)"([^>]*)>', tbody)
    return [int(i) for i, attrs in rows if not re.search(r'\shidden(=""|\s|$)', attrs)]


def _write(tmp: Path, matrix: Matrix) -> str:
    page = tmp / "matrix.html"
    page.write_text(render_html(matrix), encoding="utf-8")
    return page.resolve().as_uri()


def _keep(png: Path) -> None:
    where = os.environ.get("MOE_ORACLE_SCREENSHOT_DIR")
    if where:
        Path(where).mkdir(parents=True, exist_ok=True)
        shutil.copy(png, Path(where) / png.name)


def test_html_matrix_loads_sorts_filters_and_opens_details(tmp_path: Path):
    browser = _chromium()
    matrix = docs_matrix()
    url = _write(tmp_path, matrix)
    cells = matrix.all_cells()
    b200 = [n for n, c in enumerate(cells) if c.scenario.spec.device.name == "b200"]
    shown_b200 = [n for n in b200 if not cells[n].other_arch]
    pick = next(n for n in b200 if cells[n].verdict is Verdict.REJECTED and not cells[n].other_arch)

    # plain load: every cell rendered, ARCH_UNSUPPORTED-first cells hidden by default
    dom = _run(browser, tmp_path, url, "--dump-dom").stdout
    body = _body(dom)
    assert body.get("data-ready") == "1" and body.get("data-sorted") == "order:asc"
    assert int(body["data-visible"]) == sum(not c.other_arch for c in cells)
    assert dom.count('<tr data-i="') == len(cells)

    # state from the fragment: filter to b200, sort by verdict (chosen first), open one cell's details
    dom = _run(browser, tmp_path, f"{url}#device=b200&sort=verdict&cell={pick}", "--dump-dom").stdout
    body = _body(dom)
    assert body.get("data-ready") == "1"
    assert body.get("data-sorted") == "verdict:asc"
    assert int(body["data-visible"]) == len(shown_b200)
    visible = _visible_rows(dom)
    assert sorted(visible) == sorted(shown_b200)
    n_chosen = sum(cells[n].chosen for n in shown_b200)
    assert n_chosen > 0 and all(cells[n].chosen for n in visible[:n_chosen])
    assert body.get("data-detail") == str(pick)
    panel = dom.split('<aside id="detail"', 1)[1].split("</aside>", 1)[0]
    assert cells[pick].variant.key in panel
    assert cells[pick].failures[0].code.value in panel and "Fix: " in panel
    assert cells[pick].scenario.spec.select_command() in panel.replace("&amp;", "&")

    # free-text filter and the verdict select together
    dom = _run(browser, tmp_path, f"{url}#q=gb200%20ep16x2&verdict=chosen&arch=all", "--dump-dom").stdout
    want = [
        n
        for n, c in enumerate(cells)
        if c.chosen and c.scenario.spec.device.name == "gb200" and c.scenario.spec.topology.name == "ep16x2"
    ]
    assert want and sorted(_visible_rows(dom)) == want

    png = tmp_path / "capability-matrix.png"
    _run(
        browser,
        tmp_path,
        f"{url}#device=b200&sort=verdict&cell={pick}",
        f"--screenshot={png}",
        "--window-size=1400,900",
    )
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 20_000
    _keep(png)


def test_html_with_several_engines_and_profiles_has_no_script_errors(tmp_path: Path):
    browser = _chromium()
    matrix = build_matrix(
        build_scenarios(devices=["b200", "mi355x"], engines=["none", "vllm"], software=["all", "vllm-0.33.0"], env={})
    )
    url = _write(tmp_path, matrix)
    dom = _run(browser, tmp_path, f"{url}#engine=vllm&software=vllm-0.33.0&sort=reason&dir=desc", "--dump-dom").stdout
    body = _body(dom)
    assert body.get("data-ready") == "1" and body.get("data-sorted") == "reason:desc"
    want = [
        n
        for n, c in enumerate(matrix.all_cells())
        if not c.other_arch
        and c.scenario.spec.engine.value == "vllm"
        and c.scenario.spec.software.name == "vllm-0.33.0"
    ]
    assert sorted(_visible_rows(dom)) == want
    png = tmp_path / "capability-matrix-engines.png"
    _run(browser, tmp_path, f"{url}#engine=vllm", f"--screenshot={png}", "--window-size=1400,900")
    assert png.stat().st_size > 20_000
    _keep(png)
