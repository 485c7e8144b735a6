"""How fast the oracle decides, against its targets, measured side by side in one run.

Targets (issue: capability oracle): deciding every layer group of a model against every variant
takes < 2 ms in process; ``moe-oracle select ... --json`` completes in < 0.5 s wall. Prints a table
of ratios (measured / target) and the import-time breakdown of the CLI. Run:

    python benchmarks/oracle_speed.py [--repeat 200] [--runs 7]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time

from moe_oracle.decide.advisories import load_advisories
from moe_oracle.decide.selection import decide
from moe_oracle.inputs import DeploymentFlags, build_deployment, resolve_software
from moe_oracle.model.loader import list_presets
from moe_oracle.model.resolve import resolve_model
from moe_oracle.registry import load_registry

DECIDE_TARGET_MS = 2.0
CLI_TARGET_S = 0.5
SCENARIOS = (("b200", 8, 8), ("h200", 8, 8), ("mi355x", 8, 8), ("gb200", 64, 64))


def bench_decide(repeat: int) -> list[tuple[str, str, int, float]]:
    advisories = load_advisories()
    n_variants = len(load_registry().variants)
    rows = []
    for model_id in list_presets():
        desc = resolve_model(model_id)
        for device, dp, ep in SCENARIOS:
            nodes = 16 if device == "gb200" else 1
            dep, _ = build_deployment(DeploymentFlags(device=device, nodes=nodes, dp=dp, ep=ep))
            sw, _ = resolve_software(None, device)
            decide(desc, dep, sw, advisories=advisories)  # warm caches (registry, calibrations)
            t0 = time.perf_counter()
            for _ in range(repeat):
                decide(desc, dep, sw, advisories=advisories)
            ms = (time.perf_counter() - t0) / repeat * 1e3
            rows.append((model_id, f"{device} dp{dp} ep{ep}", len(desc.layer_groups) * n_variants, ms))
    return rows


def bench_cli(runs: int) -> float:
    cmd = [
        sys.executable,
        "-m",
        "moe_oracle",
        "select",
        "deepseek-ai/DeepSeek-V4-Flash",
        "--device",
        "b200",
        "--dp",
        "8",
        "--ep",
        "8",
        "--json",
    ]
    subprocess.run(cmd, capture_output=True, check=True)  # warm the bytecode cache
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        subprocess.run(cmd, capture_output=True, check=True)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def import_breakdown(top: int = 12) -> list[tuple[str, float]]:
    cmd = [
        sys.executable,
        "-X",
        "importtime",
        "-m",
        "moe_oracle",
        "select",
        "deepseek-ai/DeepSeek-V4-Flash",
        "--device",
        "b200",
        "--dp",
        "8",
        "--ep",
        "8",
        "--json",
    ]
    err = subprocess.run(cmd, capture_output=True, text=True, check=True).stderr
    rows = []
    for line in err.splitlines():
        parts = line.removeprefix("import time:").split("|")
        if not line.startswith("import time:") or len(parts) != 3:
            continue
        try:
            rows.append((parts[2].strip(), int(parts[1]) / 1e3))
        except ValueError:  # the header line
            continue
    tops: dict[str, float] = {}
    for name, ms in rows:
        root = name.split(".")[0]  # cumulative time of the outermost import of each package
        tops[root] = max(tops.get(root, 0.0), ms)
    return sorted(tops.items(), key=lambda kv: -kv[1])[:top]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=200)
    ap.add_argument("--runs", type=int, default=7)
    args = ap.parse_args()
    rows = bench_decide(args.repeat)
    print(f"{'model':40} {'scenario':18} {'cand.':>5} {'ms/decide':>10} {'/target':>8}")
    for model, scen, cands, ms in rows:
        print(f"{model:40} {scen:18} {cands:5d} {ms:10.3f} {ms / DECIDE_TARGET_MS:8.2f}")
    worst = max(r[3] for r in rows)
    cli = bench_cli(args.runs)
    print()
    print(f"{'metric':44} {'measured':>10} {'target':>8} {'ratio':>6}")
    for label, value, target in (
        ("decide(), slowest model x scenario (ms)", worst, DECIDE_TARGET_MS),
        ("select --json wall, median (s)", cli, CLI_TARGET_S),
    ):
        print(f"{label:44} {value:10.3f} {target:8.1f} {value / target:6.2f}")
    print()
    print("import time of `moe-oracle select ... --json` by top-level package (cumulative ms):")
    for name, ms in import_breakdown():
        print(f"  {name:28} {ms:8.1f}")


if __name__ == "__main__":
    main()
