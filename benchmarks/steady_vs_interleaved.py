"""What a path costs run alone against what it costs interleaved with the others: ratios from sweeps run with
``fused_vs_nonfused.py --steady``.

The sweeps (and the cost model fit on them) time the paths interleaved: each round replays every path in turn,
so a path runs at the clock its neighbours' power draw left. ``--steady`` also times each path alone, after its
own warm-up, as a server that runs only that path would. Printed per (model, T, path), for each run folder: the
steady median over the interleaved median of the same run, and the SM clock range of the steady replays; then
per path the range of the ratios in each folder, and every (model, T) whose fastest path differs between the two
bases (over all four paths, and over the three an FP8 checkpoint runs). Runs on a CPU::

    python benchmarks/steady_vs_interleaved.py [FOLDER ...]   (default: results/h200/2026-12-03/steady/*)
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

STEADY = Path(__file__).resolve().parent / "results" / "h200" / "2026-12-03" / "steady"
PATHS = ("fused_fp8", "fused_fp4", "nonfused_psum", "nonfused_m_indices")
FP8_CHECKPOINT = ("fused_fp8", "nonfused_psum", "nonfused_m_indices")
Key = tuple[str, int, str]


def read(folder: Path) -> dict[Key, tuple[float, float, tuple[float, float]]]:
    """(model, T, path) -> (interleaved us, steady us, steady clock min/max MHz) for every steady measurement."""
    out = {}
    for f in sorted(folder.glob("fused_vs_nonfused_*.json")):
        run = json.loads(f.read_text())
        model = run["model"].split(" (")[0]
        for row in run["rows"]:
            for p in PATHS:
                st = row.get(p, {}).get("steady")
                if st:
                    clk = st["sm_clock_mhz"] or [0.0]
                    out[(model, row["T"], p)] = (row[p]["us"], st["us"], (min(clk), max(clk)))
    return out


def warm_label(folder: Path) -> str:
    """The folder's name and, from its first steady record, the warm-up and the order."""
    for f in sorted(folder.glob("fused_vs_nonfused_*.json")):
        for row in json.loads(f.read_text())["rows"]:
            st = row.get("fused_fp8", {}).get("steady")
            if st:
                order = "reversed" if st.get("order", 0) == len(PATHS) - 1 else "path order"
                return f"{folder.name} ({st.get('warm_s', 0.5)} s, {order})"
    return folder.name


def best(runs: dict[Key, tuple[float, float, tuple[float, float]]], model: str, t: int, paths, i: int) -> str:
    have = [p for p in paths if (model, t, p) in runs]
    return min(have, key=lambda p: runs[(model, t, p)][i]) if have else ""


def main() -> None:
    folders = [Path(a) for a in sys.argv[1:]] or sorted(p for p in STEADY.iterdir() if p.is_dir())
    runs = {f: read(f) for f in folders}
    labels = {f: warm_label(f) for f in folders}
    keys = sorted({k for r in runs.values() for k in r}, key=lambda k: (k[0], k[1], PATHS.index(k[2])))
    print("steady / interleaved (steady SM clock, MHz) per run:")
    print("| model | T | path | " + " | ".join(labels[f] for f in folders) + " |")
    print("|---|---|---|" + "---|" * len(folders))
    for k in keys:
        cells = []
        for f in folders:
            v = runs[f].get(k)
            cells.append(f"{v[1] / v[0]:.3f} ({v[2][0]:.0f}-{v[2][1]:.0f})" if v else "")
        print(f"| {k[0]} | {k[1]} | {k[2]} | " + " | ".join(cells) + " |")
    print("\nper path, the range of steady / interleaved:")
    for f in folders:
        spans = []
        for p in PATHS:
            r = [v[1] / v[0] for k, v in runs[f].items() if k[2] == p]
            if r:
                spans.append(f"{p} {min(r):.3f}-{max(r):.3f}")
        print(f"  {labels[f]}: " + ", ".join(spans))
    print("\nfastest path, interleaved -> steady, where they differ:")
    for f in folders:
        cells = sorted({(k[0], k[1]) for k in runs[f]})
        flips = []
        for label, paths in (("all paths", PATHS), ("FP8 checkpoint", FP8_CHECKPOINT)):
            for model, t in cells:
                a, b = best(runs[f], model, t, paths, 0), best(runs[f], model, t, paths, 1)
                if a != b:
                    ia, ib = runs[f][(model, t, a)], runs[f][(model, t, b)]
                    flips.append(
                        f"{label}: {model} T {t}: {a} -> {b} (interleaved {ia[0]:.0f} vs {ib[0]:.0f} us, "
                        f"steady {ia[1]:.0f} vs {ib[1]:.0f})"
                    )
        n = len(cells)
        print(f"  {labels[f]}: {len(flips)} of {2 * n} ({n} cells x 2 choices)")
        for line in flips:
            print(f"    {line}")


if __name__ == "__main__":
    main()
